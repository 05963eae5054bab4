"""RMSNorm and the SwiGLU feed-forward network in NumPy: the LLaMA block's two swaps.

Current decoder models (LLaMA, Mistral, Qwen, …) keep chapter 5's layer
but change two parts:

- **RMSNorm** (Zhang & Sennrich, 2019) replaces LayerNorm. It only rescales
  each vector to unit root-mean-square; no mean is subtracted, no bias added:

  .. math:: \\operatorname{RMSNorm}(x) = \\frac{x}{\\sqrt{\\tfrac{1}{d}\\sum_i x_i^2 + \\varepsilon}} \\odot g

- **SwiGLU** (Shazeer, 2020, "GLU Variants Improve Transformer") replaces
  ``max(0, x W_1) W_2``: a second projection *gates* the first, through
  ``SiLU(z) = z · σ(z)`` (also called Swish):

  .. math:: \\operatorname{SwiGLU}(x) = \\big(\\operatorname{SiLU}(x W_1) \\odot x W_3\\big) W_2

  Naming: Meta's LLaMA code calls the matrices ``w1`` (gate), ``w3`` (up)
  and ``w2`` (down); Shazeer's paper writes ``(Swish(xW) ⊗ xV) W_2``, so
  ``W = W_1`` and ``V = W_3``. Having three matrices instead of two, LLaMA
  shrinks ``d_ff`` to about ``(2/3)·4·d_model`` to keep the parameter count.

Matrices multiply from the right, as ``W_Q`` in chapter 3. Chapter 11,
*Attention today*; :mod:`course_lib.models.norms` holds the PyTorch modules.
"""

from __future__ import annotations

import numpy as np

from .._validate import as_real_array, check_finite, check_positive_number, shape_str

__all__ = ["rms_norm", "swiglu"]


def rms_norm(x, g, eps: float = 1e-6) -> np.ndarray:
    """``x / sqrt(mean(x²) + eps) * g`` over the last axis.

    Args:
        x: ``(..., d)`` real array, one vector per row.
        g: ``(d,)`` gain (learned; ones at initialisation).
        eps: added under the square root so a zero vector stays finite
            (LLaMA: ``1e-6`` in LLaMA-1, ``1e-5`` in LLaMA-2 and 3).

    Returns:
        ``(..., d)`` array with the dtype of ``x``; before ``g`` each row has
        root-mean-square ``sqrt(ms / (ms + eps)) ≈ 1``.

    Raises:
        TypeError: non-numeric ``x`` or ``g``, or ``eps`` not a number.
        ValueError: ``g`` not of shape ``(d,)``, NaN/inf, ``eps <= 0``.

    Chapter 11, *Attention today*.
    """
    x = as_real_array(x, "x", min_ndim=1)
    g = as_real_array(g, "g", min_ndim=1)
    check_finite(x, "x")
    check_finite(g, "g")
    eps = check_positive_number(eps, "eps")
    if g.shape != (x.shape[-1],):
        raise ValueError(f"g must have shape (d,) = ({x.shape[-1]},) to match x "
                         f"{shape_str(x.shape)}, got {shape_str(g.shape)}")
    ms = np.mean(x * x, axis=-1, keepdims=True)            # (..., 1)
    return (x / np.sqrt(ms + eps) * g).astype(x.dtype)     # (..., d)


def _silu(z: np.ndarray) -> np.ndarray:
    """``z · σ(z)``, written so that ``exp`` never overflows."""
    e = np.exp(-np.abs(z))                                 # in (0, 1]
    sigma = np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return z * sigma


def swiglu(x, W1, W3, W2) -> np.ndarray:
    """The SwiGLU feed-forward network, ``(SiLU(x W1) ⊙ (x W3)) W2``.

    Args:
        x: ``(..., d_model)`` inputs.
        W1: ``(d_model, d_ff)`` gate projection (Shazeer's ``W``; LLaMA's ``w1``).
        W3: ``(d_model, d_ff)`` up projection (Shazeer's ``V``; LLaMA's ``w3``).
        W2: ``(d_ff, d_model)`` down projection (LLaMA's ``w2``).

    Returns:
        ``(..., d_model)`` array.

    Raises:
        TypeError: non-numeric inputs.
        ValueError: shapes that do not chain, NaN/inf.

    Chapter 11, *Attention today*.
    """
    x = as_real_array(x, "x", min_ndim=1)
    W1 = as_real_array(W1, "W1", min_ndim=2)
    W3 = as_real_array(W3, "W3", min_ndim=2)
    W2 = as_real_array(W2, "W2", min_ndim=2)
    for name, a in (("x", x), ("W1", W1), ("W3", W3), ("W2", W2)):
        check_finite(a, name)
    d_model = x.shape[-1]
    if W1.ndim != 2 or W1.shape[0] != d_model:
        raise ValueError(f"W1 must have shape (d_model, d_ff) with d_model={d_model} to match "
                         f"x {shape_str(x.shape)}, got {shape_str(W1.shape)}")
    if W3.shape != W1.shape:
        raise ValueError(f"W3 must have the shape of W1, (d_model, d_ff) = {shape_str(W1.shape)}, "
                         f"got {shape_str(W3.shape)}")
    if W2.shape != W1.shape[::-1]:
        raise ValueError(f"W2 must have shape (d_ff, d_model) = {shape_str(W1.shape[::-1])}, "
                         f"got {shape_str(W2.shape)}")
    gate = _silu(x @ W1)                                   # (..., d_model) @ (d_model, d_ff) -> (..., d_ff)
    up = x @ W3                                            # (..., d_model) @ (d_model, d_ff) -> (..., d_ff)
    return (gate * up) @ W2                                # (..., d_ff) @ (d_ff, d_model) -> (..., d_model)
