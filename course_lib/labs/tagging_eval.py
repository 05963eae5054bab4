"""Chapter 5's real-data lab, its scores: the segmentation baseline and metrics (People's Daily 1998).

Chapter 5 (*The full Transformer*, ``ch05_transformer``) segments clauses
with BMES tags (:mod:`course_lib.labs.tagging_data`). The baseline
(:func:`fit_baseline`) gives every character the tag it has most often in the
training clauses. Metrics (:func:`score`): tag accuracy, word F1 (a predicted
word counts if its span matches a gold word exactly), and the fraction of
clauses segmented exactly right; :func:`word_recall` splits the words found by
whether training showed them. The model's decoding and held-out evaluation are
in :mod:`course_lib.labs.tagging`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Sequence

from .tagging_data import TAGS, _check_words, tags_to_words, word_tags

__all__ = ["fit_baseline", "baseline_tags", "score", "word_recall"]


def fit_baseline(train_clauses) -> dict:
    """The baseline: each character's most frequent tag in ``train_clauses`` (ties: the order of :data:`TAGS`).

    Returns ``{"per_char": {char: tag}, "default": tag}``; ``default``, the
    most frequent tag overall, is used for characters never seen.
    """
    counts, overall = defaultdict(Counter), Counter()
    for c in train_clauses:
        for ch, t in zip("".join(_check_words(c, "a clause")), word_tags(c)):
            counts[ch][t] += 1
            overall[t] += 1
    if not overall:
        raise ValueError("train_clauses must hold at least one clause")

    def best(counter):
        return max(TAGS, key=lambda t: (counter[t], -TAGS.index(t)))
    return {"per_char": {ch: best(c) for ch, c in counts.items()}, "default": best(overall)}


def baseline_tags(baseline: dict, chars: str) -> list[str]:
    """The baseline's tags for the characters ``chars``."""
    if not isinstance(chars, str) or not chars:
        raise TypeError(f"chars must be a non-empty string, got {chars!r}")
    return [baseline["per_char"].get(ch, baseline["default"]) for ch in chars]

def score(predicted: Sequence[Sequence[str]], gold_clauses) -> dict[str, float]:
    """Tag accuracy, word F1 and exact match of predicted tags against the gold segmentation (chapter 5).

    A prediction of the wrong length counts its missing or extra tags as
    wrong; for the words it is cut or padded with ``"S"`` to the clause's length.
    """
    if len(predicted) != len(gold_clauses) or not gold_clauses:
        raise ValueError(f"predicted and gold_clauses must be equally long and non-empty, got "
                         f"{len(predicted)} and {len(gold_clauses)}")
    right = total = exact = n_pred = n_gold = n_both = 0
    for pred, gold in zip(predicted, gold_clauses):
        chars, tags = "".join(gold), word_tags(gold)
        pred = list(pred)
        right += sum(p == t for p, t in zip(pred, tags))
        total += len(tags)
        exact += pred == tags
        fixed = [p if p in TAGS else "S" for p in pred[:len(chars)]] + ["S"] * (len(chars) - len(pred))
        spans_p, spans_g = _spans(tags_to_words(chars, fixed)), _spans(gold)
        n_pred, n_gold, n_both = n_pred + len(spans_p), n_gold + len(spans_g), n_both + len(spans_p & spans_g)
    precision, recall = n_both / n_pred, n_both / n_gold
    return {"tag_accuracy": right / total, "word_f1": 2 * precision * recall / (precision + recall),
            "exact_clauses": exact / len(gold_clauses)}


def word_recall(predicted: Sequence[Sequence[str]], gold_clauses, known_words) -> dict[str, tuple[int, int]]:
    """How many gold words a segmentation finds, split by whether training ever showed the word (chapter 5).

    Args:
        predicted: tags per clause (as :func:`predict_tags` returns them).
        gold_clauses: the clauses (lists of words).
        known_words: the words of the training clauses (a set).

    Returns:
        ``{"in_vocabulary": (found, total), "out_of_vocabulary": (found, total)}``:
        a gold word is found when a predicted word has exactly its span.
    """
    if len(predicted) != len(gold_clauses) or not gold_clauses:
        raise ValueError(f"predicted and gold_clauses must be equally long and non-empty, got "
                         f"{len(predicted)} and {len(gold_clauses)}")
    if not isinstance(known_words, (set, frozenset)):
        raise TypeError(f"known_words must be a set of words, got {type(known_words).__name__}")
    counts = {"in_vocabulary": [0, 0], "out_of_vocabulary": [0, 0]}
    for pred, gold in zip(predicted, gold_clauses):
        chars = "".join(gold)
        fixed = [p if p in TAGS else "S" for p in list(pred)[:len(chars)]] + ["S"] * (len(chars) - len(pred))
        found, start = _spans(tags_to_words(chars, fixed)), 0
        for w in gold:
            c = counts["in_vocabulary" if w in known_words else "out_of_vocabulary"]
            c[0] += (start, start + len(w)) in found
            c[1] += 1
            start += len(w)
    return {k: (v[0], v[1]) for k, v in counts.items()}


def _spans(words):
    out, start = set(), 0
    for w in words:
        out.add((start, start + len(w)))
        start += len(w)
    return out
