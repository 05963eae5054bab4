"""Chapters 7 and 8's small sentiment lab: the bilingual toy set and the small BERT classifier.

Chapter 10 (``ch10_capstone``) builds its classifiers with :func:`build_classifier`
and trains them on real reviews (:mod:`course_lib.labs.capstone`); chapter 7's
BERT (:mod:`course_lib.labs.bert_lab`) and ``tools/bench_serving.py`` read the toy set below.

The toy data are chapter 7's bilingual sentences (``data/sentiment_bilingual.tsv``,
fixed train/test split); the tokenizer is :func:`course_lib.text.tokenize`
(English words, Chinese characters). The model is a small
:class:`~course_lib.models.BertClassifier` trained from scratch::

    text -> tokenize -> Vocab.encode_batch (pad/truncate to max_len)   ids, mask (B, max_len)
         -> BERT encoder (num_layers post-LN layers)                   h (B, max_len, d_model)
         -> pooler + linear on the [CLS] vector                        logits (B, 2)
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .._validate import check_positive_int
from ..models import BERT, BertClassifier
from ..data import data_path
from ..text import BERT_SPECIALS, Vocab
from ..training import train

__all__ = ["LABELS", "SentimentData", "load_sentiment", "build_classifier",
           "train_classifier", "predict_proba", "accuracy"]

LABELS = ("negative · 负面", "positive · 正面")
"""Class names by label id (0 = negative, 1 = positive)."""


@dataclass
class SentimentData:
    """The sentiment set, encoded (chapter 10).

    Attributes:
        train, test: the rows (dicts with ``split lang label text``).
        vocab: :class:`~course_lib.text.Vocab` built on the training texts.
        max_len: every text is padded or truncated to this many ids.
        X_train, M_train, X_test, M_test: int64 tensors ``(N, max_len)``, ids and masks.
        y_train, y_test: int64 label tensors ``(N,)``.
    """

    train: list
    test: list
    vocab: Vocab
    max_len: int
    X_train: torch.Tensor
    M_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    M_test: torch.Tensor
    y_test: torch.Tensor


def load_sentiment(max_len: int = 24, min_freq: int = 1, path=None) -> SentimentData:
    """Read, tokenize and encode the bilingual sentiment set (chapter 10).

    Args:
        max_len: length of every encoded row, ``<cls>`` and ``<sep>`` included.
        min_freq: training tokens rarer than this become ``<unk>``.
        path: the TSV file (columns ``split lang label text``); None:
            ``data/sentiment_bilingual.tsv`` (:func:`course_lib.data.data_path`).
    """
    max_len = check_positive_int(max_len, "max_len", minimum=3)
    path = data_path("sentiment_bilingual.tsv") if path is None else path
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    train = [r for r in rows if r["split"] == "train"]
    test = [r for r in rows if r["split"] == "test"]
    vocab = Vocab.build([r["text"] for r in train], min_freq=min_freq, specials=BERT_SPECIALS)

    def enc(split):
        X, M = vocab.encode_batch([r["text"] for r in split], max_len)
        return torch.from_numpy(X), torch.from_numpy(M), torch.tensor([int(r["label"]) for r in split])
    return SentimentData(train, test, vocab, max_len, *enc(train), *enc(test))


def build_classifier(vocab_size: int, d_model: int = 32, num_heads: int = 4, num_layers: int = 2,
                     max_len: int = 24, seed: int = 0, dropout: float = 0.1,
                     num_classes: int = 2) -> BertClassifier:
    """A small BERT classifier with random weights (chapter 10).

    Args:
        vocab_size: number of token ids; d_model, num_heads, num_layers: the
            encoder's size (``d_ff = 4 d_model``); max_len: learned positions.
        seed: ``torch.manual_seed`` before the weights are drawn.
        num_classes: number of labels ``C`` (2 for sentiment; chapter 10's word
            classes have 5).

    Returns:
        :class:`~course_lib.models.BertClassifier`; input ``(B, L)`` ids and
        mask, output logits ``(B, C)``.
    """
    num_classes = check_positive_int(num_classes, "num_classes", minimum=2)
    torch.manual_seed(seed)
    bert = BERT(vocab_size=vocab_size, d_model=d_model, num_heads=num_heads,
                num_layers=num_layers, d_ff=4 * d_model, max_len=max_len, dropout=dropout)
    return BertClassifier(bert, num_classes=num_classes, dropout=dropout)


def train_classifier(model, X, M, y, steps: int = 200, batch_size: int = 32, lr: float = 2e-3,
                     seed: int = 0) -> list[float]:
    """Train ``model`` with AdamW on random mini-batches (chapter 10).

    :func:`course_lib.training.train` with AdamW (weight decay 0.01, PyTorch's
    default) and no gradient clipping; PyTorch's global generator (dropout)
    is left as :func:`build_classifier` left it.

    Args:
        model: ``model(ids, attention_mask=mask) -> logits (B, C)``.
        X, M: ids and mask ``(N, L)``; y: labels ``(N,)``.
        steps, batch_size, lr: the optimisation; seed: the batch order.

    Returns:
        The training loss of every step. The model is left in eval mode.
    """
    steps = check_positive_int(steps, "steps")
    batch_size = check_positive_int(batch_size, "batch_size")
    g = torch.Generator().manual_seed(seed)
    batches = [torch.randint(len(X), (batch_size,), generator=g) for _ in range(steps)]

    def loss_fn(model, b):
        return F.cross_entropy(model(X[b], attention_mask=M[b]), y[b])

    return train(model, batches.__getitem__, loss_fn, steps, lr, optimizer="adamw", weight_decay=0.01,
                 seed=None, clip=None)


@torch.no_grad()
def predict_proba(model, X, M) -> torch.Tensor:
    """Class probabilities ``(N, C)`` of ids ``X`` and mask ``M`` ``(N, L)`` (eval mode)."""
    model.eval()
    return model(X, attention_mask=M).softmax(-1)


def accuracy(model, X, M, y) -> float:
    """Share of rows of ``X`` whose most probable class is ``y`` (0 to 1)."""
    return float((predict_proba(model, X, M).argmax(-1) == y).double().mean())
