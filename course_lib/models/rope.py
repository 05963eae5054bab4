"""Rotary position embeddings as a PyTorch module (chapter 11, *Attention today*).

:func:`course_lib.scratch.rope.apply_rope` derives RoPE from chapter 4's
rotation ``R_k`` and rotates a NumPy array; this module does the same to
``(B, num_heads, L, d_k)`` queries and keys inside a model. ``cos(m ω_i)``
and ``sin(m ω_i)`` are computed once for ``max_len`` positions and kept as
buffers (not parameters: nothing is learned, and they are not saved in the
``state_dict``); a longer input extends the table.

Pairs are **interleaved**, ``(x_{2i}, x_{2i+1})``, as in RoFormer, Meta's
LLaMA code and chapter 4's table::

    out_{2i}   = x_{2i} cos(m ω_i) − x_{2i+1} sin(m ω_i)
    out_{2i+1} = x_{2i} sin(m ω_i) + x_{2i+1} cos(m ω_i),   ω_i = base^(-2i/d_k)

With a KV cache, the ``L`` new tokens sit at positions ``offset .. offset +
L − 1`` where ``offset`` is the number of cached tokens: pass it, and the
keys stored in the cache are already rotated for good.

:func:`rope_complex` is the same rotation written as Meta's LLaMA code writes
it (``precompute_freqs_cis`` and ``apply_rotary_emb``: ``torch.polar``,
``torch.view_as_complex``), sharing no code with :class:`RotaryEmbedding`, so
the book can check one against the other. Meta's code computes the angles in
float32 (``.float()``); here they are float64, so the two forms agree to
``1e-12``, not only to float32's ``1e-6`` or so.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from .._validate import check_positive_int, check_tensor, shape_str

__all__ = ["RotaryEmbedding", "rope_complex"]


class RotaryEmbedding(nn.Module):
    """Rotate queries and keys by their positions (RoPE; chapter 11, *Attention today*).

    Args:
        d_k: width of one head, even; each of its ``d_k / 2`` pairs turns at
            its own frequency ``ω_i = base^(-2i/d_k)``.
        max_len: positions whose ``cos``/``sin`` are computed up front; longer
            inputs extend the table (doubling it).
        base: the ``10000`` of chapter 4 (LLaMA-3 uses ``500000``).

    Attributes:
        cos, sin: ``(max_len, d_k / 2)`` float64 buffers, ``cos(m ω_i)`` and
            ``sin(m ω_i)``; cast to the input's dtype when used.
        d_k, base: as above.
    """

    def __init__(self, d_k: int, max_len: int = 2048, base: float = 10000.0):
        super().__init__()
        d_k = check_positive_int(d_k, "d_k", minimum=2)
        if d_k % 2:
            raise ValueError(f"d_k must be even (RoPE rotates pairs of columns (2i, 2i+1)), got {d_k}")
        max_len = check_positive_int(max_len, "max_len")
        if isinstance(base, bool) or not isinstance(base, numbers.Real):
            raise TypeError(f"base must be a number > 1, got {type(base).__name__} {base!r}")
        if not base > 1:
            raise ValueError(f"base must be a number > 1, got {base!r}")
        self.d_k, self.base = d_k, float(base)
        cos, sin = self._table(max_len)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def _table(self, max_len: int, device=None):
        omega = self.base ** (-torch.arange(0, self.d_k, 2, dtype=torch.float64, device=device)
                              / self.d_k)                  # (d_k/2,)
        m = torch.arange(max_len, dtype=torch.float64, device=device)   # (max_len,)
        theta = m[:, None] * omega[None, :]                # (max_len, 1) * (1, d_k/2) -> (max_len, d_k/2)
        return theta.cos(), theta.sin()

    def extra_repr(self) -> str:
        return f"d_k={self.d_k}, max_len={self.cos.shape[0]}, base={self.base:g}"

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Rotate ``x`` as if its rows sat at positions ``offset .. offset + L − 1``.

        Args:
            x: ``(B, num_heads, L, d_k)`` queries or keys (any number of
                leading dimensions; positions run along the second-to-last).
            offset: position of the first row; with a KV cache, the number
                of tokens already cached (``len(cache)``).

        Returns:
            ``(B, num_heads, L, d_k)``, the dtype of ``x``.
        """
        check_tensor(x, "x", last_dim=self.d_k, layout=f"(B, num_heads, L, d_k={self.d_k})")
        if x.ndim < 2:
            raise ValueError(f"x must have shape (..., L, d_k={self.d_k}), got {shape_str(x.shape)}")
        offset = check_positive_int(offset, "offset", minimum=0)
        L = x.shape[-2]
        if offset + L > self.cos.shape[0]:                 # a longer sequence: extend the table
            cos, sin = self._table(max(2 * self.cos.shape[0], offset + L), device=self.cos.device)
            self.cos, self.sin = cos.to(self.cos.dtype), sin.to(self.sin.dtype)
        cos = self.cos[offset:offset + L].to(x.dtype)      # (L, d_k/2)
        sin = self.sin[offset:offset + L].to(x.dtype)      # (L, d_k/2)
        pairs = x.unflatten(-1, (self.d_k // 2, 2))        # (..., L, d_k/2, 2)
        x_even, x_odd = pairs[..., 0], pairs[..., 1]       # (..., L, d_k/2) each
        out = torch.stack([x_even * cos - x_odd * sin,
                           x_even * sin + x_odd * cos], dim=-1)   # (..., L, d_k/2, 2)
        return out.flatten(-2)                             # (..., L, d_k)


def rope_complex(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE written with complex numbers, as in Meta's LLaMA code, computed in float64.

    Each pair ``x_{2i} + i·x_{2i+1}`` of row ``m`` is multiplied by
    ``e^{i m ω_i}``, ``ω_i = base^(-2i/d)``. Meta's ``precompute_freqs_cis``
    builds the angles in float32 (``.float()``), which agrees with the real
    rotation only to float32 precision (about ``1e-7`` at 50 positions); this version
    keeps every step in float64 (complex128), so it agrees with
    :class:`RotaryEmbedding` and :func:`course_lib.scratch.rope.apply_rope`
    to ``1e-12`` (chapter 11, *Attention today*; ``tests/unit/test_rope.py``).

    Args:
        x: ``(..., L, d)`` floating-point tensor, ``d`` even; row ``m`` sits
            at position ``m``.
        base: the ``10000`` of ``ω_i = base^(-2i/d)``.

    Returns:
        ``(..., L, d)`` tensor with the dtype of ``x``.
    """
    check_tensor(x, "x", layout="(..., L, d)")
    if x.ndim < 2 or x.shape[-1] % 2 or x.shape[-1] == 0:
        raise ValueError(f"x must have shape (..., L, d) with d even (RoPE rotates pairs of columns "
                         f"(2i, 2i+1)), got {shape_str(x.shape)}")
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not base > 1:
        raise ValueError(f"base must be a number > 1, got {base!r}")
    L, d = x.shape[-2:]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))      # (d/2,); Meta: .float()
    angles = torch.outer(torch.arange(L, dtype=torch.float64), freqs)             # (L, d/2)
    freqs_cis = torch.polar(torch.ones_like(angles), angles)                      # (L, d/2) complex128
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * freqs_cis).flatten(-2).to(x.dtype)             # (..., L, d)
