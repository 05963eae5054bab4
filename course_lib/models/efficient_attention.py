"""Cheaper self-attention for long sequences: local window, strided sparse and linear
(kernel) attention (chapter 10, ``ch10_capstone``).

Full attention compares every query with every key: time and memory grow
like ``L²``. The variants keep the shape of the output but look at less:

=========================  =========================================  ================
variant                    query ``i`` attends to key ``j`` when ...   cost
=========================  =========================================  ================
full                       always                                     ``O(L² d)``
local window (``w``)       ``|i − j| ≤ w``                            ``O(L w d)``
strided sparse (``w, s``)  ``|i − j| ≤ w`` or ``j mod s = s − 1``     ``O(L (w + L/s) d)``
linear (kernel)            always, with ``φ(q)·φ(k)`` for ``exp``      ``O(L d²)``
=========================  =========================================  ================

``causal=True`` adds ``j ≤ i`` to every rule (a decoder must not see the
future). ``key_mask`` (True = real token, False = padding), broadcastable to
``(..., L)``, removes padded keys. A query that has no allowed key gets a
zero output. All functions take ``Q, K, V`` of shape ``(..., L, d)`` (any
leading batch/head dimensions, one length ``L`` for queries and keys:
self-attention) and return ``(..., L, d_v)``.

Linear attention (Katharopoulos et al., 2020) replaces ``exp(q·k/√d)`` by
``φ(q)·φ(k)`` with ``φ(x) = elu(x) + 1 > 0``; then
``Σ_j φ(q_i)·φ(k_j) v_j = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ)``, and the ``d × d_v``
sum is computed once instead of an ``L × L`` matrix. It is a different
model, not an approximation of softmax attention that becomes exact.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F

from .._validate import check_positive_int, check_tensor
from .attention import MultiHeadAttention, masked_softmax

__all__ = ["full_attention", "local_window_mask", "strided_mask", "local_window_attention",
           "strided_attention", "linear_attention", "elu_feature_map", "EfficientSelfAttention",
           "swap_attention", "KINDS"]

KINDS = ("full", "local", "strided", "linear")
"""The attention kinds :class:`EfficientSelfAttention` implements."""


def _check_qkv(Q, K, V):
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        check_tensor(x, name, layout="(..., L, d)")
        if x.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., L, d), got shape "
                             f"{tuple(x.shape)}")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share the last dimension d, got {Q.shape[-1]} and {K.shape[-1]}")
    if not (Q.shape[-2] == K.shape[-2] == V.shape[-2]):
        raise ValueError("Q, K and V must share the length L (self-attention), got "
                         f"{Q.shape[-2]}, {K.shape[-2]}, {V.shape[-2]}")


def _check_key_mask(key_mask, L):
    if key_mask is None:
        return None
    if not isinstance(key_mask, torch.Tensor) or key_mask.dtype != torch.bool:
        raise TypeError(f"key_mask must be a boolean tensor (..., L) with True = real token, "
                        f"got {type(key_mask).__name__}"
                        + (f" of dtype {key_mask.dtype}" if isinstance(key_mask, torch.Tensor) else ""))
    if key_mask.shape[-1] != L:
        raise ValueError(f"key_mask must end in L={L}, got shape {tuple(key_mask.shape)}")
    return key_mask


def _check_window(window):
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f"window must be an int >= 0, got {window!r}")
    return window


def full_attention(Q, K, V, causal: bool = False, key_mask=None) -> torch.Tensor:
    """Ordinary softmax attention ``softmax(Q Kᵀ/√d) V``, the reference (chapter 10).

    Args:
        Q, K, V: ``(..., L, d)``, ``(..., L, d)``, ``(..., L, d_v)``.
        causal: query ``i`` sees only keys ``j ≤ i``.
        key_mask: optional boolean ``(..., L)``, True = real key.

    Returns:
        ``(..., L, d_v)``; builds the ``(..., L, L)`` score matrix.
    """
    _check_qkv(Q, K, V)
    L = Q.shape[-2]
    key_mask = _check_key_mask(key_mask, L)
    mask = torch.ones(L, L, dtype=torch.bool, device=Q.device)
    if causal:
        mask = torch.tril(mask)
    if key_mask is not None:
        mask = mask & key_mask.unsqueeze(-2)
    weights = masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), mask)
    return weights @ V


def local_window_mask(L: int, window: int, causal: bool = False) -> torch.Tensor:
    """Boolean ``(L, L)`` pattern of local attention: True where ``|i − j| ≤ window``
    (and ``j ≤ i`` if ``causal``); row ``i`` is query ``i`` (chapter 10)."""
    L = check_positive_int(L, "L")
    window = _check_window(window)
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    mask = (i - j).abs() <= window
    return mask & (j <= i) if causal else mask


def strided_mask(L: int, window: int, stride: int, causal: bool = False) -> torch.Tensor:
    """Boolean ``(L, L)`` pattern of strided sparse attention (chapter 10).

    True where ``|i − j| ≤ window`` (a local band) or ``j mod stride = stride − 1``
    (every ``stride``-th key is a "summary" position every query may read),
    and ``j ≤ i`` if ``causal`` (after Child et al., 2019, "fixed" pattern).
    """
    stride = check_positive_int(stride, "stride")
    mask = local_window_mask(L, window)
    mask = mask | (torch.arange(L) % stride == stride - 1)[None, :]
    return mask & torch.tril(torch.ones(L, L, dtype=torch.bool)) if causal else mask


def _band(x, w):
    """``(..., L, d)`` -> ``(..., L, 2w+1, d)``: row ``i`` holds ``x[i-w .. i+w]`` (zeros outside)."""
    xp = F.pad(x, (0, 0, w, w))
    return xp.unfold(-2, 2 * w + 1, 1).transpose(-1, -2)


def _band_scores(Q, K, w, causal, key_mask):
    L, d = Q.shape[-2], Q.shape[-1]
    scores = (Q.unsqueeze(-2) @ _band(K, w).transpose(-1, -2)).squeeze(-2) / math.sqrt(d)
    offset = torch.arange(-w, w + 1, device=Q.device)                     # j - i
    j = torch.arange(L, device=Q.device)[:, None] + offset[None, :]          # (L, 2w+1)
    valid = (j >= 0) & (j < L)
    if causal:
        valid = valid & (offset <= 0)
    if key_mask is not None:
        km = F.pad(key_mask.to(torch.int8), (w, w)).unfold(-1, 2 * w + 1, 1).bool()  # (..., L, 2w+1)
        valid = valid & km
    return scores, valid


def _softmax_rows(scores, valid):
    """Masked softmax; rows without a valid entry give zeros."""
    return masked_softmax(scores, valid.expand_as(scores) if valid.shape != scores.shape else valid)


def local_window_attention(Q, K, V, window: int, causal: bool = False, key_mask=None) -> torch.Tensor:
    """Attention restricted to a window: query ``i`` sees keys ``|i − j| ≤ window`` (chapter 10).

    Equal to :func:`full_attention` with :func:`local_window_mask`, but it
    never builds the ``L × L`` matrix: each query is compared with its
    ``2 window + 1`` neighbours only, ``O(L · window · d)`` time and memory.

    Args:
        Q, K, V: ``(..., L, d)``, ``(..., L, d)``, ``(..., L, d_v)``.
        window: ``w ≥ 0``; a window ``≥ L − 1`` is full attention.
        causal: also require ``j ≤ i``.
        key_mask: optional boolean ``(..., L)``, True = real key.

    Returns:
        ``(..., L, d_v)``.
    """
    _check_qkv(Q, K, V)
    w = min(_check_window(window), Q.shape[-2] - 1)
    key_mask = _check_key_mask(key_mask, Q.shape[-2])
    scores, valid = _band_scores(Q, K, w, causal, key_mask)
    weights = _softmax_rows(scores, valid)                                # (..., L, 2w+1)
    return (weights.unsqueeze(-2) @ _band(V, w)).squeeze(-2)


def strided_attention(Q, K, V, window: int, stride: int, causal: bool = False,
                      key_mask=None) -> torch.Tensor:
    """Strided sparse attention: a local band plus every ``stride``-th key (chapter 10).

    Equal to :func:`full_attention` with :func:`strided_mask`; costs
    ``O(L (window + L / stride) d)``: the band as in
    :func:`local_window_attention`, plus the ``⌈L / stride⌉`` summary keys
    ``j = stride − 1, 2 stride − 1, ...`` that are outside the band.

    Args:
        Q, K, V: ``(..., L, d)``, ``(..., L, d)``, ``(..., L, d_v)``.
        window: band half-width ``w ≥ 0``.
        stride: ``s ≥ 1``; ``s = 1`` is full attention.
        causal: also require ``j ≤ i``.
        key_mask: optional boolean ``(..., L)``, True = real key.

    Returns:
        ``(..., L, d_v)``.
    """
    _check_qkv(Q, K, V)
    stride = check_positive_int(stride, "stride")
    L = Q.shape[-2]
    w = min(_check_window(window), L - 1)
    key_mask = _check_key_mask(key_mask, L)
    band_scores, band_valid = _band_scores(Q, K, w, causal, key_mask)
    pos = torch.arange(stride - 1, L, stride, device=Q.device)               # summary keys (G,)
    g_scores = Q @ K[..., pos, :].transpose(-1, -2) / math.sqrt(Q.shape[-1])  # (..., L, G)
    i = torch.arange(L, device=Q.device)[:, None]
    g_valid = (i - pos[None, :]).abs() > w                                  # not already in the band
    if causal:
        g_valid = g_valid & (pos[None, :] <= i)
    if key_mask is not None:
        g_valid = g_valid & key_mask[..., pos].unsqueeze(-2)
    scores = torch.cat([band_scores, g_scores], dim=-1)
    valid = torch.cat([band_valid.expand(*scores.shape[:-1], band_scores.shape[-1]),
                       g_valid.expand(*scores.shape[:-1], len(pos))], dim=-1)
    weights = masked_softmax(scores, valid)
    wb, wg = weights[..., :2 * w + 1], weights[..., 2 * w + 1:]
    return (wb.unsqueeze(-2) @ _band(V, w)).squeeze(-2) + wg @ V[..., pos, :]


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """``φ(x) = elu(x) + 1``, elementwise and always positive (chapter 10)."""
    return F.elu(x) + 1


def linear_attention(Q, K, V, causal: bool = False, key_mask=None, eps: float = 1e-6) -> torch.Tensor:
    """Linear (kernel) attention with ``φ = elu + 1`` (chapter 10)::

        out_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z),   S = Σ_j φ(k_j) v_jᵀ  (d × d_v),   z = Σ_j φ(k_j)  (d,)

    The sums run over all keys, or over ``j ≤ i`` when ``causal`` (running
    sums, ``O(L d d_v)`` memory); padded keys (``key_mask`` False) are left out.

    Args:
        Q, K, V: ``(..., L, d)``, ``(..., L, d)``, ``(..., L, d_v)``.
        causal: query ``i`` sees only keys ``j ≤ i``.
        key_mask: optional boolean ``(..., L)``, True = real key.
        eps: added to the denominator.

    Returns:
        ``(..., L, d_v)``; no ``L × L`` matrix is built.
    """
    _check_qkv(Q, K, V)
    key_mask = _check_key_mask(key_mask, Q.shape[-2])
    phi_q, phi_k = elu_feature_map(Q), elu_feature_map(K)
    if key_mask is not None:
        phi_k = phi_k * key_mask.unsqueeze(-1).to(phi_k.dtype)
    if causal:
        S = torch.cumsum(phi_k.unsqueeze(-1) * V.unsqueeze(-2), dim=-3)      # (..., L, d, d_v)
        z = torch.cumsum(phi_k, dim=-2)                                       # (..., L, d)
        num = (phi_q.unsqueeze(-2) @ S).squeeze(-2)
    else:
        S = phi_k.transpose(-1, -2) @ V                                       # (..., d, d_v)
        z = phi_k.sum(dim=-2, keepdim=True)                                   # (..., 1, d)
        num = phi_q @ S
    den = (phi_q * z).sum(-1, keepdim=True)
    return num / (den + eps)


class EfficientSelfAttention(nn.Module):
    """Multi-head self-attention with a chosen attention kind (chapter 10).

    A drop-in replacement for :class:`~course_lib.models.MultiHeadAttention`
    inside an :class:`~course_lib.models.EncoderLayer` (same projections
    ``q_proj, k_proj, v_proj, out_proj``, same call), for self-attention.

    Args:
        d_model, num_heads: as in ``MultiHeadAttention``.
        kind: ``"full"``, ``"local"``, ``"strided"`` or ``"linear"``.
        window: half-width of the local band (``local``, ``strided``).
        stride: distance of the summary keys (``strided``).
        causal: apply a causal rule inside the attention.

    ``forward(query, key, value, mask=None, need_weights=False, cache=None)``:
    ``query``, ``key`` and ``value`` must be one tensor ``(B, L, d_model)``;
    ``mask`` may only be a padding mask ``(B, 1, 1, L)`` (True = real token),
    as :class:`~course_lib.models.BERT` passes. Returns ``(output, None)``:
    the variants never form the full weight matrix.
    """

    def __init__(self, d_model: int, num_heads: int, kind: str = "local", window: int = 2,
                 stride: int = 4, causal: bool = False):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.kind, self.window, self.causal = kind, _check_window(window), bool(causal)
        self.stride = check_positive_int(stride, "stride")
        self.mha = MultiHeadAttention(d_model, num_heads)
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.q_proj, self.k_proj = self.mha.q_proj, self.mha.k_proj
        self.v_proj, self.out_proj = self.mha.v_proj, self.mha.out_proj

    @classmethod
    def from_mha(cls, mha: MultiHeadAttention, **kwargs) -> "EfficientSelfAttention":
        """A copy of ``mha``'s weights with another attention ``kind`` (keyword arguments as above)."""
        if not isinstance(mha, MultiHeadAttention):
            raise TypeError(f"mha must be a MultiHeadAttention, got {type(mha).__name__}")
        new = cls(mha.d_model, mha.num_heads, **kwargs)
        new.mha.load_state_dict(mha.state_dict())
        return new

    def forward(self, query, key, value, mask=None, need_weights: bool = False, cache=None):
        if not (query is key is value):
            raise ValueError("query, key and value must be the same tensor (self-attention only)")
        if cache is not None:
            raise ValueError("cache is not supported by EfficientSelfAttention (use MultiHeadAttention)")
        check_tensor(query, "query", ndim=3, last_dim=self.d_model, layout="(B, L, d_model)")
        B, L, _ = query.shape
        key_mask = None
        if mask is not None:
            if mask.dtype != torch.bool or mask.ndim != 4 or mask.shape[1:3] != (1, 1) \
                    or mask.shape[-1] != L:
                raise ValueError(f"mask must be a boolean padding mask (B, 1, 1, L={L}), "
                                 f"got {mask.dtype} {tuple(mask.shape)}")
            key_mask = mask[:, :, 0, :]                                       # (B, 1, L)
        Q, K, V = (self.mha.split_heads(p(query)) for p in (self.q_proj, self.k_proj, self.v_proj))
        if self.kind == "full":
            heads = full_attention(Q, K, V, self.causal, key_mask)
        elif self.kind == "local":
            heads = local_window_attention(Q, K, V, self.window, self.causal, key_mask)
        elif self.kind == "strided":
            heads = strided_attention(Q, K, V, self.window, self.stride, self.causal, key_mask)
        else:
            heads = linear_attention(Q, K, V, self.causal, key_mask)
        return self.out_proj(self.mha.merge_heads(heads)), None


def swap_attention(model: nn.Module, **kwargs) -> nn.Module:
    """A copy of ``model`` in which every encoder layer's ``self_attn`` is an
    :class:`EfficientSelfAttention` with the same weights (chapter 10).

    Args:
        model: a module holding :class:`~course_lib.models.EncoderLayer` s
            (e.g. :class:`~course_lib.models.BertClassifier`); not changed.
        **kwargs: ``kind``, ``window``, ``stride``, ``causal``.
    """
    from .layers import EncoderLayer
    model = copy.deepcopy(model)
    layers = [m for m in model.modules() if isinstance(m, EncoderLayer)]
    if not layers:
        raise ValueError("model must contain at least one EncoderLayer")
    for layer in layers:
        layer.self_attn = EfficientSelfAttention.from_mha(layer.self_attn, **kwargs)
    return model
