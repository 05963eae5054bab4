"""Wall-clock time of chapter 10's attention variants against sequence length.

Chapter 10 (*Attention for long sequences*) counts the work of full, local
window, strided sparse and linear attention (multiply-adds and the largest
tensor, numbers that are the same on every machine) and proves that the fast
versions equal masked full attention. This script measures what that work
costs in seconds on this machine: the same variants and settings as the
chapter (window w = 32, stride s = 32, heads of width d = 32, float32, no
mask), one batch of 2 heads, L = 256 .. 4096.

For each length the time is the fastest of ``REPEATS`` runs after a warm-up;
the ratios divide two times of this run (a variant against full attention at
the same L, and each variant against itself at half the length), beside the
same ratios of the counted multiply-adds (``course_lib.analysis.opcount``).
torch uses its default number of threads (``OMP_NUM_THREADS`` if set; the
first line prints it). A figure, not a check: nothing here is asserted about time.

Run:  .venv/bin/python tools/bench_attention_variants.py
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from course_lib.analysis.opcount import count_work  # noqa: E402
from course_lib.models.efficient_attention import (full_attention, linear_attention,  # noqa: E402
                                                   local_window_attention, strided_attention)

LENGTHS, HEADS, D, WINDOW, STRIDE, REPEATS = (256, 512, 1024, 2048, 4096), 2, 32, 32, 32, 5

VARIANTS = {
    "full": lambda Q, K, V: full_attention(Q, K, V),
    "local": lambda Q, K, V: local_window_attention(Q, K, V, WINDOW),
    "strided": lambda Q, K, V: strided_attention(Q, K, V, WINDOW, STRIDE),
    "linear": lambda Q, K, V: linear_attention(Q, K, V),
}


def best_seconds(fn, *args) -> float:
    """Fastest of REPEATS calls (after one warm-up call)."""
    fn(*args)
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def measure(lengths=LENGTHS) -> list[dict]:
    """One row per length: ``{"L", "seconds": {variant: s}, "macs": {variant: multiply-adds}}``."""
    g = torch.Generator().manual_seed(0)
    rows = []
    with torch.no_grad():
        for L in lengths:
            Q, K, V = (torch.randn(1, HEADS, L, D, generator=g) for _ in range(3))   # (B, heads, L, d)
            rows.append({"L": L,
                         "seconds": {name: best_seconds(fn, Q, K, V) for name, fn in VARIANTS.items()},
                         "macs": {name: count_work(fn, Q, K, V)["multiply_adds"] for name, fn in VARIANTS.items()}})
    return rows


def report(rows: list[dict]) -> str:
    """The tables `make bench` prints: times, time and work against full, growth per doubling."""
    names = list(VARIANTS)
    out = [f"attention variants (chapter 10): batch 1, {HEADS} heads of width d={D}, window w={WINDOW}, "
           f"stride s={STRIDE}, float32, threads={torch.get_num_threads()}, time = best of {REPEATS}",
           "", f"{'L':>5} " + " ".join(f"{n + ' ms':>11}" for n in names)]
    for r in rows:
        out.append(f"{r['L']:5d} " + " ".join(f"{1e3 * r['seconds'][n]:11.3f}" for n in names))
    out += ["", "against full attention at the same L: time ratio (multiply-adds ratio), ratios of this run",
            f"{'L':>5} " + " ".join(f"{n:>17}" for n in names[1:])]
    for r in rows:
        out.append(f"{r['L']:5d} " + " ".join(
            f"{r['seconds'][n] / r['seconds']['full']:8.3f} ({r['macs'][n] / r['macs']['full']:6.3f})"
            for n in names[1:]))
    out += ["", "growth when L doubles: time ratio (multiply-adds ratio)",
            f"{'L':>5} " + " ".join(f"{n:>17}" for n in names)]
    for prev, r in zip(rows, rows[1:]):
        out.append(f"{r['L']:5d} " + " ".join(
            f"{r['seconds'][n] / prev['seconds'][n]:8.2f} ({r['macs'][n] / prev['macs'][n]:6.2f})"
            for n in names))
    return "\n".join(out)


def main() -> int:
    began = time.perf_counter()
    print(report(measure()))
    print(f"\ntotal {time.perf_counter() - began:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
