"""Additive (Bahdanau) attention in NumPy.

Before dot products, Bahdanau, Cho and Bengio (2015) scored each encoder state
``h_j`` against the decoder state ``s`` with a one-hidden-layer network:

.. math::

    e_j = v^\\top \\tanh(W_s s + W_h h_j), \\qquad
    \\alpha = \\operatorname{softmax}(e), \\qquad
    c = \\sum_j \\alpha_j h_j

Chapter 1 (*Why attention*, ``ch01_why_attention``) uses it to fix the
fixed-context bottleneck of the RNN encoder-decoder. Vectors are rows, as everywhere in the book, so
``W_s s`` is written ``s @ W_s``.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_real_array, check_finite, shape_str
from .attention import masked_softmax, softmax

__all__ = ["additive_attention"]


def _check_matrix(W, name: str, rows: int, rows_name: str) -> np.ndarray:
    W = as_real_array(W, name)
    if W.ndim != 2 or W.shape[0] != rows:
        raise ValueError(f"{name} must have shape ({rows_name}={rows}, d_a), "
                         f"got {shape_str(W.shape)}")
    check_finite(W, name)
    return W


def additive_attention(s, H, W_s, W_h, v, mask=None):
    """Bahdanau attention of one decoder state over all encoder states.

    Args:
        s: ``(..., d_s)`` decoder state (the query).
        H: ``(..., L, d_h)`` encoder states (keys and values at once).
        W_s: ``(d_s, d_a)`` projection of the decoder state.
        W_h: ``(d_h, d_a)`` projection of the encoder states.
        v: ``(d_a,)`` scoring vector.
        mask: optional boolean ``(..., L)`` (broadcastable); True means
            "may attend". A fully masked row gets zero weights.

    Returns:
        ``(context, weights)``: ``context`` is ``(..., d_h)`` and ``weights``
        is ``(..., L)``, summing to 1 over ``L``.

    Chapter 1 plots these weights as an alignment.
    """
    s = as_real_array(s, "s", min_ndim=1)
    H = as_real_array(H, "H", min_ndim=2)
    check_finite(s, "s")
    check_finite(H, "H")
    W_s = _check_matrix(W_s, "W_s", s.shape[-1], "d_s")
    W_h = _check_matrix(W_h, "W_h", H.shape[-1], "d_h")
    v = as_real_array(v, "v")
    if W_s.shape[1] != W_h.shape[1] or v.shape != (W_s.shape[1],):
        raise ValueError(f"W_s, W_h and v must share d_a: got W_s {shape_str(W_s.shape)}, "
                         f"W_h {shape_str(W_h.shape)}, v {shape_str(v.shape)} "
                         f"(expected v of shape (d_a,))")
    if s.shape[:-1] != H.shape[:-2]:
        raise ValueError(f"s (..., d_s) and H (..., L, d_h) must share the batch "
                         f"dimensions '...'; got s {shape_str(s.shape)}, H {shape_str(H.shape)}")

    # (..., 1, d_a) + (..., L, d_a) -> tanh -> @ v (d_a,) -> (..., L)
    e = np.tanh((s @ W_s)[..., None, :] + H @ W_h) @ v
    weights = softmax(e) if mask is None else masked_softmax(e, mask)   # (..., L)
    context = (weights[..., None, :] @ H)[..., 0, :]   # (..., 1, L) @ (..., L, d_h) -> (..., d_h)
    return context, weights
