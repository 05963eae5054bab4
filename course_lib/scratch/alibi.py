"""ALiBi: attention with linear biases (Press, Smith & Lewis, 2022) in NumPy.

ALiBi adds no position vector at all. Each head ``h`` adds a fixed penalty,
proportional to the distance, to its attention scores:

.. math::

    \\operatorname{softmax}\\!\\left(\\frac{q_i K^\\top}{\\sqrt{d_k}}
        - m_h \\,(i - j)\\right), \\qquad j \\le i,

so a key ``i − j`` places back loses ``m_h (i − j)`` logits. The slopes
``m_h`` form a geometric sequence, one per head: for ``n`` heads (``n`` a
power of 2) ``m_h = 2^{-8h/n}``, ``h = 1..n`` — for 8 heads
``1/2, 1/4, …, 1/256``. Heads with a large slope look only at the last few
tokens; heads with a tiny slope see far back. For other head counts the
paper's code takes the slopes of the nearest smaller power of 2, ``p``, and
adds every other slope of ``2p`` heads (the odd-numbered ones) until there
are ``n``.

The penalty depends only on ``i − j`` and is defined for any distance, so a
model trained on short sequences can be run on longer ones; the paper's
point was that this extrapolates better than sinusoidal or rotary positions.

Chapter 11, *Attention today*.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_positive_int

__all__ = ["alibi_slopes", "alibi_bias"]


def _power_of_2_slopes(n: int) -> np.ndarray:
    """``2^(-8h/n)`` for ``h = 1..n`` (``n`` a power of 2)."""
    return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)


def alibi_slopes(num_heads: int) -> np.ndarray:
    """The slope ``m_h`` of every head.

    Args:
        num_heads: number of heads ``n``, any integer ``>= 1``.

    Returns:
        ``(num_heads,)`` float64 array. For ``n`` a power of 2,
        ``m_h = 2^{-8h/n}`` (``h = 1..n``). Otherwise, with ``p`` the largest
        power of 2 below ``n``: the ``p`` slopes of ``p`` heads, then the
        slopes ``h = 1, 3, 5, …`` of ``2p`` heads, ``n − p`` of them (the
        reference code's order; for 12 heads: the 8-head slopes, then
        ``2^{-0.5}, 2^{-1.5}, 2^{-2.5}, 2^{-3.5}``).

    Raises:
        TypeError: ``num_heads`` not an integer.
        ValueError: ``num_heads < 1``.

    Chapter 11, *Attention today*.
    """
    n = check_positive_int(num_heads, "num_heads")
    p = 1 << (n.bit_length() - 1)                          # largest power of 2 <= n
    slopes = _power_of_2_slopes(p)                         # (p,)
    if p == n:
        return slopes
    extra = _power_of_2_slopes(2 * p)[0::2][: n - p]       # (n - p,)
    return np.concatenate([slopes, extra])                 # (n,)


def alibi_bias(num_heads: int, L_q: int, L_k: int, causal: bool = True) -> np.ndarray:
    """The bias ALiBi adds to every head's scores, ``−m_h · (distance)``.

    Queries are the *last* ``L_q`` of the ``L_k`` positions (the layout of a
    KV cache: ``L_k − L_q`` positions were decoded before), so query ``i``
    sits at position ``p_i = L_k − L_q + i``.

    Args:
        num_heads: number of heads; head ``h`` uses ``alibi_slopes(num_heads)[h]``.
        L_q: number of queries, ``1 <= L_q <= L_k``.
        L_k: number of keys.
        causal: True (the paper, a decoder): the bias is ``−m_h (p_i − j)``
            for ``j <= p_i`` and ``−inf`` for future keys, so it is also the
            causal mask. False (an encoder): ``−m_h |p_i − j|`` everywhere.

    Returns:
        ``(num_heads, L_q, L_k)`` float64 array, to add to the scaled scores
        ``Q K^T / sqrt(d_k)`` of shape ``(B, num_heads, L_q, L_k)`` before the
        softmax. Its row for query ``i`` is 0 at ``j = p_i``.

    Raises:
        TypeError: a count that is not an integer, ``causal`` not a bool.
        ValueError: a count ``< 1``, or ``L_q > L_k``.

    Chapter 11, *Attention today*.
    """
    slopes = alibi_slopes(num_heads)                       # (nh,)
    L_q = check_positive_int(L_q, "L_q")
    L_k = check_positive_int(L_k, "L_k")
    if L_q > L_k:
        raise ValueError(f"L_q must be <= L_k (the queries are the last L_q of the L_k "
                         f"positions), got L_q={L_q}, L_k={L_k}")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {type(causal).__name__} {causal!r}")
    p = np.arange(L_k - L_q, L_k)[:, None]                 # (L_q, 1) query positions
    j = np.arange(L_k)[None, :]                            # (1, L_k) key positions
    distance = (p - j).astype(np.float64)                  # (L_q, L_k)
    if not causal:
        return 0.0 - slopes[:, None, None] * np.abs(distance)   # (nh, 1, 1) * (L_q, L_k) -> (nh, L_q, L_k)
    bias = 0.0 - slopes[:, None, None] * distance          # (nh, L_q, L_k); 0.0 - x: no -0.0
    return np.where(distance >= 0, bias, -np.inf)          # (nh, L_q, L_k)
