"""Tiled attention with an online softmax (FlashAttention's forward pass) in NumPy.

Full attention builds the ``L_q × L_k`` score matrix, exponentiates it and
multiplies by ``V``: its memory grows like ``L²``. FlashAttention (Dao et
al., 2022) never holds more than one ``block × block`` tile of scores. The
trick is a softmax that can be computed **online**, one block of keys at a
time. For one query row keep three running quantities: the largest score
seen so far ``m``, the sum ``ℓ = Σ_j e^{s_j − m}``, and the unnormalised
output ``a = Σ_j e^{s_j − m} v_j``. A new block of scores ``s'`` with values
``V'`` updates them:

.. math::

    m_{new} = \\max(m, \\max_j s'_j), \\quad
    c = e^{m - m_{new}}, \\quad
    \\ell \\leftarrow c\\,\\ell + \\textstyle\\sum_j e^{s'_j - m_{new}}, \\quad
    a \\leftarrow c\\,a + \\textstyle\\sum_j e^{s'_j - m_{new}} v'_j .

The factor ``c`` rescales what was accumulated against the old maximum to the
new one (it is what keeps ``exp`` from overflowing, as the maximum subtracted
in chapter 2's softmax). After the last block, ``a / ℓ`` is exactly
``softmax(q K^T / sqrt(d_k)) V``: the same numbers, in a different order, so
the result equals full attention up to rounding. Working memory is a few
tiles, ``O(block²)``, plus the output, instead of ``O(L_q L_k)``.

Chapter 11, *Attention today*; :mod:`course_lib.models.tiled_attention` is
the PyTorch twin, and ``tools/bench_tiled.py`` measures the memory.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import check_positive_int, shape_str
from .attention import _check_qkv

__all__ = ["tiled_attention"]


def _check_inputs(Q, K, V, mask):
    Q, K, V, batch = _check_qkv(Q, K, V)                   # chapter 2's checks of Q, K and V
    scores_shape = batch + (Q.shape[-2], K.shape[-2])
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype != np.bool_:
            raise TypeError(f"mask must be boolean with True meaning 'may attend', "
                            f"got dtype {m.dtype}")
        try:
            ok = np.broadcast_shapes(m.shape, scores_shape) == scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"mask must be broadcastable to the scores' shape "
                             f"{shape_str(scores_shape)} (..., L_q, L_k), got {shape_str(m.shape)}")
        mask = np.broadcast_to(m, scores_shape)            # a view: no L_q x L_k copy
    return Q, K, V, batch, mask


def tiled_attention(Q, K, V, block_size: int = 64, mask=None, causal: bool = False) -> np.ndarray:
    """``softmax(Q K^T / sqrt(d_k)) V``, one ``block_size × block_size`` tile at a time.

    Args:
        Q: ``(..., L_q, d_k)`` queries.
        K: ``(..., L_k, d_k)`` keys.
        V: ``(..., L_k, d_v)`` values. Leading batch dimensions broadcast;
            all three share one float dtype.
        block_size: rows of queries and of keys per tile (FlashAttention's
            ``B_r = B_c``); any length works, the last tile may be shorter.
        mask: optional boolean, broadcastable to ``(..., L_q, L_k)``; True =
            "may attend" (the book's convention).
        causal: also hide future keys. Queries are the *last* ``L_q`` of the
            ``L_k`` positions (as with a KV cache, and chapter 5's
            ``causal_mask(L_q, offset=L_k - L_q)``): query ``i`` sees key
            ``j`` when ``j <= i + L_k - L_q``. Tiles entirely in the future
            are skipped. (PyTorch's ``is_causal`` aligns top-left instead;
            the two agree when ``L_q == L_k``.)

    Returns:
        ``(..., L_q, d_v)`` array with the inputs' dtype, equal to full
        attention up to rounding. A query with no allowed key gets a zero
        row (not NaN), as in :func:`course_lib.scratch.scaled_dot_product_attention`.

    Raises:
        TypeError: non-numeric inputs, a non-boolean mask, ``block_size`` or
            ``causal`` of the wrong type.
        ValueError: mismatched shapes or dtypes, NaN/inf, ``block_size < 1``.

    Chapter 11, *Attention today*.
    """
    Q, K, V, batch, mask = _check_inputs(Q, K, V, mask)
    block = check_positive_int(block_size, "block_size")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {type(causal).__name__} {causal!r}")
    L_q, d_k = Q.shape[-2:]
    L_k, d_v = V.shape[-2:]
    offset = L_k - L_q                                     # query i sits at position offset + i
    scale = np.asarray(1.0 / math.sqrt(d_k), dtype=Q.dtype)
    out = np.zeros(batch + (L_q, d_v), dtype=Q.dtype)     # (..., L_q, d_v)
    for q0 in range(0, L_q, block):
        q1 = min(q0 + block, L_q)
        Qb = Q[..., q0:q1, :] * scale                      # (..., Bq, d_k), scaled once per block
        m = np.full(batch + (q1 - q0, 1), -np.inf, dtype=Q.dtype)   # (..., Bq, 1) running max
        ell = np.zeros(batch + (q1 - q0, 1), dtype=Q.dtype)         # (..., Bq, 1) running sum
        acc = np.zeros(batch + (q1 - q0, d_v), dtype=Q.dtype)       # (..., Bq, d_v)
        k_end = min(L_k, q1 + offset) if causal else L_k   # later keys are all in the future
        for k0 in range(0, k_end, block):
            k1 = min(k0 + block, L_k)
            # (..., Bq, d_k) @ (..., d_k, Bk) -> (..., Bq, Bk)
            s = Qb @ np.swapaxes(K[..., k0:k1, :], -1, -2)
            allowed = None if mask is None else mask[..., q0:q1, k0:k1]  # (..., Bq, Bk)
            if causal:
                future = (np.arange(k0, k1)[None, :]
                          > np.arange(q0, q1)[:, None] + offset)       # (Bq, Bk)
                allowed = ~future if allowed is None else allowed & ~future
            if allowed is not None:
                s = np.where(allowed, s, -np.inf)                      # (..., Bq, Bk)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))      # (..., Bq, 1)
            safe = np.where(np.isfinite(m_new), m_new, 0.0)           # all -inf so far: no shift
            p = np.exp(s - safe)                                       # (..., Bq, Bk); exp(-inf) = 0
            c = np.exp(m - safe)                                       # (..., Bq, 1) rescale old sums
            ell = c * ell + p.sum(axis=-1, keepdims=True)              # (..., Bq, 1)
            # (..., Bq, Bk) @ (..., Bk, d_v) -> (..., Bq, d_v)
            acc = c * acc + p @ V[..., k0:k1, :]
            m = m_new
        np.divide(acc, ell, out=out[..., q0:q1, :], where=ell > 0)    # (..., Bq, d_v); empty rows stay 0
    return out
