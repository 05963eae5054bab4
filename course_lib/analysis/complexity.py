"""Cost of self-attention against a recurrent network, measured (chapter 5).

The source documents' table: self-attention takes time ``O(n² d)`` and
memory ``O(n² + n d)``; a recurrent network takes time ``O(n d²)`` and memory
``O(n d)``, for ``n`` positions of width ``d``. Chapter 5
(*The full Transformer*, ``ch05_transformer``) measures both on the CPU:

- :func:`attention_forward` and :func:`rnn_forward` are the two layers in
  NumPy, forward only;
- :func:`peak_bytes` measures the memory a call allocates (NumPy reports its
  allocations to ``tracemalloc``, so the count is exact and the same on every
  machine); :func:`best_seconds` times a call;
- :func:`loglog_slope` fits ``cost ∝ size^slope``.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Callable

import numpy as np

from .._validate import as_real_array, check_positive_int

__all__ = ["attention_forward", "rnn_forward", "attention_matrix_bytes", "peak_bytes",
           "best_seconds", "loglog_slope"]


def _check_X(X) -> np.ndarray:
    X = as_real_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be a matrix (n, d), got shape {X.shape}")
    return X


def attention_forward(X) -> np.ndarray:
    """Single-head self-attention with ``Q = K = V = X``: ``softmax(XXᵀ/√d) X``.

    Args:
        X: ``(n, d)``.

    Returns:
        ``(n, d)``. Builds the ``(n, n)`` score matrix: ``n² d`` multiply-adds
        twice, ``n²`` numbers in memory.
    """
    X = _check_X(X)
    S = X @ X.T / np.sqrt(X.shape[1])               # (n, n)
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=1, keepdims=True)
    return S @ X


def rnn_forward(X, W, U) -> np.ndarray:
    """A plain (Elman) recurrent layer: ``h_t = tanh(x_t W + h_{t-1} U)``.

    Args:
        X: ``(n, d)`` inputs.
        W, U: ``(d, d)`` input and recurrent weights.

    Returns:
        ``(n, d)`` hidden states. ``n`` sequential steps of ``2 d²``
        multiply-adds each; step ``t`` cannot start before step ``t - 1``.
    """
    X = _check_X(X)
    d = X.shape[1]
    for name, M in (("W", W), ("U", U)):
        if np.shape(M) != (d, d):
            raise ValueError(f"{name} must have shape (d, d) = ({d}, {d}), got {np.shape(M)}")
    XW = X @ W                                      # inputs: one matrix product, parallel
    H = np.empty_like(XW)
    h = np.zeros(d)
    for t in range(X.shape[0]):                     # the recurrence: sequential
        h = np.tanh(XW[t] + h @ U)
        H[t] = h
    return H


def attention_matrix_bytes(n: int, num_heads: int = 1, batch: int = 1, bytes_per_number: int = 4) -> int:
    """Bytes of the attention weights ``(batch, num_heads, n, n)``: ``batch·heads·n²·bytes``.

    ``bytes_per_number`` is 4 for float32, 8 for float64, 2 for float16.
    """
    n = check_positive_int(n, "n")
    num_heads = check_positive_int(num_heads, "num_heads")
    batch = check_positive_int(batch, "batch")
    bytes_per_number = check_positive_int(bytes_per_number, "bytes_per_number")
    return batch * num_heads * n * n * bytes_per_number


def peak_bytes(fn: Callable, *args, repeats: int = 5) -> int:
    """Peak bytes allocated while ``fn(*args)`` runs, via ``tracemalloc`` (chapter 5).

    NumPy reports every array it allocates to ``tracemalloc``. Other threads
    of the process (in Jupyter, the kernel's own) may allocate a few
    kilobytes meanwhile; they only ever add, so the smallest of ``repeats``
    runs is kept.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    repeats = check_positive_int(repeats, "repeats")
    best = None
    tracemalloc.start()
    try:
        for _ in range(repeats):
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            fn(*args)
            peak = tracemalloc.get_traced_memory()[1] - base
            best = peak if best is None else min(best, peak)
        return best
    finally:
        tracemalloc.stop()


def best_seconds(fn: Callable, *args, repeats: int = 5) -> float:
    """Fastest wall-clock seconds of ``fn(*args)`` over ``repeats`` runs (after one warm-up).

    NumPy's BLAS runs on one thread meanwhile, so the time measures the work
    rather than how busy the other cores are; the minimum is the run least
    disturbed by other programs.
    """
    from threadpoolctl import threadpool_limits

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    repeats = check_positive_int(repeats, "repeats")
    with threadpool_limits(limits=1, user_api="blas"):
        fn(*args)
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t)
    return float(min(times))


def loglog_slope(sizes, costs) -> float:
    """Least-squares slope of ``log(cost)`` against ``log(size)``: ``cost ∝ size^slope``."""
    sizes, costs = as_real_array(sizes, "sizes"), as_real_array(costs, "costs")
    if sizes.ndim != 1 or sizes.shape != costs.shape or sizes.size < 2:
        raise ValueError(f"sizes and costs must be 1-D of the same length ≥ 2, got shapes "
                         f"{sizes.shape} and {costs.shape}")
    if (sizes <= 0).any() or (costs <= 0).any():
        raise ValueError("sizes and costs must be positive to take logarithms")
    return float(np.polyfit(np.log(sizes), np.log(costs), 1)[0])
