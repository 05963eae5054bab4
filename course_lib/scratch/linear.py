"""The affine map ``y = x @ W + b`` that every projection in the book uses.

Vectors are rows, so a sequence ``X`` of shape ``(L, d_model)`` is projected
as ``Q = X W_Q`` (chapter 2, ``ch02_worked_qkv``). PyTorch's ``nn.Linear`` stores the transpose:
``W = linear.weight.T`` and ``b = linear.bias``.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_real_array, check_finite, shape_str

__all__ = ["linear"]


def linear(x, W, b=None, *, names=("x", "W", "b")) -> np.ndarray:
    """``x @ W + b``.

    Args:
        x: ``(..., d_in)`` inputs.
        W: ``(d_in, d_out)`` weights (``nn.Linear.weight.T``).
        b: optional ``(d_out,)`` bias.
        names: how the three arguments are called by the caller, so that an
            error names, say, ``W_Q`` rather than ``W``.

    Returns:
        ``(..., d_out)``.

    Chapter 2 computes ``Q = X W_Q`` by hand.
    """
    x_name, W_name, b_name = names
    x = as_real_array(x, x_name, min_ndim=1)
    W = as_real_array(W, W_name, dtype=x.dtype)
    if W.ndim != 2 or W.shape[0] != x.shape[-1]:
        raise ValueError(f"{W_name} must have shape (d_in, d_out) with d_in={x.shape[-1]} "
                         f"to match {x_name} {shape_str(x.shape)}; got {shape_str(W.shape)}")
    check_finite(x, x_name)
    check_finite(W, W_name)
    y = x @ W                                         # (..., d_in) @ (d_in, d_out) -> (..., d_out)
    if b is not None:
        b = as_real_array(b, b_name, dtype=x.dtype)
        if b.shape != (W.shape[1],):
            raise ValueError(f"{b_name} must have shape (d_out,) = ({W.shape[1]},), "
                             f"got {shape_str(b.shape)}")
        check_finite(b, b_name)
        y = y + b
    return y
