"""Peak memory and time of tiled (online-softmax) attention against full attention.

One head, d = 64, float32, L = 512 .. 4096 queries and keys, no mask. Every
number is measured in this run, and each ratio divides two numbers of the
same run:

- NumPy: ``course_lib.scratch.online_softmax.tiled_attention`` against the
  leanest full attention (scores, in-place softmax, ``@ V``: one ``L × L``
  matrix at a time). Peak memory with ``tracemalloc``, which sees every array
  NumPy allocates; the inputs exist before the measurement and are not counted.
- PyTorch: ``course_lib.models.tiled_attention.tiled_attention`` against
  ``softmax(Q Kᵀ/√d) V`` and against ``F.scaled_dot_product_attention``
  (whose CPU kernel is itself tiled). Peak memory with
  ``course_lib.models.tiled_attention.peak_memory_bytes``: ``torch.profiler``
  records every allocation and free of PyTorch's CPU allocator, and the peak
  is the highest point of their running sum.

Time: the fastest of ``REPEATS`` runs after a warm-up (the run that checks
the result). PyTorch uses 2 threads; NumPy's BLAS is held to one thread with
``threadpoolctl``, because on a shared 2-core machine a 128 × 128 tile
product spends far longer waking a second BLAS thread than computing.
Target: tiled peak memory at L = 4096 under 5 % of full attention's.

Run:  .venv/bin/python tools/bench_tiled.py
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from course_lib.models.tiled_attention import peak_memory_bytes  # noqa: E402
from course_lib.models.tiled_attention import tiled_attention as torch_tiled  # noqa: E402
from course_lib.scratch.online_softmax import tiled_attention as numpy_tiled  # noqa: E402

LENGTHS, D, BLOCK, REPEATS, TARGET = (512, 1024, 2048, 4096), 64, 128, 2, 0.05


def numpy_full(Q, K, V):
    """Full attention with as few L x L arrays as NumPy allows: one, reused in place."""
    s = Q @ K.T                                            # (L, d) @ (d, L) -> (L, L)
    s *= 1.0 / math.sqrt(Q.shape[-1])
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ V                                           # (L, L) @ (L, d) -> (L, d)


def torch_full(Q, K, V):
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1) @ V   # (1, 1, L, d)


def numpy_peak_bytes(fn, *args) -> int:
    """Peak bytes NumPy allocates during ``fn(*args)`` (tracemalloc; inputs not counted)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn(*args)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def best_seconds(fn, *args) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def mb(n: float) -> str:
    return f"{n / 2**20:9.2f}"


def main() -> int:
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    began = time.perf_counter()
    rows = []
    with torch.no_grad(), threadpool_limits(limits=1, user_api="blas"):
        for L in LENGTHS:
            Q, K, V = (rng.standard_normal((L, D), dtype=np.float32) for _ in range(3))
            tQ, tK, tV = (torch.from_numpy(a)[None, None] for a in (Q, K, V))   # (1, 1, L, d)
            np_tiled = lambda: numpy_tiled(Q, K, V, block_size=BLOCK)          # noqa: E731
            t_tiled = lambda: torch_tiled(tQ, tK, tV, block_size=BLOCK)        # noqa: E731
            t_sdpa = lambda: F.scaled_dot_product_attention(tQ, tK, tV)        # noqa: E731
            err_np = float(np.abs(np_tiled() - numpy_full(Q, K, V)).max())
            err_t = float((t_tiled() - torch_full(tQ, tK, tV)).abs().max())
            rows.append(dict(
                L=L, err_np=err_np, err_t=err_t,
                np_full_mem=numpy_peak_bytes(numpy_full, Q, K, V), np_tiled_mem=numpy_peak_bytes(np_tiled),
                np_full_s=best_seconds(numpy_full, Q, K, V), np_tiled_s=best_seconds(np_tiled),
                t_full_mem=peak_memory_bytes(torch_full, tQ, tK, tV), t_tiled_mem=peak_memory_bytes(t_tiled),
                t_sdpa_mem=peak_memory_bytes(t_sdpa),
                t_full_s=best_seconds(torch_full, tQ, tK, tV), t_tiled_s=best_seconds(t_tiled),
                t_sdpa_s=best_seconds(t_sdpa)))

    print(f"one head, d={D}, float32, block {BLOCK}x{BLOCK}, threads={torch.get_num_threads()}, "
          f"NumPy BLAS threads=1, time = best of {REPEATS}; "
          "memory = peak bytes allocated during the call (MiB)")
    print("\nNumPy (tracemalloc)")
    print(f"{'L':>5} {'full MiB':>9} {'tiled MiB':>9} {'mem ratio':>9} {'full ms':>8} {'tiled ms':>8} "
          f"{'time ratio':>10} {'max |diff|':>10}")
    for r in rows:
        print(f"{r['L']:5d} {mb(r['np_full_mem'])} {mb(r['np_tiled_mem'])} "
              f"{r['np_tiled_mem'] / r['np_full_mem']:9.2%} {1e3 * r['np_full_s']:8.1f} "
              f"{1e3 * r['np_tiled_s']:8.1f} {r['np_tiled_s'] / r['np_full_s']:10.2f} {r['err_np']:10.1e}")
    print("\nPyTorch (torch.profiler, profile_memory=True)")
    print(f"{'L':>5} {'full MiB':>9} {'tiled MiB':>9} {'sdpa MiB':>9} {'tiled/full':>10} "
          f"{'sdpa/full':>9} {'full ms':>8} {'tiled ms':>8} {'sdpa ms':>8} {'max |diff|':>10}")
    for r in rows:
        print(f"{r['L']:5d} {mb(r['t_full_mem'])} {mb(r['t_tiled_mem'])} {mb(r['t_sdpa_mem'])} "
              f"{r['t_tiled_mem'] / r['t_full_mem']:10.2%} {r['t_sdpa_mem'] / r['t_full_mem']:9.2%} "
              f"{1e3 * r['t_full_s']:8.1f} {1e3 * r['t_tiled_s']:8.1f} {1e3 * r['t_sdpa_s']:8.1f} "
              f"{r['err_t']:10.1e}")

    last = rows[-1]
    ratios = {"NumPy": last["np_tiled_mem"] / last["np_full_mem"],
              "PyTorch": last["t_tiled_mem"] / last["t_full_mem"]}
    ok = all(r < TARGET for r in ratios.values())
    print(f"\nL={last['L']}: tiled/full peak memory " + ", ".join(f"{k} {v:.2%}" for k, v in ratios.items())
          + f"  (target < {TARGET:.0%}: {'met' if ok else 'NOT met'}); "
          f"total {time.perf_counter() - began:.1f} s")
    print(f"L={last['L']}: tiled/full time NumPy {last['np_tiled_s'] / last['np_full_s']:.2f}, "
          f"PyTorch {last['t_tiled_s'] / last['t_full_s']:.2f}; tiled/SDPA time "
          f"{last['t_tiled_s'] / last['t_sdpa_s']:.2f} (ratios of this run)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
