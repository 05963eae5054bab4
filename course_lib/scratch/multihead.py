"""Multi-head attention in NumPy.

.. math::

    \\operatorname{head}_i = \\operatorname{Attention}(Q_i, K_i, V_i), \\qquad
    \\operatorname{MultiHead}(X_q, X_{kv}) =
        \\operatorname{Concat}(\\operatorname{head}_1, \\dots,
        \\operatorname{head}_h) W_O

with ``Q = X_q W_Q``, ``K = X_kv W_K``, ``V = X_kv W_V`` cut into
``num_heads`` slices of width ``d_k = d_model / num_heads``. Chapter 3
(*Multi-head attention*, ``ch03_multi_head``) derives it; this is the code
version.

Weights follow the book's row-vector notation, ``y = x @ W + b`` with ``W``
of shape ``(d_model, d_model)``. For a PyTorch ``nn.Linear`` that is
``W = linear.weight.T``; for ``nn.MultiheadAttention``,
``W_Q, W_K, W_V = (w.T for w in in_proj_weight.chunk(3))``.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_real_array, check_positive_int
from .attention import scaled_dot_product_attention
from .linear import linear

__all__ = ["split_heads", "merge_heads", "multi_head_attention"]


def split_heads(X, num_heads: int) -> np.ndarray:
    """Cut the feature axis into ``num_heads`` heads of width ``d_k``.

    Args:
        X: ``(..., L, d_model)``.
        num_heads: ``h``; must divide ``d_model``.

    Returns:
        ``(..., num_heads, L, d_k)`` with ``d_k = d_model // num_heads``;
        head ``i`` holds features ``i*d_k : (i+1)*d_k``.

    Chapter 3 draws this reshape.
    """
    X = as_real_array(X, "X", min_ndim=2)
    num_heads = check_positive_int(num_heads, "num_heads")
    *batch, L, d_model = X.shape
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
    X = X.reshape(*batch, L, num_heads, d_model // num_heads)   # (..., L, num_heads, d_k)
    return np.swapaxes(X, -2, -3)                               # (..., num_heads, L, d_k)


def merge_heads(X) -> np.ndarray:
    """Undo :func:`split_heads`: concatenate the heads along the features.

    Args:
        X: ``(..., num_heads, L, d_k)``.

    Returns:
        ``(..., L, num_heads * d_k)``, i.e. ``(..., L, d_model)``.

    Chapter 3: the concatenation of the heads is this reshape.
    """
    X = np.swapaxes(as_real_array(X, "X", min_ndim=3), -2, -3)  # (..., L, num_heads, d_k)
    return X.reshape(*X.shape[:-2], -1)                         # (..., L, d_model)


def multi_head_attention(X_q, X_kv, W_Q, W_K, W_V, W_O, num_heads: int, mask=None,
                         b_q=None, b_k=None, b_v=None, b_o=None):
    """Multi-head attention of the queries ``X_q`` over ``X_kv``.

    For self-attention pass the same sequence twice; for the decoder's
    cross-attention pass the decoder states and the encoder output.

    Args:
        X_q: ``(..., L_q, d_model)`` sequence that asks (queries).
        X_kv: ``(..., L_k, d_model)`` sequence that answers (keys, values).
        W_Q, W_K, W_V, W_O: ``(d_model, d_model)`` projections, ``y = x @ W``:
            the book's ``W_Q``, ``W_K``, ``W_V``, ``W_O`` (lower-case here
            because the ``params`` dicts of :mod:`course_lib.scratch.layers`
            and existing callers use these names).
        num_heads: ``h``; must divide ``d_model``.
        mask: optional boolean, broadcastable to ``(..., num_heads, L_q,
            L_k)``; True means "may attend" (see :mod:`course_lib.scratch.masks`).
        b_q, b_k, b_v, b_o: optional ``(d_model,)`` biases.

    Returns:
        ``(output, weights)``: ``output`` is ``(..., L_q, d_model)`` and
        ``weights`` is ``(..., num_heads, L_q, L_k)``, one attention map per
        head (PyTorch averages them over heads by default; we don't).

    Chapter 3.
    """
    Q = split_heads(linear(X_q, W_Q, b_q, names=("X_q", "W_Q", "b_q")), num_heads)    # (..., num_heads, L_q, d_k)
    K = split_heads(linear(X_kv, W_K, b_k, names=("X_kv", "W_K", "b_k")), num_heads)  # (..., num_heads, L_k, d_k)
    V = split_heads(linear(X_kv, W_V, b_v, names=("X_kv", "W_V", "b_v")), num_heads)  # (..., num_heads, L_k, d_k)
    # heads (..., num_heads, L_q, d_k), weights (..., num_heads, L_q, L_k)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask)
    output = linear(merge_heads(heads), W_O, b_o,                 # (..., L_q, d_model) @ W_O -> (..., L_q, d_model)
                    names=("the concatenated heads", "W_O", "b_o"))
    return output, weights
