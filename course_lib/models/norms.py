"""RMSNorm, SwiGLU and a LLaMA-style decoder block as PyTorch modules.

The formulas, in NumPy, are in :mod:`course_lib.scratch.norms`:

- ``RMSNorm(x) = x / sqrt(mean(x²) + eps) ⊙ g`` (no mean subtracted, no bias);
- ``SwiGLU(x) = (SiLU(x W_1) ⊙ x W_3) W_2`` (LLaMA's ``w1``, ``w3``, ``w2``).

:class:`LlamaBlock` puts them together with grouped-query attention and
rotary positions, the block of LLaMA-2/3 and Mistral::

    pre-norm  (norm_first=True, LLaMA):  x = x + attn(norm1(x));  x = x + ffn(norm2(x))
    post-norm (norm_first=False, 2017):  x = norm1(x + attn(x));  x = norm2(x + ffn(x))

For the pre-LN vs post-LN experiment with chapter 5's LayerNorm layer, use
:class:`course_lib.models.layers.EncoderLayer`, which already has
``norm_first``; ``norm_first`` here is the same switch for the modern block.
There is no dropout: LLaMA trains without it.

Chapter 11, *Attention today*.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .._validate import check_positive_int, check_positive_number, check_tensor
from .attention import KVCache
from .gqa import GroupedQueryAttention
from .rope import RotaryEmbedding

__all__ = ["RMSNorm", "SwiGLU", "LlamaBlock"]


class RMSNorm(nn.Module):
    """Root-mean-square normalisation, ``x / sqrt(mean(x²) + eps) ⊙ weight``.

    Args:
        d_model: width ``d`` of the vectors (the last dimension).
        eps: added under the square root (LLaMA-2/3: ``1e-5``).

    Attributes:
        weight: ``(d_model,)`` gain ``g``, initialised to ones.
        eps: as above.

    Chapter 11, *Attention today*; ``torch.nn.RMSNorm`` computes the same.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.d_model = check_positive_int(d_model, "d_model")
        self.eps = check_positive_number(eps, "eps")
        self.weight = nn.Parameter(torch.ones(d_model))

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps:g}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(..., d_model)`` -> ``(..., d_model)``, rows rescaled to RMS ≈ 1, times ``weight``."""
        check_tensor(x, "x", last_dim=self.d_model, layout=f"(..., d_model={self.d_model})")
        ms = x.pow(2).mean(dim=-1, keepdim=True)           # (..., 1)
        return x * torch.rsqrt(ms + self.eps) * self.weight   # (..., d_model)


class SwiGLU(nn.Module):
    """The gated feed-forward network ``w2(SiLU(w1(x)) ⊙ w3(x))``.

    Args:
        d_model: width of the inputs and outputs.
        d_ff: hidden width (LLaMA-2-7B: 11008 for ``d_model`` 4096, about
            ``(2/3)·4·d_model`` rounded up to a multiple of 256).
        bias: whether the three projections have biases (LLaMA: no).

    Attributes:
        w1: ``nn.Linear(d_model, d_ff)``, the gate; ``w1.weight.T`` is ``W_1``.
        w3: ``nn.Linear(d_model, d_ff)``, the up projection ``W_3``.
        w2: ``nn.Linear(d_ff, d_model)``, the down projection ``W_2``.

    Chapter 11, *Attention today*.
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = False):
        super().__init__()
        self.d_model = check_positive_int(d_model, "d_model")
        d_ff = check_positive_int(d_ff, "d_ff")
        self.w1 = nn.Linear(d_model, d_ff, bias=bias)
        self.w3 = nn.Linear(d_model, d_ff, bias=bias)
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(..., d_model)`` -> ``(..., d_model)``."""
        check_tensor(x, "x", last_dim=self.d_model, layout=f"(..., d_model={self.d_model})")
        return self.w2(F.silu(self.w1(x)) * self.w3(x))    # (..., d_ff) -> (..., d_model)


class LlamaBlock(nn.Module):
    """One decoder block of a LLaMA-style model: RMSNorm, GQA with RoPE, SwiGLU.

    Args:
        d_model: width of the residual stream.
        num_heads: query heads; ``d_k = d_model // num_heads``.
        num_kv_heads: key/value heads (``num_heads``: MHA; 1: MQA).
        d_ff: SwiGLU hidden width.
        rope: optional shared :class:`~course_lib.models.rope.RotaryEmbedding`
            of width ``d_k``; None gives attention without positions.
        norm_first: True (pre-norm, LLaMA) or False (post-norm, 2017).
        eps: the RMSNorms' ``eps``.

    Attributes:
        norm1, attn, norm2, ffn: :class:`RMSNorm`,
            :class:`~course_lib.models.gqa.GroupedQueryAttention`,
            :class:`RMSNorm`, :class:`SwiGLU`.
        norm_first: as above.

    Chapter 11, *Attention today*.
    """

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, d_ff: int,
                 rope: RotaryEmbedding | None = None, norm_first: bool = True, eps: float = 1e-6):
        super().__init__()
        if not isinstance(norm_first, bool):
            raise TypeError(f"norm_first must be True or False, got {type(norm_first).__name__}")
        self.norm_first = norm_first
        self.attn = GroupedQueryAttention(d_model, num_heads, num_kv_heads, bias=False, rope=rope)
        self.ffn = SwiGLU(d_model, d_ff)
        self.norm1 = RMSNorm(d_model, eps)
        self.norm2 = RMSNorm(d_model, eps)

    def forward(self, x: torch.Tensor, mask=None, causal: bool = True,
                cache: KVCache | None = None) -> torch.Tensor:
        """Run the block.

        Args:
            x: ``(B, L, d_model)``.
            mask: optional boolean broadcastable to ``(B, num_heads, L, L_k)``.
            causal: hide future tokens (a decoder: True).
            cache: optional :class:`~course_lib.models.attention.KVCache` for
                this block's attention.

        Returns:
            ``(B, L, d_model)``.
        """
        def attend(h):
            return self.attn(h, mask=mask, causal=causal, cache=cache)[0]   # (B, L, d_model)

        if self.norm_first:
            x = x + attend(self.norm1(x))                  # (B, L, d_model)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + attend(x))
        return self.norm2(x + self.ffn(x))
