"""Grouped-query attention (Ainslie et al., 2023): fewer keys and values than queries.

When a decoder generates, its KV cache (chapter 8) stores a key and a value
per layer, per head and per token; for a large model and a long context that
cache, not the weights, fills the accelerator. Grouped-query attention keeps
``num_heads`` query heads but only ``num_kv_heads`` key/value heads; each
group of ``g = num_heads / num_kv_heads`` query heads shares one::

    query head h  uses  key/value head  h // g        (h = 0 .. num_heads − 1)

``num_kv_heads == num_heads`` is multi-head attention (chapter 3),
``num_kv_heads == 1`` is multi-query attention (Shazeer, 2019), and the cache
shrinks by the factor ``g``. Llama-3-8B uses 32 query heads and 8 KV heads.

The keys and values are never copied ``g`` times: the queries are viewed
as ``(B, num_kv_heads, g, L_q, d_k)`` and each group meets its single
``(L_k, d_k)`` key matrix by broadcasting. This is the order of PyTorch's
``scaled_dot_product_attention(..., enable_gqa=True)`` and of
``repeat_interleave`` along the head axis.

Chapter 11, *Attention today*.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._validate import check_bool_mask, check_positive_int, check_tensor, shape_str
from .attention import KVCache, masked_softmax
from .rope import RotaryEmbedding

__all__ = ["GroupedQueryAttention", "kv_cache_bytes_per_token"]


def kv_cache_bytes_per_token(num_layers: int, num_kv_heads: int, d_k: int,
                             bytes_per_value: int = 2) -> int:
    """Bytes the KV cache grows by for every generated token.

    ``2 (a key and a value) × num_layers × num_kv_heads × d_k × bytes_per_value``.

    Args:
        num_layers: decoder layers, each with its own cache.
        num_kv_heads: key/value heads per layer (``num_heads`` for MHA, 1 for MQA).
        d_k: width of one head.
        bytes_per_value: 2 for float16/bfloat16 (the usual), 4 for float32,
            1 for an 8-bit cache.

    Returns:
        An ``int``, per token and per sequence; multiply by the context
        length and the batch size for the whole cache.

    Raises:
        TypeError, ValueError: an argument that is not a positive integer.

    Chapter 11, *Attention today*.
    """
    num_layers = check_positive_int(num_layers, "num_layers")
    num_kv_heads = check_positive_int(num_kv_heads, "num_kv_heads")
    d_k = check_positive_int(d_k, "d_k")
    bytes_per_value = check_positive_int(bytes_per_value, "bytes_per_value")
    return 2 * num_layers * num_kv_heads * d_k * bytes_per_value


class GroupedQueryAttention(nn.Module):
    """Causal-capable self-attention with ``num_kv_heads`` shared key/value heads.

    Args:
        d_model: width of the inputs and outputs.
        num_heads: query heads; must divide ``d_model``, ``d_k = d_model // num_heads``.
        num_kv_heads: key/value heads; must divide ``num_heads``.
            ``num_heads`` gives MHA, 1 gives MQA.
        bias: whether the four projections have biases (LLaMA: no).
        rope: optional :class:`~course_lib.models.rope.RotaryEmbedding` of
            width ``d_k``, applied to queries and keys (before caching).

    Attributes:
        q_proj: ``nn.Linear(d_model, num_heads * d_k)``; ``q_proj.weight.T`` is ``W_Q``.
        k_proj, v_proj: ``nn.Linear(d_model, num_kv_heads * d_k)``.
        out_proj: ``nn.Linear(d_model, d_model)``, ``W_O``. The names match
            :class:`~course_lib.models.attention.MultiHeadAttention`, so with
            ``num_kv_heads == num_heads`` its ``state_dict`` loads as is.
        d_model, num_heads, num_kv_heads, d_k, rope: as above.

    Chapter 11, *Attention today*.
    """

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, bias: bool = False,
                 rope: RotaryEmbedding | None = None):
        super().__init__()
        d_model = check_positive_int(d_model, "d_model")
        num_heads = check_positive_int(num_heads, "num_heads")
        num_kv_heads = check_positive_int(num_kv_heads, "num_kv_heads")
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads} "
                             "(each key/value head serves a whole group of query heads)")
        d_k = d_model // num_heads
        if rope is not None:
            if not isinstance(rope, RotaryEmbedding):
                raise TypeError(f"rope must be None or a RotaryEmbedding, got {type(rope).__name__}")
            if rope.d_k != d_k:
                raise ValueError(f"rope must rotate vectors of width d_k = d_model // num_heads = {d_k}, "
                                 f"got a RotaryEmbedding with d_k={rope.d_k}")
        self.d_model, self.num_heads, self.num_kv_heads, self.d_k = d_model, num_heads, num_kv_heads, d_k
        self.q_proj = nn.Linear(d_model, num_heads * d_k, bias=bias)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.out_proj = nn.Linear(num_heads * d_k, d_model, bias=bias)
        self.rope = rope

    def forward(self, x, mask=None, causal: bool = False, cache: KVCache | None = None,
                need_weights: bool = False):
        """Self-attention of ``x`` over itself (and over the cached tokens).

        Args:
            x: ``(B, L, d_model)``, the new tokens.
            mask: optional boolean broadcastable to ``(B, num_heads, L, L_k)``,
                True = may attend; ``L_k = len(cache) + L`` with a cache.
            causal: also hide future tokens: new token ``i`` (at position
                ``len(cache) + i``) sees key ``j`` when ``j <= len(cache) + i``.
            cache: optional :class:`~course_lib.models.attention.KVCache`; it
                stores ``(B, num_kv_heads, L_k, d_k)`` keys (already rotated
                by RoPE) and values, ``num_heads / num_kv_heads`` times
                smaller than for MHA.
            need_weights: also return the attention weights.

        Returns:
            ``(output, weights)``: ``output`` is ``(B, L, d_model)``;
            ``weights`` is ``(B, num_heads, L, L_k)`` or None. A query with
            no allowed key gets zero weights (not NaN).
        """
        check_tensor(x, "x", ndim=3, last_dim=self.d_model, layout=f"(B, L, d_model={self.d_model})")
        if x.dtype != self.q_proj.weight.dtype:
            raise TypeError(f"x must have the module's dtype {self.q_proj.weight.dtype}, got {x.dtype}")
        if not isinstance(causal, bool):
            raise TypeError(f"causal must be True or False, got {type(causal).__name__} {causal!r}")
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be None or a KVCache, got {type(cache).__name__}")
        B, L, _ = x.shape
        past = len(cache) if cache is not None else 0
        L_k = past + L
        if mask is not None:
            check_bool_mask(mask, "mask", (B, self.num_heads, L, L_k))
        if cache is not None and past and cache.K.shape[1] != self.num_kv_heads:
            raise ValueError(f"cache holds {cache.K.shape[1]} key/value heads "
                             f"{shape_str(cache.K.shape)}; this layer has num_kv_heads={self.num_kv_heads}")

        Q = self.q_proj(x).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)     # (B, nh, L, d_k)
        K = self.k_proj(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)  # (B, nkv, L, d_k)
        V = self.v_proj(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)  # (B, nkv, L, d_k)
        if self.rope is not None:
            Q, K = self.rope(Q, offset=past), self.rope(K, offset=past)
        if cache is not None:
            K, V = cache.update(K, V)                       # (B, nkv, L_k, d_k) each

        g = self.num_heads // self.num_kv_heads
        Qg = Q.unflatten(1, (self.num_kv_heads, g))         # (B, nkv, g, L, d_k)
        # (B, nkv, g, L, d_k) @ (B, nkv, 1, d_k, L_k) -> (B, nkv, g, L, L_k): one K per group
        scores = Qg @ K.unsqueeze(2).transpose(-2, -1)
        scores = scores.flatten(1, 2) / math.sqrt(self.d_k)  # (B, nh, L, L_k)
        if causal:
            seen = torch.ones(L, L_k, dtype=torch.bool, device=x.device).tril(past)  # (L, L_k): j <= past + i
            mask = seen if mask is None else mask & seen
        weights = masked_softmax(scores, mask)               # (B, nh, L, L_k)
        # (B, nkv, g, L, L_k) @ (B, nkv, 1, L_k, d_k) -> (B, nkv, g, L, d_k)
        heads = weights.unflatten(1, (self.num_kv_heads, g)) @ V.unsqueeze(2)
        heads = heads.flatten(1, 2).transpose(1, 2).flatten(-2)   # (B, nh, L, d_k) -> (B, L, nh * d_k)
        return self.out_proj(heads), (weights if need_weights else None)
