"""Chapter 8's checkpoints (``ch08_capstone``): the capstone's sentiment classifier and its
three cheaper-attention variants, as ``make train`` recipes.

The data, the model and the evaluation are chapter 8's lab
:mod:`course_lib.labs.sentiment`; this module fixes the configuration the
chapter uses and trains it with :func:`course_lib.training.train` through
:func:`fit`, which draws the same mini-batches as
:func:`~course_lib.labs.sentiment.train_classifier` and can also print its
progress lines as bands around a checkpoint's curve (the notebook's live run).

Recipes (``python tools/train.py --list``):

- ``ch08-sentiment``: the small BERT classifier (full attention);
- ``ch08-sentiment-local``, ``-strided``, ``-linear``: the same classifier, same
  initial weights and batches, with its attention swapped by
  :func:`~course_lib.models.efficient_attention.swap_attention` before training.

Every metric is measured on the held-out split (products never seen in
training), with the model in float64 (:func:`evaluate`).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch.nn import functional as F

from .._validate import check_choice
from ..models.efficient_attention import swap_attention
from ..repro import recipe
from ..training import logged_curve, train
from .sentiment import SentimentData, build_classifier, load_sentiment, predict_proba

__all__ = ["MAX_LEN", "MODEL", "TRAINING", "LOG_EVERY", "VARIANTS", "build", "fit", "evaluate",
           "checkpoint_name", "sentiment_full", "sentiment_local", "sentiment_strided", "sentiment_linear"]

MAX_LEN = 24
"""Ids per text, ``<cls>`` and ``<sep>`` included."""
MODEL = dict(d_model=32, num_heads=4, num_layers=2, seed=0)
""":func:`~course_lib.labs.sentiment.build_classifier`'s arguments (``d_ff = 4 d_model``, dropout 0.1)."""
TRAINING = dict(steps=200, batch_size=32, lr=2e-3, seed=0)
"""AdamW (weight decay 0.01), random mini-batches drawn with ``seed``, no clipping."""
LOG_EVERY = 50
"""A progress line (and a point of the stored curve) every this many steps."""
VARIANTS = {"full": {}, "local": dict(kind="local", window=2),
            "strided": dict(kind="strided", window=1, stride=4), "linear": dict(kind="linear")}
"""The attention of each recipe (:func:`~course_lib.models.efficient_attention.swap_attention`)."""


def checkpoint_name(variant: str = "full") -> str:
    """``ch08-sentiment`` for full attention, else ``ch08-sentiment-<variant>``."""
    check_choice(variant, "variant", tuple(VARIANTS))
    return "ch08-sentiment" if variant == "full" else f"ch08-sentiment-{variant}"


def build(vocab_size: int, variant: str = "full"):
    """The chapter's classifier with random weights (:data:`MODEL`), its attention swapped for ``variant``."""
    check_choice(variant, "variant", tuple(VARIANTS))
    model = build_classifier(vocab_size, max_len=MAX_LEN, **MODEL)
    return swap_attention(model, **VARIANTS[variant]) if VARIANTS[variant] else model


def fit(model, data: SentimentData, *, log_every: int | None = None, reference: dict | None = None,
        rel: float = 0.25, log_decimals: int = 3, name: str = "") -> list[float]:
    """Train ``model`` on ``data``'s training split with :data:`TRAINING` (chapter 8).

    The same mini-batches, loss and optimiser as
    :func:`course_lib.labs.sentiment.train_classifier`; in addition a progress
    line every ``log_every`` steps, printed as a band around ``reference``
    (a checkpoint's curve) when it is given (:func:`course_lib.training.train`),
    with ``log_decimals`` decimals.

    Returns:
        The training loss of every step. The model is left in eval mode.
    """
    X, M, y = data.X_train, data.M_train, data.y_train
    g = torch.Generator().manual_seed(TRAINING["seed"])
    batches = [torch.randint(len(X), (TRAINING["batch_size"],), generator=g) for _ in range(TRAINING["steps"])]

    def loss_fn(model, b):
        return F.cross_entropy(model(X[b], attention_mask=M[b]), y[b])

    return train(model, batches.__getitem__, loss_fn, TRAINING["steps"], TRAINING["lr"], optimizer="adamw",
                 weight_decay=0.01, seed=None, clip=None, log_every=log_every, reference=reference, rel=rel,
                 log_decimals=log_decimals, name=name)


def evaluate(model, data: SentimentData) -> dict:
    """Held-out metrics of ``model``, evaluated on a float64 copy: the same on every CPU (chapter 8).

    Returns:
        ``{"accuracy", "accuracy_en", "accuracy_zh", "pred" (N,) array, "margin" (N,) array}``;
        the margin is ``|P(positive) - P(negative)|`` of each held-out sentence.
    """
    model64 = copy.deepcopy(model).to(torch.float64)
    probs = predict_proba(model64, data.X_test, data.M_test).numpy()
    pred, y = probs.argmax(-1), data.y_test.numpy()
    lang = np.array([r["lang"] for r in data.test])
    out = {"accuracy": float((pred == y).mean())}
    for code in ("en", "zh"):
        out[f"accuracy_{code}"] = float((pred[lang == code] == y[lang == code]).mean())
    out["pred"], out["margin"] = pred, np.abs(probs[:, 1] - probs[:, 0])
    return out


def _recipe(variant: str) -> dict:
    data = load_sentiment(max_len=MAX_LEN)
    model = build(len(data.vocab), variant)
    losses = fit(model, data)
    metrics = {k: v for k, v in evaluate(model, data).items() if k.startswith("accuracy")}
    return {"model": model, "metrics": metrics, "curve": logged_curve(losses, LOG_EVERY),
            "config": {"variant": variant, **VARIANTS[variant], **MODEL, **TRAINING, "max_len": MAX_LEN,
                       "vocab_size": len(data.vocab), "log_every": LOG_EVERY}}


_DATA = ("the labelled training sentences of sentiment_bilingual.tsv; evaluated on its test split (unseen "
         "products) · sentiment_bilingual.tsv 的训练句；在测试集（未见过的产品）上评估")


@recipe("ch08-sentiment", chapter="ch08", tolerance={"accuracy": 0.03}, data=_DATA)
def sentiment_full() -> dict:
    """Chapter 8's small BERT sentiment classifier, full attention."""
    return _recipe("full")


@recipe("ch08-sentiment-local", chapter="ch08", tolerance={"accuracy": 0.03}, data=_DATA)
def sentiment_local() -> dict:
    """The classifier with local-window attention (w = 2), same initial weights and batches."""
    return _recipe("local")


@recipe("ch08-sentiment-strided", chapter="ch08", tolerance={"accuracy": 0.03}, data=_DATA)
def sentiment_strided() -> dict:
    """The classifier with strided sparse attention (w = 1, s = 4), same initial weights and batches."""
    return _recipe("strided")


@recipe("ch08-sentiment-linear", chapter="ch08", tolerance={"accuracy": 0.03}, data=_DATA)
def sentiment_linear() -> dict:
    """The classifier with linear (kernel) attention, same initial weights and batches."""
    return _recipe("linear")
