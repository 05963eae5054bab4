"""Multi-head attention as a trainable PyTorch module.

The NumPy version, :func:`course_lib.scratch.multi_head_attention`, spells
out the formula of chapter 3 (*Multi-head attention*, ``ch03_multi_head``);
this module computes the same thing on batches, with gradients, and can
copy its weights from ``torch.nn.MultiheadAttention``. Masks are boolean with True = "may attend",
the book's convention (``nn.MultiheadAttention`` uses the opposite one).

Two details matter later in the book:

- a query row whose mask is all False gets zero weights and a zero
  attention result (so the module outputs just ``out_proj``'s bias), not
  NaN: a padded query in chapter 5 can have nothing to look at;
- :class:`KVCache` lets GPT (chapter 8) and the Transformer's greedy decoder
  (chapter 5) project each position's keys and values only once.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validate import check_bool_mask, check_probability, check_positive_int, check_tensor, shape_str

__all__ = ["MultiHeadAttention", "KVCache", "masked_softmax"]


def _open_empty_rows(mask: torch.Tensor):
    """Let each fully masked query row see every key; return the new mask and those rows.

    A softmax over a row of ``-inf`` is NaN. Opening such rows and zeroing
    their result afterwards gives zeros instead, and keeps gradients finite.
    """
    empty = ~mask.any(dim=-1, keepdim=True)                # (..., L_q, 1)
    return mask | empty, empty


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the keys where ``mask`` is True; zero elsewhere.

    Args:
        scores: ``(..., L_q, L_k)`` attention logits.
        mask: None, or boolean broadcastable to ``scores``; True = may attend.

    Returns:
        ``(..., L_q, L_k)`` weights; each row sums to 1, or is all zeros when
        its mask row is all False. The PyTorch twin of
        :func:`course_lib.scratch.masked_softmax` (chapter 2; chapter 5
        explains why a padded query can have nothing to attend to).
    """
    if mask is None:
        return scores.softmax(dim=-1)
    mask, empty = _open_empty_rows(mask)
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1).masked_fill(empty, 0.0)


class KVCache:
    """The keys and values one attention layer has already computed.

    When a decoder generates token by token, the keys and values of earlier
    positions never change, so they are projected once and kept here; each
    step appends the new position's ``K`` and ``V`` and attends over all of
    them. Use one cache per attention layer and per generated batch
    (chapter 8 shows why: each step then computes one row of attention
    instead of recomputing the whole ``L x L`` block; chapter 5's
    :meth:`~course_lib.models.Transformer.greedy_decode` uses it too).

    Attributes:
        K: ``(B, num_heads, L_cached, d_k)`` or None while empty.
        V: ``(B, num_heads, L_cached, d_k)`` or None while empty.
    """

    def __init__(self):
        self.K: torch.Tensor | None = None
        self.V: torch.Tensor | None = None

    def __len__(self) -> int:
        """The number of cached positions, ``L_cached``."""
        return 0 if self.K is None else self.K.shape[-2]

    def update(self, K: torch.Tensor, V: torch.Tensor):
        """Append new keys and values; return all cached ones (chapter 8).

        Args:
            K: ``(B, num_heads, L_new, d_k)`` keys of the new positions.
            V: ``(B, num_heads, L_new, d_k)`` their values.

        Returns:
            ``(K, V)``, each ``(B, num_heads, L_cached + L_new, d_k)``.

        Raises:
            ValueError: ``K`` or ``V`` is not a 4-D tensor, or does not match the cache.
        """
        for name, t in (("K", K), ("V", V)):
            if not isinstance(t, torch.Tensor) or t.dim() != 4:
                got = shape_str(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must be a (B, num_heads, L_new, d_k) tensor, got {got}")
        if self.K is not None:
            if K.shape[:-2] != self.K.shape[:-2] or K.shape[-1] != self.K.shape[-1]:
                raise ValueError(f"cache holds keys of shape {shape_str(self.K.shape)} "
                                 "(B, num_heads, L_cached, d_k); new keys must match B, "
                                 f"num_heads and d_k, got {shape_str(K.shape)}")
            K = torch.cat([self.K, K], dim=-2)      # (B, num_heads, L_cached + L_new, d_k)
            V = torch.cat([self.V, V], dim=-2)      # (B, num_heads, L_cached + L_new, d_k)
        self.K, self.V = K, V
        return K, V


class MultiHeadAttention(nn.Module):
    """Multi-head attention, ``Concat(head_1, ..., head_h) W_O`` (chapter 3).

    Args:
        d_model: width of the inputs and outputs.
        num_heads: number of heads ``h``; must divide ``d_model``, and each
            head has width ``d_k = d_model // num_heads``.
        dropout: probability of dropping an attention weight (training only).
        bias: whether the four projections have biases.

    Attributes:
        q_proj, k_proj, v_proj, out_proj: ``nn.Linear(d_model, d_model)``;
            ``q_proj.weight.T`` is the book's ``W_Q`` (likewise ``W_K``,
            ``W_V``, ``W_O``). The names are those of ``nn.MultiheadAttention``
            and Hugging Face, whose weights :meth:`from_torch` and the
            models' ``from_hf`` copy by name.
        num_heads, d_k, d_model, dropout: as above.

    ``forward(query (B, L_q, d_model), key (B, L_k, d_model), value (B, L_k,
    d_model))`` returns ``(output (B, L_q, d_model), weights (B, num_heads,
    L_q, L_k) or None)``.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        d_model = check_positive_int(d_model, "d_model")
        num_heads = check_positive_int(num_heads, "num_heads")
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.dropout = check_probability(dropout, "dropout")
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """Cut the features into heads (chapter 3).

        Args:
            x: ``(B, L, d_model)``.

        Returns:
            ``(B, num_heads, L, d_k)``; head ``i`` holds features ``i*d_k : (i+1)*d_k``.
        """
        x = x.unflatten(-1, (self.num_heads, self.d_k))   # (B, L, num_heads, d_k)
        return x.transpose(1, 2)                          # (B, num_heads, L, d_k)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """Concatenate the heads again, undoing :meth:`split_heads` (chapter 3).

        Args:
            x: ``(B, num_heads, L, d_k)``.

        Returns:
            ``(B, L, d_model)``.
        """
        x = x.transpose(1, 2)                             # (B, L, num_heads, d_k)
        return x.flatten(-2)                              # (B, L, d_model)

    def _check_inputs(self, query, key, value) -> None:
        dtype = self.q_proj.weight.dtype
        for name, x, L in (("query", query, "L_q"), ("key", key, "L_k"), ("value", value, "L_k")):
            check_tensor(x, name, ndim=3, last_dim=self.d_model,
                         layout=f"(B, {L}, d_model={self.d_model})")
            if x.dtype != dtype:
                raise TypeError(f"{name} must have the module's dtype {dtype}, got {x.dtype}")
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ValueError("query (B, L_q, d_model), key and value (B, L_k, d_model) must share B, "
                             "and key and value must share L_k; got query "
                             f"{shape_str(query.shape)}, key {shape_str(key.shape)}, "
                             f"value {shape_str(value.shape)}")

    def forward(self, query, key, value, mask=None, need_weights: bool = False,
                cache: KVCache | None = None):
        """Attend from ``query`` to ``key``/``value`` (chapter 3).

        Args:
            query: ``(B, L_q, d_model)``.
            key: ``(B, L_k, d_model)``.
            value: ``(B, L_k, d_model)``. For self-attention pass one tensor
                three times.
            mask: optional boolean, broadcastable to ``(B, num_heads, L_q,
                L_k)``; True means "may attend". With a ``cache``, ``L_k``
                counts the cached positions too.
            need_weights: also return the attention weights. Without them the
                fused ``F.scaled_dot_product_attention`` kernel is used.
            cache: optional :class:`KVCache` for incremental self-attention:
                the new keys and values are appended to it and ``query``
                attends over every cached position.

        Returns:
            ``(output, weights)``: ``output`` is ``(B, L_q, d_model)``;
            ``weights`` is ``(B, num_heads, L_q, L_k)`` (before dropout), one
            map per head, or None unless ``need_weights``.
        """
        self._check_inputs(query, key, value)
        if mask is not None:
            L_k = key.shape[1] + (len(cache) if cache is not None else 0)
            check_bool_mask(mask, "mask", (query.shape[0], self.num_heads, query.shape[1], L_k))
        Q = self.split_heads(self.q_proj(query))    # (B, num_heads, L_q, d_k)
        K = self.split_heads(self.k_proj(key))      # (B, num_heads, L_k, d_k)
        V = self.split_heads(self.v_proj(value))    # (B, num_heads, L_k, d_k)
        if cache is not None:
            K, V = cache.update(K, V)               # (B, num_heads, L_cached + L_k, d_k)
        p = self.dropout if self.training else 0.0

        if need_weights:
            scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)   # (B, num_heads, L_q, L_k)
            weights = masked_softmax(scores, mask)                   # (B, num_heads, L_q, L_k)
            heads = F.dropout(weights, p) @ V                        # (B, num_heads, L_q, d_k)
        elif mask is None:                                           # fused kernel, same heads:
            weights, heads = None, F.scaled_dot_product_attention(Q, K, V, dropout_p=p)
        else:                                                        # heads: (B, num_heads, L_q, d_k)
            open_mask, empty = _open_empty_rows(mask)
            heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=open_mask, dropout_p=p)
            weights, heads = None, heads.masked_fill(empty, 0.0)
        return self.out_proj(self.merge_heads(heads)), weights      # (B, L_q, d_model)

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> "MultiHeadAttention":
        """A :class:`MultiHeadAttention` with the weights of ``m`` (chapter 3).

        Args:
            m: a ``torch.nn.MultiheadAttention`` with ``kdim == vdim ==
                embed_dim`` and neither ``add_bias_kv`` nor ``add_zero_attn``.
                Its ``batch_first`` does not matter: only weights are copied.
                Its ``in_proj_weight`` ``(3 d_model, d_model)`` is split into
                ``q_proj``, ``k_proj`` and ``v_proj``.

        Returns:
            A :class:`MultiHeadAttention` computing what ``m`` computes (with
            the book's True = may-attend masks).
        """
        if not isinstance(m, nn.MultiheadAttention):
            raise TypeError(f"m must be a torch.nn.MultiheadAttention, got {type(m).__name__}")
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise ValueError("m must have kdim == vdim == embed_dim and no add_bias_kv or "
                             "add_zero_attn; those variants are not covered by the book")
        bias = m.in_proj_bias is not None
        ours = cls(m.embed_dim, m.num_heads, dropout=m.dropout, bias=bias).to(m.in_proj_weight)
        biases = m.in_proj_bias.chunk(3) if bias else (None,) * 3     # 3 x (d_model,)
        with torch.no_grad():
            for proj, W, b in zip((ours.q_proj, ours.k_proj, ours.v_proj),
                                  m.in_proj_weight.chunk(3), biases):  # 3 x (d_model, d_model)
                proj.weight.copy_(W)
                if b is not None:
                    proj.bias.copy_(b)
            ours.out_proj.load_state_dict(m.out_proj.state_dict())
        return ours
