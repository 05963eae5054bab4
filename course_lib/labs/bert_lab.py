"""Chapter 7's BERT lab (``ch07_bert_gpt``): pretrain a small BERT by masked
language modelling, then fine-tune it as a bilingual sentiment classifier.

The data are the bilingual sentences of ``data/sentiment_bilingual.tsv``
(:func:`course_lib.labs.sentiment.load_sentiment`, fixed train/test split,
tokens rarer than twice in training become ``<unk>``)::

    training sentences, no labels -> mask_tokens (15 %, 80/10/10) -> BertForMLM   recipe "ch07-bert-mlm"
    the same encoder + pooler + linear on <cls> -> labels                        recipe "ch07-bert-sentiment"

Both recipes train in float64 through :func:`course_lib.training.train`, and
``make train`` stores their weights (``data/checkpoints/``). Their metrics
are measured on the held-out test sentences, whose product names never
occur in training. The notebook runs the same loops live, with the same
pieces (:data:`MLM_TRAIN`, :func:`mlm_batches`, :func:`mlm_loss`, ...), and
prints its results from the checkpoints.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .. import repro
from .._validate import check_positive_int
from ..models import BERT, BERTConfig, BertClassifier, BertForMLM, mask_tokens
from ..training import logged_curve, train
from .sentiment import SentimentData, load_sentiment

__all__ = ["MAX_LEN", "MIN_FREQ", "BATCH_SIZE", "LOG_EVERY", "BERT_SIZE", "MLM_TRAIN", "FINETUNE_TRAIN",
           "MLM_EVAL_REPEATS", "load_data", "build_mlm", "mlm_batches", "mlm_loss", "mlm_eval",
           "build_classifier", "classifier_batches", "classifier_loss", "classifier_eval",
           "pretrain_mlm", "fine_tune"]

MAX_LEN = 24
"""Every sentence is padded or truncated to this many ids, ``<cls>`` and ``<sep>`` included."""
MIN_FREQ = 2
"""Training tokens seen fewer times become ``<unk>``."""
BATCH_SIZE = 32
LOG_EVERY = 50
"""One progress line (mean loss) every this many steps; the checkpoints' curves use it too."""

BERT_SIZE = dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.1)
"""The small BERT of chapter 7 (``max_len`` = :data:`MAX_LEN`, vocabulary from the data)."""

MLM_TRAIN = dict(steps=150, lr=2e-3, optimizer="adamw", weight_decay=0.01, clip=None, seed=0)
"""Keyword arguments of :func:`course_lib.training.train` for MLM pretraining (seed: dropout)."""
FINETUNE_TRAIN = dict(steps=150, lr=1e-3, optimizer="adamw", weight_decay=0.01, clip=None, seed=1)
"""Keyword arguments of :func:`course_lib.training.train` for fine-tuning. The whole
classifier is in training mode: dropout 0.1 in the encoder and before the last
layer, as in BERT's own fine-tuning."""

MLM_EVAL_REPEATS = 20
"""Held-out MLM metrics average this many fixed corruptions of the test sentences."""


def load_data() -> SentimentData:
    """The sentiment set as chapter 7 encodes it (``max_len`` 24, ``min_freq`` 2)."""
    return load_sentiment(max_len=MAX_LEN, min_freq=MIN_FREQ)


def build_mlm(vocab_size: int, seed: int = 0) -> BertForMLM:
    """The small BERT with its MLM head, float64, BERT's initialisation (chapter 7).

    ``torch.manual_seed(seed)``, then every linear and embedding weight of
    the encoder is drawn from N(0, 0.02²) (the MLM head's output matrix is
    the token embedding, so PyTorch's N(0, 1) embeddings would start with
    huge logits).

    Args:
        vocab_size: number of token ids.
        seed: seeds PyTorch's global generator before the weights are drawn.

    Returns:
        :class:`~course_lib.models.BertForMLM` in float64; ``model.bert`` is the encoder.
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    bert = BERT(BERTConfig(vocab_size=vocab_size, max_len=MAX_LEN, **BERT_SIZE))
    for module in bert.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
    return BertForMLM(bert).double()


def mlm_batches(data: SentimentData, steps: int, batch_size: int = BATCH_SIZE, seed: int = 0) -> list:
    """``steps`` corrupted training batches ``(inputs, labels, mask)``, each ``(batch_size, MAX_LEN)``.

    One generator seeded with ``seed`` draws, step by step, the sentences and
    then their corruption (:func:`~course_lib.models.mask_tokens`); labels
    are -100 where nothing is predicted. The labels of the sentences are not used.
    """
    steps = check_positive_int(steps, "steps")
    batch_size = check_positive_int(batch_size, "batch_size")
    v = data.vocab
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        rows = torch.randint(len(data.X_train), (batch_size,), generator=g)
        inp, lab = mask_tokens(data.X_train[rows], v.mask_id, len(v), v.special_ids, generator=g)
        out.append((inp, lab, data.M_train[rows]))
    return out


def mlm_loss(model, batch) -> torch.Tensor:
    """Cross-entropy at the picked positions of one :func:`mlm_batches` batch."""
    inp, lab, attention_mask = batch
    return F.cross_entropy(model(inp, attention_mask=attention_mask).transpose(1, 2), lab)


@torch.no_grad()
def mlm_eval(model, data: SentimentData, repeats: int = MLM_EVAL_REPEATS, seed: int = 1234) -> dict:
    """Held-out MLM loss and top-1 accuracy on the test sentences (eval mode).

    The test sentences are corrupted ``repeats`` times with a generator
    seeded with ``seed`` (the same corruptions on every call); the loss and
    the share of picked tokens predicted exactly are pooled over all of them.

    Returns:
        ``{"test_mlm_loss": float, "test_mlm_accuracy": float (0 to 1), "predicted": int}``
        (``predicted``: how many picked tokens were scored).
    """
    repeats = check_positive_int(repeats, "repeats")
    v = data.vocab
    was_training = model.training
    model.eval()
    g = torch.Generator().manual_seed(seed)
    total, right, count = 0.0, 0, 0
    for _ in range(repeats):
        inp, lab = mask_tokens(data.X_test, v.mask_id, len(v), v.special_ids, generator=g)
        logits = model(inp, attention_mask=data.M_test)
        picked = lab != -100
        total += float(F.cross_entropy(logits[picked], lab[picked], reduction="sum"))
        right += int((logits[picked].argmax(-1) == lab[picked]).sum())
        count += int(picked.sum())
    model.train(was_training)
    return {"test_mlm_loss": total / count, "test_mlm_accuracy": right / count, "predicted": count}


def build_classifier(bert: BERT, seed: int = 1) -> BertClassifier:
    """:class:`~course_lib.models.BertClassifier` (2 classes) on ``bert``, float64; ``seed`` draws the head."""
    torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    return BertClassifier(bert, num_classes=2).double()


def classifier_batches(data: SentimentData, steps: int, batch_size: int = BATCH_SIZE, seed: int = 1) -> list:
    """``steps`` batches of training-row indices ``(batch_size,)``, drawn with a generator seeded with ``seed``."""
    steps = check_positive_int(steps, "steps")
    batch_size = check_positive_int(batch_size, "batch_size")
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(len(data.X_train), (batch_size,), generator=g) for _ in range(steps)]


def classifier_loss(data: SentimentData):
    """``(model, rows) -> cross-entropy`` of the labelled training rows ``rows``."""
    def loss(model, rows):
        return F.cross_entropy(model(data.X_train[rows], attention_mask=data.M_train[rows]), data.y_train[rows])
    return loss


@torch.no_grad()
def classifier_eval(model, data: SentimentData) -> dict:
    """Held-out results of a sentiment classifier (eval mode).

    Returns:
        ``{"test_accuracy", "test_loss", "test_accuracy_en", "test_accuracy_zh"}``
        (floats; accuracies from 0 to 1) and ``"predicted"``: the predicted label
        of every test sentence, an int64 tensor ``(N,)``.
    """
    was_training = model.training
    model.eval()
    logits = model(data.X_test, attention_mask=data.M_test)
    model.train(was_training)
    pred = logits.argmax(-1)
    correct = (pred == data.y_test).double()
    lang = [r["lang"] for r in data.test]
    by = {code: float(correct[torch.tensor([x == code for x in lang])].mean()) for code in ("en", "zh")}
    return {"test_accuracy": float(correct.mean()), "test_loss": float(F.cross_entropy(logits, data.y_test)),
            "test_accuracy_en": by["en"], "test_accuracy_zh": by["zh"], "predicted": pred}


def pretrain_mlm(data: SentimentData, **train_kwargs):
    """Build (:func:`build_mlm`) and pretrain the MLM as recipe ``ch07-bert-mlm`` does.

    ``train_kwargs`` go to :func:`course_lib.training.train` (e.g. ``log_every``,
    ``reference``, ``rel``). Returns ``(model, losses)``.
    """
    model = build_mlm(len(data.vocab))
    batches = mlm_batches(data, MLM_TRAIN["steps"])
    losses = train(model, batches.__getitem__, mlm_loss, **MLM_TRAIN, **train_kwargs)
    return model, losses


def fine_tune(bert: BERT, data: SentimentData, **train_kwargs):
    """Put a classifier on ``bert`` (:func:`build_classifier`) and fine-tune it as recipe
    ``ch07-bert-sentiment`` does; ``bert`` is trained too. Returns ``(model, losses)``."""
    model = build_classifier(bert)
    batches = classifier_batches(data, FINETUNE_TRAIN["steps"])
    losses = train(model, batches.__getitem__, classifier_loss(data), **FINETUNE_TRAIN, **train_kwargs)
    return model, losses


# Tolerances, measured (ATEN_CPU_CAPABILITY=default on 1 thread, avx2 on 1 and 3 threads, and runs
# whose initial weights were perturbed by 1e-9 relative): MLM pretraining is not chaotic, the
# held-out MLM loss moved by at most 2e-7 and the accuracy not at all; the fine-tuned classifier's
# held-out loss moved by at most 4e-5 and no test sentence changed its verdict. The tolerances are
# therefore floors: 0.001 on a loss (train.py --check prints 4 decimals), one sentence (1/67) on
# the accuracy, a few of the ~2000 hidden tokens on the MLM accuracy.


def _config(**extra) -> dict:
    return {"max_len": MAX_LEN, "min_freq": MIN_FREQ, "batch_size": BATCH_SIZE, "log_every": LOG_EVERY,
            "dtype": "float64", **BERT_SIZE, **extra}


@repro.recipe("ch07-bert-mlm", chapter="ch07", tolerance={"test_mlm_loss": 0.001, "test_mlm_accuracy": 0.002},
              data="MLM (15 %, 80/10/10) on the training sentences of sentiment_bilingual.tsv, no labels; "
                   "evaluated on 20 fixed corruptions of its test sentences")
def mlm_recipe() -> dict:
    """Chapter 7: the small BERT pretrained by MLM for 150 steps (float64)."""
    data = load_data()
    model, losses = pretrain_mlm(data)
    metrics = mlm_eval(model, data)
    metrics.pop("predicted")
    return {"model": model, "metrics": metrics, "curve": logged_curve(losses, LOG_EVERY),
            "config": _config(vocab_size=len(data.vocab), train={k: v for k, v in MLM_TRAIN.items()})}


@repro.recipe("ch07-bert-sentiment", chapter="ch07", tolerance={"test_accuracy": 0.016, "test_loss": 0.001},
              data="the ch07-bert-mlm encoder (retrained in the same run) fine-tuned on the labelled training "
                   "sentences of sentiment_bilingual.tsv; evaluated on its test split (unseen products)")
def sentiment_recipe() -> dict:
    """Chapter 7: the MLM-pretrained encoder fine-tuned on sentiment for 150 steps (float64)."""
    data = load_data()
    mlm, _ = pretrain_mlm(data)
    model, losses = fine_tune(mlm.bert, data)
    metrics = classifier_eval(model, data)
    metrics.pop("predicted")
    return {"model": model, "metrics": metrics, "curve": logged_curve(losses, LOG_EVERY),
            "config": _config(vocab_size=len(data.vocab), num_classes=2,
                              pretrained="ch07-bert-mlm (same recipe, same run)",
                              train={k: v for k, v in FINETUNE_TRAIN.items()})}
