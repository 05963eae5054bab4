"""Rotary position embeddings (RoPE; Su et al., 2021, "RoFormer") in NumPy.

Chapter 4 proved that the sinusoidal table moves by a rotation: for one pair
of columns ``(2i, 2i+1)`` with frequency ``ω_i = base^(-2i/d)``,

.. math::

    B(\\theta) = \\begin{pmatrix} \\cos\\theta & \\sin\\theta \\\\
                                  -\\sin\\theta & \\cos\\theta \\end{pmatrix},
    \\qquad PE(pos + k) = R_k\\, PE(pos),
    \\qquad R_k = \\operatorname{diag}\\big(B(k\\omega_0), B(k\\omega_1), \\dots\\big).

RoPE uses the same block-diagonal rotations, but instead of *adding* a
position vector it *rotates* each query and key by its own position ``m``:
``RoPE(x, m) = R_{-m} x = R_m^T x``. The rotations compose like angles
(``R_a R_b = R_{a+b}``, ``R_a^T = R_{-a}``), so for a query at ``m`` and a
key at ``n``

.. math::

    \\operatorname{RoPE}(q, m) \\cdot \\operatorname{RoPE}(k, n)
    = q^\\top R_{-m}^\\top R_{-n}\\, k = q^\\top R_{m-n}\\, k :

the score depends on the positions only through ``m − n``. Nothing is
added to the values and nothing is learned.

Pairing convention: **interleaved**, pairs ``(x_{2i}, x_{2i+1})`` as in the
RoFormer paper, Meta's original LLaMA code (``torch.view_as_complex``) and
chapter 4's table (sin in column ``2i``, cos in ``2i+1``). In the usual
orientation ``R_{-m}`` turns the point ``(x_{2i}, x_{2i+1})`` counter-clockwise
by ``m ω_i``, i.e. multiplies ``x_{2i} + i·x_{2i+1}`` by ``e^{i m ω_i}``::

    out_{2i}   = x_{2i} cos(m ω_i) − x_{2i+1} sin(m ω_i)
    out_{2i+1} = x_{2i} sin(m ω_i) + x_{2i+1} cos(m ω_i)

(Hugging Face's LLaMA pairs ``x_j`` with ``x_{j+d/2}`` ("rotate_half") and
permutes the checkpoints' ``W_Q``, ``W_K`` rows to match; same scores.)

Chapter 11, *Attention today*; :class:`course_lib.models.rope.RotaryEmbedding`
is the PyTorch twin.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validate import as_real_array, check_finite, check_positive_int, shape_str

__all__ = ["rope_angles", "apply_rope"]


def _check_base(base) -> float:
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a number > 1, got {type(base).__name__} {base!r}")
    if not base > 1:
        raise ValueError(f"base must be a number > 1, got {base!r}")
    return float(base)


def _check_even(d: int, name: str) -> int:
    d = check_positive_int(d, name, minimum=2)
    if d % 2:
        raise ValueError(f"{name} must be even (RoPE rotates pairs of columns (2i, 2i+1)), got {d}")
    return d


def _angles(positions: np.ndarray, d: int, base: float) -> np.ndarray:
    """``positions[:, None] * ω`` with ``ω_i = base^(-2i/d)``: ``(L, d/2)``."""
    omega = base ** (-np.arange(0, d, 2) / d)              # (d/2,)
    return positions[:, None] * omega[None, :]             # (L, 1) * (1, d/2) -> (L, d/2)


def rope_angles(L: int, d: int, base: float = 10000.0) -> np.ndarray:
    """The rotation angles ``m · ω_i`` of every position and pair.

    Args:
        L: number of positions ``m = 0 .. L - 1``.
        d: width of the vectors that are rotated (a head's ``d_k``); even.
        base: the ``10000`` of chapter 4's formula, ``ω_i = base^(-2i/d)``.

    Returns:
        ``(L, d/2)`` float64 array; entry ``[m, i]`` is ``m ω_i``, the angle
        by which pair ``(2i, 2i+1)`` at position ``m`` is turned. Column ``i``
        is also the angle inside chapter 4's ``PE(m, 2i)`` and ``PE(m, 2i+1)``
        when ``d = d_model``.

    Raises:
        TypeError: ``L`` or ``d`` not an integer, ``base`` not a number.
        ValueError: ``L < 1``, ``d`` odd or ``< 2``, ``base <= 1``.

    Chapter 11, *Attention today*.
    """
    L = check_positive_int(L, "L")
    d = _check_even(d, "d")
    base = _check_base(base)
    return _angles(np.arange(L, dtype=np.float64), d, base)


def apply_rope(x, positions=None, base: float = 10000.0) -> np.ndarray:
    """Rotate every pair ``(x_{2i}, x_{2i+1})`` of row ``m`` by the angle ``m ω_i``.

    Apply it to the queries and the keys (after ``W_Q``, ``W_K``; per head),
    never to the values.

    Args:
        x: ``(..., L, d)`` real array, ``d`` even: ``L`` vectors, one per
            position (any leading batch/head dimensions).
        positions: optional ``(L,)`` integers, the position ``m`` of each
            row; default ``0 .. L - 1``. With a KV cache, the new tokens'
            positions start at the number already cached.
        base: the ``10000`` of ``ω_i = base^(-2i/d)``.

    Returns:
        ``(..., L, d)`` array with the dtype of ``x`` (float64 for integers):
        ``R_{-m} x_m`` for each row. Each pair keeps its length.

    Raises:
        TypeError: ``x`` not real numbers, ``positions`` not integers,
            ``base`` not a number.
        ValueError: ``x`` with fewer than 2 dimensions, an odd last
            dimension, NaN/inf; ``positions`` of the wrong shape; ``base <= 1``.

    Chapter 11, *Attention today* (derived from chapter 4's ``R_k``).
    """
    x = as_real_array(x, "x", min_ndim=2)
    check_finite(x, "x")
    L, d = x.shape[-2:]
    if d % 2 or d == 0:
        raise ValueError(f"x must have an even last dimension d (RoPE rotates pairs of columns "
                         f"(2i, 2i+1)), got shape {shape_str(x.shape)}")
    base = _check_base(base)
    if positions is None:
        pos = np.arange(L, dtype=np.float64)
    else:
        pos = np.asarray(positions)
        if pos.dtype.kind not in "iu":
            raise TypeError(f"positions must be integers (the position m of each row), "
                            f"got dtype {pos.dtype}")
        if pos.shape != (L,):
            raise ValueError(f"positions must have shape (L,) = ({L},) to match x "
                             f"{shape_str(x.shape)}, got {shape_str(pos.shape)}")
        pos = pos.astype(np.float64)
    theta = _angles(pos, d, base)                          # (L, d/2)
    cos, sin = np.cos(theta).astype(x.dtype), np.sin(theta).astype(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]             # (..., L, d/2) each
    out = np.empty_like(x)                                 # (..., L, d)
    out[..., 0::2] = x_even * cos - x_odd * sin            # (..., L, d/2)
    out[..., 1::2] = x_even * sin + x_odd * cos            # (..., L, d/2)
    return out
