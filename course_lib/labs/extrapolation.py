"""Chapter 4's lab (``ch04_positional_encoding``): sinusoidal versus learned positions on
sequences longer than in training.

The task needs positions and nothing else: at every position ``i >= 1``
output the token at position ``i - 1`` ("previous token"). A model without
positional encoding cannot do it (attention does not know which key is the
previous one). :class:`PositionProbe` is one :class:`~course_lib.models.EncoderLayer`
between a token embedding plus positional encoding and a linear head; the
two variants differ only in the positional encoding.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import check_choice, check_positive_int, check_positive_number
from ..models import EncoderLayer, LearnedPositionalEncoding, SinusoidalPositionalEncoding
from ..training import train

__all__ = ["PositionProbe", "previous_token_batch", "train_probe", "accuracy_by_position"]

_ENCODINGS = {"sinusoidal": SinusoidalPositionalEncoding, "learned": LearnedPositionalEncoding}


class PositionProbe(nn.Module):
    """Token embedding + positional encoding -> one encoder layer -> logits.

    Args:
        positional: ``"sinusoidal"`` or ``"learned"``.
        vocab_size: number of token ids.
        d_model, num_heads, d_ff: sizes of the encoder layer.
        max_len: rows of the positional table (the longest sequence the
            model can be run on).
        causal: position ``i`` attends to positions ``<= i`` only (as in
            GPT), so a longer input cannot change the earlier outputs.

    Input ``(B, L)`` token ids, output ``(B, L, vocab_size)`` logits. Chapter 4.
    """

    def __init__(self, positional: str, vocab_size: int = 16, d_model: int = 32,
                 num_heads: int = 2, d_ff: int = 64, max_len: int = 128, causal: bool = True):
        super().__init__()
        self.causal = bool(causal)
        self.positional = check_choice(positional, "positional", _ENCODINGS)
        vocab_size = check_positive_int(vocab_size, "vocab_size")
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pe = _ENCODINGS[positional](d_model, max_len)
        self.layer = EncoderLayer(d_model, num_heads, d_ff, dropout=0.0)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        L = ids.shape[1]
        mask = torch.ones(L, L, dtype=torch.bool).tril() if self.causal else None
        h, _ = self.layer(self.pe(self.embed(ids)), mask)
        return self.head(h)


def previous_token_batch(batch_size: int, L: int, vocab_size: int, generator: torch.Generator):
    """Random token sequences and their "previous token" targets.

    Returns:
        ``(ids, targets)``, both ``(batch_size, L)`` int64; ``targets[:, i] =
        ids[:, i - 1]`` for ``i >= 1`` (position 0 has no target and is
        never scored). Chapter 4.
    """
    batch_size = check_positive_int(batch_size, "batch_size")
    L = check_positive_int(L, "L", minimum=2)
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    ids = torch.randint(0, vocab_size, (batch_size, L), generator=generator)
    return ids, torch.roll(ids, 1, dims=1)


def train_probe(model: PositionProbe, L: int, steps: int = 200, batch_size: int = 32,
                lr: float = 1e-2, seed: int = 0) -> list[float]:
    """Train ``model`` on previous-token sequences of length ``L``.

    :func:`course_lib.training.train` with Adam and no gradient clipping;
    ``seed`` draws the data, and PyTorch's global generator is left as it is.
    Call ``torch.set_num_threads`` first for results that repeat exactly.

    Returns:
        The training loss after each step. Chapter 4.
    """
    if not isinstance(model, PositionProbe):
        raise TypeError(f"model must be a PositionProbe, got {type(model).__name__}")
    steps = check_positive_int(steps, "steps")
    lr = check_positive_number(lr, "lr")
    vocab = model.head.out_features
    g = torch.Generator().manual_seed(seed)
    batches = [previous_token_batch(batch_size, L, vocab, g) for _ in range(steps)]

    def loss_fn(model, batch):
        ids, targets = batch
        return F.cross_entropy(model(ids)[:, 1:].reshape(-1, vocab), targets[:, 1:].reshape(-1))

    return train(model, batches.__getitem__, loss_fn, steps, lr, seed=None, clip=None)


@torch.no_grad()
def accuracy_by_position(model: PositionProbe, L: int, n: int = 1000, seed: int = 1) -> np.ndarray:
    """Fraction of ``n`` random sequences of length ``L`` answered right, per position.

    Returns:
        ``(L,)`` array; entry ``i`` is the accuracy at position ``i``
        (``nan`` at position 0, which has no target). Chapter 4.
    """
    if not isinstance(model, PositionProbe):
        raise TypeError(f"model must be a PositionProbe, got {type(model).__name__}")
    model.eval()
    ids, targets = previous_token_batch(n, L, model.head.out_features,
                                        torch.Generator().manual_seed(seed))
    acc = (model(ids).argmax(-1) == targets).double().mean(0).numpy()
    acc[0] = np.nan
    return acc
