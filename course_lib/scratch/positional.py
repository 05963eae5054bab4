"""Sinusoidal positional encoding (Vaswani et al., 2017).

.. math::

    PE_{(pos, 2i)} = \\sin\\!\\left(\\frac{pos}{10000^{2i/d_{model}}}\\right),
    \\qquad
    PE_{(pos, 2i+1)} = \\cos\\!\\left(\\frac{pos}{10000^{2i/d_{model}}}\\right)

Chapter 4 (*Positional encoding*, ``ch04_positional_encoding``) explains why
attention needs it and why sines and cosines of geometrically spaced
frequencies are a good choice.
``course_lib.models.SinusoidalPositionalEncoding`` uses this very function.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validate import check_positive_int

__all__ = ["sinusoidal_positional_encoding"]


def sinusoidal_positional_encoding(max_len: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The table of sinusoidal position vectors.

    Args:
        max_len: number of positions ``pos = 0 .. max_len - 1``.
        d_model: width of each position vector. Even in every model of the
            book; an odd ``d_model`` is accepted and its last column is the
            sine of the pair ``2i = d_model - 1``, whose cosine partner would
            fall outside the table.
        base: the ``10000`` of the formula.

    Returns:
        ``(max_len, d_model)`` float64 array ``PE``; column ``2i`` is a sine
        and column ``2i + 1`` a cosine of the angle ``pos / base^(2i / d_model)``.

    Chapter 4.
    """
    max_len = check_positive_int(max_len, "max_len")
    d_model = check_positive_int(d_model, "d_model")
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not base > 1:
        raise ValueError(f"base must be a number > 1, got {base!r}")
    pos = np.arange(max_len)[:, None]                     # (max_len, 1)
    two_i = np.arange(d_model) // 2 * 2                   # 0, 0, 2, 2, 4, 4, ...
    angle = pos / base ** (two_i / d_model)               # (max_len, d_model)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))
