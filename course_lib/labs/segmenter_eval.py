"""Chapter 7's word segmenter, its scores: word precision, recall and F1, OOV recall, wrong lengths.

Chapter 7 (``ch07_bert``, label ``ch07-segmenter``) puts three kinds of
segmenter side by side on the same held-out People's Daily clauses: dictionary
maximum matching (:mod:`course_lib.analysis.maxmatch`), chapter 5's
encoder-decoder (:func:`encoder_decoder_metrics`) and the encoder-only tagger
(:mod:`course_lib.labs.segmenter`). :func:`segmentation_metrics` scores any of
them from its words, with chapter 5's :func:`course_lib.labs.tagging_eval.score`
(tag accuracy, and the same word F1) and
:func:`course_lib.labs.tagging_eval.word_recall` (out-of-vocabulary recall).
"""

from __future__ import annotations

import torch

from .. import repro
from .tagging_data import TAGS, _check_words, build_vocabs, load_split, tags_to_words, word_tags
from .tagging_eval import _spans, score, word_recall

__all__ = ["word_scores", "segmentation_metrics", "encoder_decoder_metrics", "ENCODER_DECODER"]


def word_scores(predicted_words, gold_clauses) -> dict[str, float]:
    """Word precision, recall and F1 of segmentations against the gold ones (chapter 7).

    A predicted word counts when its span (start, end) is a gold word's; the
    F1 equals :func:`course_lib.labs.tagging_eval.score`'s ``word_f1``.
    """
    if len(predicted_words) != len(gold_clauses) or not gold_clauses:
        raise ValueError(f"predicted_words and gold_clauses must be equally long and non-empty, got "
                         f"{len(predicted_words)} and {len(gold_clauses)}")
    n_pred = n_gold = n_both = 0
    for i, (pred, gold) in enumerate(zip(predicted_words, gold_clauses)):
        if "".join(_check_words(pred, f"predicted_words[{i}]")) != "".join(gold):
            raise ValueError(f"predicted_words[{i}] must join to the gold clause {''.join(gold)!r}")
        p, g = _spans(pred), _spans(gold)
        n_pred, n_gold, n_both = n_pred + len(p), n_gold + len(g), n_both + len(p & g)
    precision, recall = n_both / n_pred, n_both / n_gold
    return {"word_precision": precision, "word_recall": recall,
            "word_f1": 2 * precision * recall / (precision + recall)}


def segmentation_metrics(predicted_words, gold_clauses, known_words) -> dict[str, float]:
    """Tag accuracy, word precision/recall/F1 and out-of-vocabulary recall of segmentations (chapter 7).

    Args:
        predicted_words: one segmentation (list of words) per clause; each must
            join to its clause's characters.
        gold_clauses: the clauses (lists of words).
        known_words: the words of the training clauses; a gold word not among
            them is out of vocabulary.
    """
    out = word_scores(predicted_words, gold_clauses)
    tags = [word_tags(w) for w in predicted_words]
    if not isinstance(known_words, (set, frozenset)):
        raise TypeError(f"known_words must be a set of words, got {type(known_words).__name__}")
    found, total = word_recall(tags, gold_clauses, known_words)["out_of_vocabulary"]
    return {"tag_accuracy": score(tags, gold_clauses)["tag_accuracy"], **out, "oov_recall": found / total}


def encoder_decoder_metrics(clauses, known_words, name: str = "ch05-segment-smooth") -> dict[str, float]:
    """Chapter 5's encoder-decoder segmenter (checkpoint ``name``), greedy, scored as :func:`evaluate` scores the tagger.

    Its outputs of the wrong length are cut or padded with ``S`` for the word
    metrics, as :func:`course_lib.labs.tagging_eval.score` does; ``wrong_length``
    counts them. Decoding takes seconds, so chapter 7 prints :data:`ENCODER_DECODER`,
    which ``tests/unit/test_segmenter.py`` recomputes with this function.
    """
    from .tagging import make_segmenter, predict_tags   # chapter 5's lab
    src_vocab, tgt_vocab = build_vocabs(load_split()[0])
    model = make_segmenter(len(src_vocab))
    repro.load_checkpoint(name, model, dtype=torch.float64)
    predicted = predict_tags(model, clauses, src_vocab, tgt_vocab)
    words = []
    for tags, c in zip(predicted, clauses):
        chars = "".join(c)
        fixed = ([t if t in TAGS else "S" for t in tags] + ["S"] * len(chars))[:len(chars)]
        words.append(tags_to_words(chars, fixed))
    out = segmentation_metrics(words, clauses, known_words)
    out["tag_accuracy"] = score(predicted, clauses)["tag_accuracy"]
    out["wrong_length"] = sum(len(t) != len("".join(c)) for t, c in zip(predicted, clauses))
    return {k: float(v) for k, v in out.items()}


#: :func:`encoder_decoder_metrics` of ``ch05-segment-smooth`` on the recipe's held-out clauses.
ENCODER_DECODER = {"tag_accuracy": 0.7734650226472068, "word_precision": 0.7356766634419004,
                   "word_recall": 0.7427021161150299, "word_f1": 0.7391726968355113,
                   "oov_recall": 0.5374800637958532, "wrong_length": 90.0}
