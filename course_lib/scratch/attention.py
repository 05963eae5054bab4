"""Scaled dot-product attention in NumPy, exactly as the formula reads.

.. math::

    \\operatorname{Attention}(Q, K, V) = \\operatorname{softmax}\\!\\left(
        \\frac{Q K^\\top}{\\sqrt{d_k}}\\right) V

Chapter 2 (*Worked Q/K/V examples*) computes every step by hand and then
calls these functions; chapter 3 builds multi-head attention on top of them.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_real_array, check_finite, shape_str

__all__ = ["softmax", "masked_softmax", "attention_scores", "scaled_dot_product_attention"]


def _check_axis(axis, ndim: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {type(axis).__name__}")
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"axis must be in [{-ndim}, {ndim - 1}] for an input of "
                         f"{ndim} dimension(s), got {axis}")
    return int(axis)


def _check_mask(mask, target_shape: tuple, name: str = "mask") -> np.ndarray:
    """A boolean mask broadcastable to ``target_shape`` (True = may attend)."""
    if mask is None:
        raise TypeError(f"{name} must be a boolean array, got None")
    m = np.asarray(mask.detach().cpu().numpy() if hasattr(mask, "detach") else mask)
    if m.dtype != np.bool_:
        raise TypeError(f"{name} must be boolean with True meaning 'may attend' "
                        f"(as PyTorch's boolean attn_mask), got dtype {m.dtype}")
    try:
        np.broadcast_shapes(m.shape, target_shape)
        if np.broadcast_shapes(m.shape, target_shape) != tuple(target_shape):
            raise ValueError
    except ValueError:
        raise ValueError(f"{name} must be broadcastable to the scores' shape "
                         f"{shape_str(target_shape)} (..., L_q, L_k), "
                         f"got {shape_str(m.shape)}") from None
    return np.broadcast_to(m, target_shape)


def masked_softmax(x, mask, axis: int = -1) -> np.ndarray:
    """Softmax over the entries where ``mask`` is True; zero elsewhere.

    A slice with no True entry (a fully masked row) gets all-zero weights,
    not NaN: nothing may be attended, so nothing is.

    Args:
        x: real array of logits, any shape ``S``.
        mask: boolean array broadcastable to ``S``; True means "may attend".
        axis: the axis that sums to one.

    Returns:
        Array of shape ``S``: each slice along ``axis`` sums to 1, or to 0 if
        fully masked.

    Chapter 2 masks a score before the softmax; chapter 5 uses it for
    padding and causal masks.
    """
    x = as_real_array(x, "x")
    check_finite(x, "x", allow_neg_inf=True)
    axis = _check_axis(axis, x.ndim)
    m = _check_mask(mask, x.shape)
    allowed = m & np.isfinite(x)
    safe = np.where(allowed, x, -np.inf)
    row_max = np.max(safe, axis=axis, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.where(allowed, np.exp(np.where(allowed, x - row_max, 0.0)), 0.0)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax: ``exp(x - max) / sum(exp(x - max))``.

    Subtracting the row maximum does not change the result (softmax is
    invariant to adding a constant) but keeps ``exp`` from overflowing, so
    logits like 566 are fine (in float32, ``np.exp(566)`` alone is ``inf``).
    ``-inf`` entries get weight 0; a slice that is all ``-inf`` gets zeros.

    Args:
        x: real array of any shape ``S`` (integers are promoted to float64).
        axis: the axis that sums to one (default: the last).

    Returns:
        Array of shape ``S`` with the dtype of ``x`` (float64 for integers).

    Chapter 2 explains why the maximum is subtracted.
    """
    x = as_real_array(x, "x")
    return masked_softmax(x, np.ones(x.shape, dtype=bool), axis=axis)


def _check_qkv(Q, K, V=None):
    """Validate Q, K (and V if given); return them as arrays plus batch shape."""
    Q = as_real_array(Q, "Q", min_ndim=2)
    K = as_real_array(K, "K", min_ndim=2)
    V = K[..., :1] if V is None else as_real_array(V, "V", min_ndim=2)
    dtypes = {n: a.dtype for n, a in (("Q", Q), ("K", K), ("V", V))}
    if len(set(dtypes.values())) > 1:
        got = ", ".join(f"{n} {d}" for n, d in dtypes.items())
        raise ValueError(f"Q, K and V must share one floating dtype; got {got}")
    L_q, d_k = Q.shape[-2:]
    if K.shape[-1] != d_k:
        raise ValueError(f"K must have shape (..., L_k, d_k) with d_k={d_k} to match "
                         f"Q {shape_str(Q.shape)}; got K {shape_str(K.shape)}")
    L_k = K.shape[-2]
    if V.shape[-2] != L_k:
        raise ValueError(f"V must have shape (..., L_k, d_v) with L_k={L_k} to match "
                         f"K {shape_str(K.shape)}; got V {shape_str(V.shape)}")
    try:
        batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError("the batch dimensions of Q, K and V must broadcast; got "
                         f"Q {shape_str(Q.shape)}, K {shape_str(K.shape)}, "
                         f"V {shape_str(V.shape)}") from None
    for n, a in (("Q", Q), ("K", K), ("V", V)):
        check_finite(a, n)
    return Q, K, V, batch


def attention_scores(Q, K) -> np.ndarray:
    """The scaled scores ``Q K^T / sqrt(d_k)``.

    Args:
        Q: ``(..., L_q, d_k)`` queries.
        K: ``(..., L_k, d_k)`` keys.

    Returns:
        ``(..., L_q, L_k)``: entry ``[i, j]`` says how well query ``i``
        matches key ``j``.

    Chapter 2 computes them by hand and explains the ``sqrt(d_k)``.
    """
    Q, K, _, _ = _check_qkv(Q, K)
    K_T = np.swapaxes(K, -1, -2)                      # (..., d_k, L_k)
    return Q @ K_T / math.sqrt(Q.shape[-1])           # (..., L_q, d_k) @ (..., d_k, L_k) -> (..., L_q, L_k)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Scaled dot-product attention, ``softmax(Q K^T / sqrt(d_k)) V``.

    Args:
        Q: ``(..., L_q, d_k)`` queries.
        K: ``(..., L_k, d_k)`` keys.
        V: ``(..., L_k, d_v)`` values. The leading ``...`` batch dimensions
            of Q, K and V must broadcast; all three share one float dtype.
        mask: optional boolean array broadcastable to ``(..., L_q, L_k)``.
            True means "query i may attend to key j", as in PyTorch's boolean
            ``attn_mask``. A query whose row is all False gets zero weights
            and a zero output (PyTorch would give NaN there).

    Returns:
        ``(output, weights)``: ``output`` is ``(..., L_q, d_v)`` and
        ``weights`` is ``(..., L_q, L_k)``, each row summing to 1 (or 0 when
        fully masked).

    Raises:
        TypeError: a non-numeric input, or a non-boolean mask.
        ValueError: mismatched shapes or dtypes, NaN or infinite inputs.

    Chapter 2 computes this by hand; chapter 3 runs it once per head.
    """
    Q, K, V, _ = _check_qkv(Q, K, V)
    scores = attention_scores(Q, K)                   # (..., L_q, L_k)
    if mask is None:
        weights = softmax(scores, axis=-1)            # (..., L_q, L_k)
    else:
        weights = masked_softmax(scores, _check_mask(mask, scores.shape), axis=-1)
    return weights @ V, weights                       # (..., L_q, L_k) @ (..., L_k, d_v) -> (..., L_q, d_v)
