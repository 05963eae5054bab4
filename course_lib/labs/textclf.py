"""Chapter 10's text-classification kit (``ch10_capstone``): an honest split, the encoded data,
a bag-of-n-grams baseline and the metrics, shared by the sentiment and the word-class tasks.

::

    texts, labels -> dedupe (exact duplicates; texts seen with two labels dropped)
                  -> stratified train/test split (fixed seed)          SplitTexts
                  -> Vocab on the training texts, encode_batch         TextData: ids, mask (N, max_len)
    baseline:        character n-grams (TF-IDF) -> logistic regression  (scikit-learn)
    metrics:         confusion (C, C), per-class F1, macro-F1, accuracy

Deduplicating *before* splitting is what keeps a review out of both sides:
the same text in training and in the held-out set would be graded as
"generalisation" when it is memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validate import check_positive_int
from ..text import BERT_SPECIALS, Vocab, tokenize

__all__ = ["SplitTexts", "TextData", "dedupe", "split_texts", "encode_split", "ngram_baseline",
           "confusion", "scores", "fit", "EVAL_BATCH", "evaluate"]


def _check_texts_labels(texts, labels):
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of strings")
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != len(texts):
        raise ValueError(f"labels must be one label per text: {len(texts)} texts, labels of shape {labels.shape}")
    if len(labels) and not np.issubdtype(labels.dtype, np.integer):
        raise TypeError(f"labels must be integers, got dtype {labels.dtype}")
    return list(texts), labels.astype(np.int64)


def dedupe(texts, labels) -> tuple[list[str], np.ndarray, dict]:
    """Remove exact duplicate texts (chapter 10).

    A text that occurs several times with one label is kept once (its first
    occurrence); a text that occurs with two different labels is dropped
    altogether (its label is noise).

    Args:
        texts: ``N`` strings; labels: ``N`` integer labels.

    Returns:
        ``(texts, labels, info)``: the kept texts in first-occurrence order,
        their labels ``(M,)`` and ``info = {"rows", "kept", "duplicates",
        "conflicting"}``: rows read, texts kept, extra copies removed, distinct
        texts dropped for carrying two labels.
    """
    texts, labels = _check_texts_labels(texts, labels)
    first, seen = {}, {}
    for t, y in zip(texts, labels):
        first.setdefault(t, int(y))
        seen.setdefault(t, set()).add(int(y))
    kept = [t for t in first if len(seen[t]) == 1]
    info = {"rows": len(texts), "kept": len(kept), "duplicates": len(texts) - len(first),
            "conflicting": len(first) - len(kept)}
    return kept, np.array([first[t] for t in kept], dtype=np.int64), info


@dataclass
class SplitTexts:
    """A deduplicated, stratified train/test split (chapter 10).

    Attributes:
        train, test: the texts; y_train, y_test: their labels ``(N,)`` int64.
        info: :func:`dedupe`'s counts, plus ``"train"`` and ``"test"`` sizes and the ``"seed"``.
    """

    train: list
    y_train: np.ndarray
    test: list
    y_test: np.ndarray
    info: dict


def split_texts(texts, labels, test_size, seed: int = 0) -> SplitTexts:
    """Deduplicate, then split stratified by label with a fixed seed (chapter 10).

    Args:
        texts, labels: as in :func:`dedupe`.
        test_size: held-out texts: a count (int ≥ 1) or a share in ``(0, 1)``.
        seed: ``random_state`` of scikit-learn's ``train_test_split``.

    Returns:
        :class:`SplitTexts`; no text is on both sides, and each label's share is
        the same on both sides up to rounding.
    """
    from sklearn.model_selection import train_test_split

    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)):
        raise TypeError(f"test_size must be an int count or a float share, got {type(test_size).__name__}")
    if isinstance(test_size, float) and not 0 < test_size < 1:
        raise ValueError(f"test_size as a share must be in (0, 1), got {test_size}")
    if isinstance(test_size, int) and test_size < 1:
        raise ValueError(f"test_size as a count must be >= 1, got {test_size}")
    seed = check_positive_int(seed, "seed", minimum=0)
    kept, y, info = dedupe(texts, labels)
    if isinstance(test_size, int) and test_size >= len(kept):
        raise ValueError(f"test_size must be below the {len(kept)} distinct texts, got {test_size}")
    idx_train, idx_test = train_test_split(np.arange(len(kept)), test_size=test_size, random_state=seed,
                                           stratify=y)
    idx_train, idx_test = np.sort(idx_train), np.sort(idx_test)
    info = {**info, "train": len(idx_train), "test": len(idx_test), "seed": seed}
    return SplitTexts([kept[i] for i in idx_train], y[idx_train], [kept[i] for i in idx_test], y[idx_test], info)


@dataclass
class TextData:
    """A split, encoded for a BERT classifier (chapter 10).

    Attributes:
        split: the :class:`SplitTexts` (texts before truncation).
        class_names: the ``C`` class names, by label id.
        vocab: :class:`~course_lib.text.Vocab` (``BERT_SPECIALS``) built on the training texts.
        max_len: ids per text, ``<cls>`` and ``<sep>`` included (longer texts are cut).
        X_train, M_train, X_test, M_test: int64 ``(N, max_len)`` ids and masks.
        y_train, y_test: int64 labels ``(N,)``.
    """

    split: SplitTexts
    class_names: tuple
    vocab: Vocab
    max_len: int
    X_train: torch.Tensor
    M_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    M_test: torch.Tensor
    y_test: torch.Tensor


def encode_split(split: SplitTexts, class_names, max_len: int, min_freq: int = 1,
                 vocab: Vocab | None = None) -> TextData:
    """Build the vocabulary on ``split.train`` and encode both sides (chapter 10).

    Tokens are :func:`course_lib.text.tokenize`'s: one Chinese character each,
    English words whole. Every text becomes ``<cls> tokens <sep>`` padded or cut
    to ``max_len`` ids.

    Args:
        split: a :class:`SplitTexts`.
        class_names: one name per label id (labels must lie in ``0 … C-1``).
        max_len: ids per text (≥ 3).
        min_freq: training tokens rarer than this become ``<unk>``.
        vocab: use this vocabulary instead of building one (e.g. a checkpoint's).
    """
    if not isinstance(split, SplitTexts):
        raise TypeError(f"split must be a SplitTexts (from split_texts), got {type(split).__name__}")
    class_names = tuple(class_names)
    if len(class_names) < 2:
        raise ValueError(f"class_names must name at least 2 classes, got {class_names!r}")
    for y in (split.y_train, split.y_test):
        if len(y) and (y.min() < 0 or y.max() >= len(class_names)):
            raise ValueError(f"labels must lie in 0 … {len(class_names) - 1} (one per class name)")
    max_len = check_positive_int(max_len, "max_len", minimum=3)
    if vocab is None:
        vocab = Vocab.build(split.train, min_freq=min_freq, specials=BERT_SPECIALS)
    elif not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a Vocab or None, got {type(vocab).__name__}")

    def enc(texts, y):
        X, M = vocab.encode_batch(texts, max_len)
        return torch.from_numpy(X), torch.from_numpy(M), torch.from_numpy(np.asarray(y, dtype=np.int64))
    return TextData(split, class_names, vocab, max_len, *enc(split.train, split.y_train),
                    *enc(split.test, split.y_test))


def ngram_baseline(texts, labels, ngram_range=(1, 2), C: float = 4.0):
    """A bag of character n-grams and a logistic regression, fitted (chapter 10).

    TF-IDF of every character n-gram with ``n`` in ``ngram_range`` (sub-linear
    term frequency, n-grams seen in fewer than 2 training texts dropped), then
    scikit-learn's ``LogisticRegression`` (L2, ``C``; multinomial for more than
    two classes). It knows which pieces occur, not in which order beyond ``n``.

    Args:
        texts, labels: the training texts and their integer labels.
        ngram_range: ``(n_min, n_max)``, ``1 ≤ n_min ≤ n_max``.
        C: inverse regularisation strength (> 0).

    Returns:
        The fitted scikit-learn ``Pipeline`` (``predict``, ``decision_function``),
        fitted on one thread so that its arithmetic is the same on every machine.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    texts, labels = _check_texts_labels(texts, labels)
    if not texts:
        raise ValueError("texts must not be empty")
    if (not isinstance(ngram_range, tuple) or len(ngram_range) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in ngram_range)
            or not 1 <= ngram_range[0] <= ngram_range[1]):
        raise ValueError(f"ngram_range must be a pair of ints 1 <= n_min <= n_max, got {ngram_range!r}")
    if isinstance(C, bool) or not isinstance(C, (int, float)) or not C > 0:
        raise ValueError(f"C must be a positive number, got {C!r}")
    if len(set(labels.tolist())) < 2:
        raise ValueError("labels must contain at least 2 classes")
    from threadpoolctl import threadpool_limits

    model = make_pipeline(
        TfidfVectorizer(analyzer="char", ngram_range=ngram_range, min_df=2 if len(texts) > 50 else 1,
                        sublinear_tf=True, lowercase=True),
        LogisticRegression(C=float(C), max_iter=1000, tol=1e-6))
    with threadpool_limits(1):     # one thread: the same order of sums on every machine, and no spinning
        return model.fit(texts, labels)


def confusion(y_true, y_pred, num_classes: int) -> np.ndarray:
    """Counts ``(C, C)``: row = true class, column = predicted class (chapter 10)."""
    t = np.asarray(y_true).ravel()
    p = np.asarray(y_pred).ravel()
    if t.shape != p.shape:
        raise ValueError(f"y_true and y_pred must have the same length, got {t.size} and {p.size}")
    k = check_positive_int(num_classes, "num_classes", minimum=2)
    if t.size and (min(t.min(), p.min()) < 0 or max(t.max(), p.max()) >= k):
        raise ValueError(f"labels must lie in 0 … {k - 1}")
    return np.bincount(t.astype(np.int64) * k + p.astype(np.int64), minlength=k * k).reshape(k, k)


def scores(y_true, y_pred, num_classes: int) -> dict:
    """Accuracy, per-class F1, macro-F1 and the confusion matrix (chapter 10).

    For class ``c``: precision = TP / predicted c, recall = TP / true c,
    ``F1 = 2 TP / (2 TP + FP + FN)`` (0 when the class is never true nor
    predicted). Macro-F1 is the plain mean over classes, so a rare class
    counts as much as a frequent one; for two classes ``"f1"`` is class 1's.

    Returns:
        ``{"accuracy", "macro_f1", "f1" (class 1's F1), "f1_per_class" (C,), "confusion" (C, C)}``.
    """
    cm = confusion(y_true, y_pred, num_classes)
    if cm.sum() == 0:
        raise ValueError("y_true must not be empty")
    tp = np.diag(cm).astype(float)
    denom = cm.sum(0) + cm.sum(1)                       # predicted + true = 2 TP + FP + FN
    f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
    return {"accuracy": float(tp.sum() / cm.sum()), "macro_f1": float(f1.mean()), "f1": float(f1[1]),
            "f1_per_class": f1, "confusion": cm}


def fit(model, data: TextData, training: dict, *, steps: int | None = None, log_every: int | None = None,
        reference: dict | None = None, rel: float = 0.25, log_decimals: int = 3, name: str = "") -> list[float]:
    """Train ``model`` on ``data``'s training side with :func:`course_lib.training.train` (chapter 10).

    AdamW (weight decay 0.01), linear warm-up to a constant learning rate,
    gradient clipping, random mini-batches drawn with ``training["seed"]``:
    the first ``k`` steps of a run are the same whatever ``steps`` is, so a
    notebook can run the beginning of a recipe live and band it against the
    checkpoint's curve (``reference``).

    Args:
        model: ``model(ids (B, L), attention_mask=mask (B, L)) -> logits (B, C)``.
        data: a :class:`TextData`.
        training: ``{"steps", "batch_size", "lr", "warmup", "clip", "seed"}``.
        steps: run only this many steps (≤ ``training["steps"]``); None: all.
        log_every, reference, rel, log_decimals, name: progress lines, as in
            :func:`course_lib.training.train`.

    Returns:
        The training loss of every step run. The model is left in eval mode.
    """
    from torch.nn import functional as F

    from ..training import train

    if not isinstance(data, TextData):
        raise TypeError(f"data must be a TextData, got {type(data).__name__}")
    missing = {"steps", "batch_size", "lr", "warmup", "clip", "seed"} - set(training)
    if missing:
        raise ValueError(f"training must give {sorted(missing)}")
    total = check_positive_int(training["steps"], "training['steps']")
    steps = total if steps is None else check_positive_int(steps, "steps")
    if steps > total:
        raise ValueError(f"steps must be at most training['steps'] = {total}, got {steps}")
    X, M, y = data.X_train, data.M_train, data.y_train
    g = torch.Generator().manual_seed(training["seed"])
    batches = [torch.randint(len(X), (training["batch_size"],), generator=g) for _ in range(total)]

    def loss_fn(model, b):
        return F.cross_entropy(model(X[b], attention_mask=M[b]), y[b])       # logits (B, C), labels (B,)

    return train(model, batches.__getitem__, loss_fn, steps, training["lr"], optimizer="adamw",
                 weight_decay=0.01, warmup=training["warmup"], clip=training["clip"], seed=None,
                 log_every=log_every, reference=reference, rel=rel, log_decimals=log_decimals, name=name)


EVAL_BATCH = 256
"""Held-out texts per forward pass of :func:`evaluate`. Each text is scored on its own (the mask
keeps texts apart), so the probabilities are those of one pass over the whole set: for every
classifier the course stores, to the last bit on the machine where this was measured; at worst a
few units of the last place apart, as one pass on another CPU is. The batches bound the memory:
chapter 10's local-attention model, scoring its held-out reviews in one pass, took its process to
1.4 GB; in batches to 0.6 GB, in a fifth less time."""


@torch.no_grad()
def evaluate(model, data: TextData) -> dict:
    """Held-out scores of ``model`` on a float64 copy: the same on every CPU (chapter 10).

    The held-out texts go through the model :data:`EVAL_BATCH` at a time.

    Returns:
        :func:`scores` of the held-out side, plus ``"pred"`` ``(N,)`` and
        ``"probs"`` ``(N, C)`` NumPy arrays. ``model`` itself is not changed.
    """
    import copy

    if not isinstance(data, TextData):
        raise TypeError(f"data must be a TextData, got {type(data).__name__}")
    model64 = copy.deepcopy(model).to(torch.float64).eval()
    X, M = data.X_test, data.M_test                                                   # (N, max_len) each
    if len(X) == 0:
        raise ValueError("data must hold at least one held-out text (data.X_test is empty)")
    probs = torch.cat([model64(X[i:i + EVAL_BATCH], attention_mask=M[i:i + EVAL_BATCH]).softmax(-1)
                       for i in range(0, len(X), EVAL_BATCH)]).numpy()               # (N, C)
    pred = probs.argmax(-1)
    return {**scores(data.y_test.numpy(), pred, len(data.class_names)), "pred": pred, "probs": probs}
