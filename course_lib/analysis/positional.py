"""How sinusoidal position vectors relate to each other (chapter 4, *Positional encoding*).

- :func:`sinusoidal_float32`: the table as the usual PyTorch recipe computes
  it, in ``float32`` (what the source documents' logs printed);
- :func:`cosine_similarity`, :func:`euclidean_distance`: every pair of rows;
- :func:`shift_matrix`: the block-diagonal rotation ``R_k`` with
  ``PE[pos + k] = R_k PE[pos]`` for every ``pos``.

The exact table is :func:`course_lib.scratch.sinusoidal_positional_encoding`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._validate import as_real_array, check_positive_int, shape_str

__all__ = ["sinusoidal_float32", "cosine_similarity", "euclidean_distance", "shift_matrix",
           "frequencies"]


def _check_even(d_model) -> int:
    d_model = check_positive_int(d_model, "d_model")
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")
    return d_model


def _check_base(base) -> float:
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not base > 1:
        raise ValueError(f"base must be a number > 1, got {base!r}")
    return float(base)


def frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """The angular frequencies ``omega_i = base^(-2i / d_model)``.

    Returns:
        ``(d_model // 2,)`` array; pair ``i`` (columns ``2i``, ``2i + 1``)
        turns by ``omega_i`` radians per position. Chapter 4.
    """
    d_model = _check_even(d_model)
    return _check_base(base) ** (-np.arange(0, d_model, 2) / d_model)


def sinusoidal_float32(max_len: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal table as the common PyTorch recipe computes it in ``float32``.

    The recipe is::

        div_term = exp(arange(0, d_model, 2) * (-log(base) / d_model))   # float32
        pe[:, 0::2] = sin(position * div_term); pe[:, 1::2] = cos(...)    # float32

    Every step is rounded to ``float32`` here exactly as IEEE arithmetic
    rounds it (``exp``, ``sin``, ``cos`` evaluated in ``float64`` and then
    rounded), so the result does not depend on the machine. The angle
    ``pos * div_term`` then carries ``float32`` rounding, which moves the
    6th decimal of some entries (chapter 4, "float32").

    Args:
        max_len: number of positions.
        d_model: even width.

    Returns:
        ``(max_len, d_model)`` ``float32`` array.
    """
    max_len = check_positive_int(max_len, "max_len")
    d_model = _check_even(d_model)
    f32 = np.float32
    scale = f32(-math.log(_check_base(base)) / d_model)
    div_term = np.exp((np.arange(0, d_model, 2, dtype=f32) * scale).astype(np.float64)).astype(f32)
    angle = (np.arange(max_len, dtype=f32)[:, None] * div_term[None, :]).astype(np.float64)
    pe = np.empty((max_len, d_model), dtype=f32)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def _rows(A, name: str) -> np.ndarray:
    A = as_real_array(A, name, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a matrix (n, d) of row vectors, got shape {shape_str(A.shape)}")
    return A


def _pair(A, B):
    A = _rows(A, "A")
    B = A if B is None else _rows(B, "B")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A (n, d) and B (m, d) must have the same d; got A {shape_str(A.shape)} "
                         f"and B {shape_str(B.shape)}")
    return A, B


def cosine_similarity(A, B=None) -> np.ndarray:
    """Cosine of the angle between every row of ``A`` and every row of ``B``.

    Args:
        A: ``(n, d)`` row vectors, e.g. position vectors ``PE[:n]``.
        B: ``(m, d)`` (default: ``A``).

    Returns:
        ``(n, m)`` matrix with entries ``a·b / (|a| |b|)``. Chapter 4.
    """
    A, B = _pair(A, B)
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    if (na == 0).any() or (nb == 0).any():
        raise ValueError("A and B must not contain zero rows (their cosine is undefined)")
    return (A @ B.T) / np.outer(na, nb)


def euclidean_distance(A, B=None) -> np.ndarray:
    """Euclidean distance ``|a - b|`` between every row of ``A`` and of ``B``.

    Args:
        A: ``(n, d)``; B: ``(m, d)`` (default: ``A``).

    Returns:
        ``(n, m)`` matrix. Chapter 4.
    """
    A, B = _pair(A, B)
    return np.linalg.norm(A[:, None, :] - B[None, :, :], axis=-1)


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The rotation that moves every sinusoidal position vector ``k`` places on.

    For each pair ``i`` (columns ``2i``, ``2i + 1``, frequency ``omega_i``)::

        [sin((pos + k) w)]   [ cos(k w)  sin(k w)] [sin(pos w)]
        [cos((pos + k) w)] = [-sin(k w)  cos(k w)] [cos(pos w)]

    so ``PE[pos + k] = R_k @ PE[pos]`` for every ``pos``: ``R_k`` depends on
    ``k`` only, never on ``pos``.

    Args:
        k: the shift (any integer; ``R_{-k} = R_k^T``).
        d_model: even width.

    Returns:
        ``(d_model, d_model)`` block-diagonal orthogonal matrix. Chapter 4.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an integer shift, got {type(k).__name__} {k!r}")
    theta = int(k) * frequencies(d_model, base)
    R = np.zeros((d_model, d_model))
    c, s = np.cos(theta), np.sin(theta)
    idx = np.arange(0, d_model, 2)
    R[idx, idx], R[idx, idx + 1] = c, s
    R[idx + 1, idx], R[idx + 1, idx + 1] = -s, c
    return R
