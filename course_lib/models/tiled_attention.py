"""Tiled attention with an online softmax in PyTorch, and a peak-memory meter.

The algorithm is FlashAttention's forward pass, explained step by step in
:mod:`course_lib.scratch.online_softmax`: for each block of queries, visit
the keys one block at a time, keeping a running maximum ``m``, a running sum
``ℓ`` and an unnormalised output ``a``; rescale both by ``e^{m_old − m_new}``
whenever the maximum grows; divide once at the end. Only a ``block × block``
tile of scores ever exists. Written in Python loops it is *slower* than one
big matrix product on a CPU; its point is memory, and on a GPU the real
kernel also saves the trips to slow memory.

:func:`peak_memory_bytes` measures what a PyTorch call allocates. CPU
tensors do not report to ``tracemalloc``, so it uses ``torch.profiler`` with
``profile_memory=True``: the profiler records every allocation and free of
PyTorch's CPU allocator with a timestamp, and the peak is the highest point
of their running sum. That counts tensors made inside fused kernels (the
buffers of ``scaled_dot_product_attention``), not Python objects and not
memory that was allocated before the call.

Chapter 11, *Attention today*; ``tools/bench_tiled.py`` uses both.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from typing import Callable

import torch

from .._validate import check_bool_mask, check_positive_int, check_tensor, shape_str

__all__ = ["tiled_attention", "peak_memory_bytes"]


def tiled_attention(Q, K, V, block_size: int = 128, mask=None, causal: bool = False) -> torch.Tensor:
    """``softmax(Q K^T / sqrt(d_k)) V`` one ``block_size × block_size`` tile at a time.

    Args:
        Q: ``(B, num_heads, L_q, d_k)`` queries.
        K: ``(B, num_heads, L_k, d_k)`` keys.
        V: ``(B, num_heads, L_k, d_v)`` values; one floating dtype for all three.
        block_size: query rows and key rows per tile (any lengths work).
        mask: optional boolean, broadcastable to ``(B, num_heads, L_q, L_k)``;
            True = may attend.
        causal: also hide future keys; queries are the *last* ``L_q`` of the
            ``L_k`` positions (as with a KV cache): query ``i`` sees key ``j``
            when ``j <= i + L_k − L_q``. Tiles wholly in the future are skipped.

    Returns:
        ``(B, num_heads, L_q, d_v)``, equal to full attention up to rounding;
        a query with no allowed key gets a zero row (not NaN).

    Raises:
        TypeError: non-tensors, non-float dtypes, a non-boolean mask.
        ValueError: mismatched shapes or dtypes, ``block_size < 1``.

    Chapter 11, *Attention today*.
    """
    check_tensor(Q, "Q", ndim=4, layout="(B, num_heads, L_q, d_k)")
    check_tensor(K, "K", ndim=4, last_dim=Q.shape[-1], layout=f"(B, num_heads, L_k, d_k={Q.shape[-1]})")
    check_tensor(V, "V", ndim=4, layout="(B, num_heads, L_k, d_v)")
    if K.shape[:2] != Q.shape[:2] or V.shape[:3] != K.shape[:3]:
        raise ValueError("Q (B, num_heads, L_q, d_k), K (B, num_heads, L_k, d_k) and V (B, num_heads, "
                         f"L_k, d_v) must share B and num_heads, K and V also L_k; got Q "
                         f"{shape_str(Q.shape)}, K {shape_str(K.shape)}, V {shape_str(V.shape)}")
    if not Q.dtype == K.dtype == V.dtype:
        raise ValueError(f"Q, K and V must share one dtype; got {Q.dtype}, {K.dtype}, {V.dtype}")
    block = check_positive_int(block_size, "block_size")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {type(causal).__name__} {causal!r}")
    B, nh, L_q, d_k = Q.shape
    L_k, d_v = V.shape[-2:]
    if mask is not None:
        mask = check_bool_mask(mask, "mask", (B, nh, L_q, L_k)).expand(B, nh, L_q, L_k)  # a view
    offset = L_k - L_q
    scale = 1.0 / math.sqrt(d_k)
    out = Q.new_zeros(B, nh, L_q, d_v)                     # (B, nh, L_q, d_v)
    for q0 in range(0, L_q, block):
        q1 = min(q0 + block, L_q)
        Qb = Q[:, :, q0:q1] * scale                        # (B, nh, Bq, d_k)
        m = Q.new_full((B, nh, q1 - q0, 1), -math.inf)     # (B, nh, Bq, 1) running max
        ell = Q.new_zeros(B, nh, q1 - q0, 1)               # (B, nh, Bq, 1) running sum
        acc = Q.new_zeros(B, nh, q1 - q0, d_v)             # (B, nh, Bq, d_v)
        k_end = min(L_k, q1 + offset) if causal else L_k
        for k0 in range(0, k_end, block):
            k1 = min(k0 + block, L_k)
            # (B, nh, Bq, d_k) @ (B, nh, d_k, Bk) -> (B, nh, Bq, Bk)
            s = Qb @ K[:, :, k0:k1].transpose(-2, -1)
            allowed = None if mask is None else mask[:, :, q0:q1, k0:k1]   # (B, nh, Bq, Bk)
            if causal:
                seen = (torch.arange(k0, k1, device=Q.device)[None, :]
                        <= torch.arange(q0, q1, device=Q.device)[:, None] + offset)   # (Bq, Bk)
                allowed = seen if allowed is None else allowed & seen
            if allowed is not None:
                s = s.masked_fill(~allowed, -math.inf)     # (B, nh, Bq, Bk)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))        # (B, nh, Bq, 1)
            safe = torch.where(torch.isfinite(m_new), m_new, 0.0)        # all -inf so far: no shift
            p = torch.exp(s - safe)                        # (B, nh, Bq, Bk)
            c = torch.exp(m - safe)                        # (B, nh, Bq, 1) rescales the old sums
            ell = c * ell + p.sum(dim=-1, keepdim=True)    # (B, nh, Bq, 1)
            # (B, nh, Bq, Bk) @ (B, nh, Bk, d_v) -> (B, nh, Bq, d_v)
            acc = c * acc + p @ V[:, :, k0:k1]
            m = m_new
        out[:, :, q0:q1] = torch.where(ell > 0, acc / ell.clamp_min(torch.finfo(ell.dtype).tiny), 0.0)
    return out


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2 (the profiler's C++ start/stop log lines) inside the block.

    Descriptor 2 itself, not ``sys.stderr.fileno()``: in a Jupyter kernel the
    latter is a copy of the original stream, while C++ writes to descriptor 2,
    which the kernel forwards to the notebook.
    """
    fd = 2
    try:
        os.fstat(fd)
    except OSError:                                        # no descriptor 2 at all
        yield
        return
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def peak_memory_bytes(fn: Callable, *args, repeats: int = 1, **kwargs) -> int:
    """Peak bytes PyTorch's CPU allocator holds while ``fn(*args, **kwargs)`` runs.

    Uses ``torch.profiler.profile(profile_memory=True)``: every allocation
    (``+n`` bytes) and free (``−n``) during the call is recorded with its time;
    the running sum, started at 0, rises and falls, and its maximum is the
    peak. Memory held before the call (the inputs) is not counted; memory the
    call returns is. The profiler's own start/stop log lines (written by C++
    to stderr) are silenced; ``fn``'s own output is not.

    Args:
        fn: a callable that allocates torch tensors (e.g. :func:`tiled_attention`).
        *args, **kwargs: passed to ``fn``.
        repeats: run this many times and keep the smallest peak (another
            thread of the process can only add to a measurement).

    Returns:
        The peak in bytes, an ``int`` (0 if ``fn`` allocates nothing).

    Raises:
        TypeError: ``fn`` not callable, ``repeats`` not an integer.
        ValueError: ``repeats < 1``.

    Chapter 11, *Attention today*.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (the function to measure), got {type(fn).__name__}")
    repeats = check_positive_int(repeats, "repeats")
    from torch.profiler import ProfilerActivity, profile

    best = None
    for _ in range(repeats):
        prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        with _quiet_stderr():
            prof.start()
        try:
            fn(*args, **kwargs)
        finally:
            with _quiet_stderr():
                prof.stop()
        events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                        if e.name() == "[memory]")        # (time, +allocated / -freed bytes)
        level = peak = 0
        for _, nbytes in events:
            level += nbytes
            peak = max(peak, level)
        best = peak if best is None else min(best, peak)
    return int(best)
