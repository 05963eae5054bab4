"""Chapter 10's lab (``ch10_capstone``): serving a trained classifier: a ``predict`` function that
never raises, a loader for the chapter's stored classifiers, and a latency benchmark.

``predict`` is the source documents' ``predict_api`` made safe: it checks the
input itself and answers with a dict, ``{"status": "ok", ...}`` or
``{"status": "error", "message": ...}``, never with a traceback::

    text -> checks -> tokenize -> ids (1, max_len) -> model -> softmax -> dict
"""

from __future__ import annotations

import statistics
import time

import torch

from ..text import tokenize

__all__ = ["MAX_CHARS", "predict", "load_classifier", "benchmark", "percentile"]

MAX_CHARS = 1000
"""Longer texts are refused: a service should bound the work one request can cause."""


def _error(message: str) -> dict:
    return {"status": "error", "message": message}


@torch.no_grad()
def predict(text, model=None, vocab=None, max_len: int = 24, labels=("negative", "positive"),
            max_chars: int = MAX_CHARS) -> dict:
    """Classify one text; the answer is always a dict (chapter 10).

    Args:
        text: the input string (English, Chinese or mixed).
        model: ``model(ids (1, L), attention_mask=mask (1, L)) -> logits (1, C)``,
            e.g. :class:`~course_lib.models.BertClassifier`.
        vocab: the :class:`~course_lib.text.Vocab` the model was trained with.
        max_len: ids per text (longer token lists are truncated, as in training).
        labels: the ``C`` class names.
        max_chars: longer texts are refused.

    Returns:
        ``{"status": "ok", "label", "confidence", "probabilities": {label: p}}``;
        or ``{"status": "error", "message"}`` naming the problem: not a
        string, empty or only whitespace, too long, no known token, missing
        model or vocab, or an exception inside the model.
    """
    if model is None or vocab is None:
        return _error("model and vocab must both be given")
    if isinstance(text, (bytes, bytearray)):
        return _error("text must be a str, got bytes: decode it first, e.g. text.decode('utf-8')")
    if not isinstance(text, str):
        return _error(f"text must be a str, got {type(text).__name__}")
    if not text.strip():
        return _error("text is empty or only whitespace")
    if len(text) > max_chars:
        return _error(f"text is too long: {len(text)} characters, the limit is {max_chars}")
    try:
        tokens = tokenize(text)
        if not tokens:
            return _error("text has no tokens (letters, digits, characters or punctuation)")
        ids, mask = vocab.encode_batch([text], max_len)
        was_training = model.training
        model.eval()
        probs = model(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)).softmax(-1)[0]
        model.train(was_training)
    except Exception as e:                     # a service answers, it does not crash
        return _error(f"the model failed: {type(e).__name__}: {e}")
    probs = [float(p) for p in probs]
    if len(probs) != len(labels):
        return _error(f"labels has {len(labels)} names but the model gives {len(probs)} classes")
    k = max(range(len(probs)), key=probs.__getitem__)
    return {"status": "ok", "label": labels[k], "confidence": probs[k],
            "probabilities": dict(zip(labels, probs))}


def load_classifier(name: str = "ch08-sentiment", dtype=torch.float64) -> dict:
    """A stored chapter-10 classifier, ready for :func:`predict` (chapter 10).

    Rebuilds the model from the checkpoint's config (size, attention variant,
    classes) and its vocabulary from the token list stored there, so nothing
    but ``data/checkpoints/<name>.*`` is read.

    Args:
        name: a checkpoint written by a chapter-10 recipe (``ch08-sentiment``,
            ``ch08-sentiment-local``/``-strided``/``-linear``, ``ch08-wordclass``).
        dtype: the weights' dtype (float64: the same answers on every CPU).

    Returns:
        ``{"model", "vocab", "max_len", "labels"}``: call ``predict(text, **served)``.
    """
    from ..models.efficient_attention import swap_attention
    from ..repro import checkpoint_meta, load_checkpoint
    from ..text import BERT_SPECIALS, Vocab
    from .sentiment import build_classifier

    if not isinstance(name, str) or not name.startswith("ch08-"):
        raise ValueError(f"name must be a chapter-10 checkpoint such as 'ch08-sentiment', got {name!r}")
    config = checkpoint_meta(name)["config"]
    if "vocab" not in config or "class_names" not in config:
        raise ValueError(f"checkpoint {name!r} stores no vocabulary and class names: not a served classifier")
    vocab = Vocab(config["vocab"], specials=BERT_SPECIALS)
    model = build_classifier(len(vocab), d_model=config["d_model"], num_heads=config["num_heads"],
                             num_layers=config["num_layers"], max_len=config["max_len"],
                             num_classes=len(config["class_names"]))
    variant = config.get("variant", "full")
    if variant != "full":
        extra = {k: config[k] for k in ("window", "stride") if k in config}
        model = swap_attention(model, kind=config["kind"], **extra)
    load_checkpoint(name, model, dtype=dtype)
    return {"model": model, "vocab": vocab, "max_len": config["max_len"], "labels": tuple(config["class_names"])}


def percentile(values, q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, by linear interpolation."""
    values = sorted(values)
    if not values:
        raise ValueError("values must not be empty")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    pos = (len(values) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def benchmark(texts, repeats: int = 3, **predict_kwargs) -> dict:
    """Latency of :func:`predict`, one text at a time (chapter 10).

    Args:
        texts: list of strings; each is predicted ``repeats`` times.
        **predict_kwargs: passed to :func:`predict` (``model``, ``vocab``, ...).

    Returns:
        ``{"latencies_ms": [...], "p50_ms", "p95_ms", "mean_ms", "texts_per_s",
        "errors"}``. Timings depend on the machine: show them, do not compare them.
    """
    if isinstance(texts, str) or not texts:
        raise ValueError("texts must be a non-empty list of strings")
    latencies, errors = [], 0
    for _ in range(repeats):
        for t in texts:
            start = time.perf_counter()
            out = predict(t, **predict_kwargs)
            latencies.append(1e3 * (time.perf_counter() - start))
            errors += out["status"] != "ok"
    return {"latencies_ms": latencies, "p50_ms": percentile(latencies, 50),
            "p95_ms": percentile(latencies, 95), "mean_ms": statistics.fmean(latencies),
            "texts_per_s": 1e3 * len(latencies) / sum(latencies), "errors": errors}
