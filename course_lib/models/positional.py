"""Positional encodings as PyTorch modules.

Chapter 4 (*Positional encoding*, ``ch04_positional_encoding``) derives them.

Attention alone is blind to order (chapter 4 proves it is permutation
equivariant), so each position ``pos`` gets a vector added to its embedding:

- :class:`SinusoidalPositionalEncoding`, the fixed table of the 2017 paper,
  computed by :func:`course_lib.scratch.sinusoidal_positional_encoding`;
- :class:`LearnedPositionalEncoding`, one trained vector per position, as in
  BERT, GPT-2 and ViT (chapters 6 and 7).

Both take an ``offset``: during cached decoding (chapter 8) the new token
sits at position ``offset = number of tokens already decoded``.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .._validate import check_positive_int, check_probability, check_tensor
from ..scratch.positional import sinusoidal_positional_encoding

__all__ = ["SinusoidalPositionalEncoding", "LearnedPositionalEncoding"]


class _PositionalEncoding(nn.Module):
    """Adds ``table(positions)`` to ``x``; subclasses provide the table."""

    def __init__(self, d_model: int, max_len: int, dropout: float):
        super().__init__()
        self.d_model = check_positive_int(d_model, "d_model")
        self.max_len = check_positive_int(max_len, "max_len")
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))

    def table(self, start: int, stop: int) -> torch.Tensor:
        """Position vectors of positions ``start .. stop - 1``.

        Args:
            start, stop: integers, ``0 <= start <= stop <= max_len``.

        Returns:
            ``(stop - start, d_model)``.
        """
        raise NotImplementedError

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Add the position vectors of ``offset .. offset + L - 1`` to ``x`` (chapter 4).

        Args:
            x: ``(B, L, d_model)`` embeddings.
            offset: position of ``x[:, 0]``; non-zero in cached decoding.

        Returns:
            ``(B, L, d_model)``: ``dropout(x + PE[offset : offset + L])``.
        """
        check_tensor(x, "x", ndim=3, last_dim=self.d_model, layout=f"(B, L, d_model={self.d_model})")
        offset = check_positive_int(offset, "offset", minimum=0)
        L = x.shape[1]
        if offset + L > self.max_len:
            raise ValueError(f"positions up to offset + L = {offset} + {L} = {offset + L} do not "
                             f"fit the positional table of max_len={self.max_len}; "
                             "build the model with a larger max_len")
        return self.dropout(x + self.table(offset, offset + L))   # (B, L, d_model) + (L, d_model)


class SinusoidalPositionalEncoding(_PositionalEncoding):
    """Fixed sinusoidal positional encoding (chapter 4).

    Args:
        d_model: width of the embeddings.
        max_len: number of positions in the table.
        dropout: dropout applied after the addition, as in the 2017 paper.

    Attributes:
        pe: ``(max_len, d_model)`` buffer, not trained (and not saved).
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__(d_model, max_len, dropout)
        pe = sinusoidal_positional_encoding(self.max_len, self.d_model)
        self.register_buffer("pe", torch.from_numpy(pe).float(), persistent=False)

    def table(self, start: int, stop: int) -> torch.Tensor:
        return self.pe[start:stop]                      # (stop - start, d_model)


class LearnedPositionalEncoding(_PositionalEncoding):
    """Learned positional embeddings, one trained vector per position (chapter 4).

    BERT (chapter 7), GPT (chapter 8) and ViT (chapter 6) use them.

    Args:
        d_model: width of the embeddings.
        max_len: number of positions that can be encoded.
        dropout: dropout applied after the addition.

    Attributes:
        embedding: ``nn.Embedding(max_len, d_model)``.
    """

    def __init__(self, d_model: int, max_len: int, dropout: float = 0.0):
        super().__init__(d_model, max_len, dropout)
        self.embedding = nn.Embedding(self.max_len, self.d_model)

    def table(self, start: int, stop: int) -> torch.Tensor:
        return self.embedding.weight[start:stop]        # (stop - start, d_model)
