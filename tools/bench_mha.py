"""Forward time of course_lib's MultiHeadAttention against torch.nn.MultiheadAttention.

Same weights (copied with ``from_torch``), B=32, L=128, d_model=256, 8 heads,
CPU, eval mode, no gradients, 2 threads, self-attention without a mask and
without returning weights (the fast path of both). After a warm-up the two
run alternately, so that any drift of the machine hits both alike, and the
medians are compared. Target: ours / torch <= 1.10.

Run:  .venv/bin/python tools/bench_mha.py
"""

import statistics
import sys
import time

import torch
from torch import nn

from course_lib.models import MultiHeadAttention

B, L, D_MODEL, NUM_HEADS = 32, 128, 256, 8
WARMUP, REPEATS = 10, 60
TARGET = 1.10


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    torch.set_num_threads(2)
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D_MODEL, NUM_HEADS, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(theirs).eval()
    x = torch.randn(B, L, D_MODEL)
    runs = {
        "course_lib MultiHeadAttention": lambda: ours(x, x, x),
        "torch.nn.MultiheadAttention": lambda: theirs(x, x, x, need_weights=False),
    }
    times = {name: [] for name in runs}
    with torch.no_grad():
        torch.testing.assert_close(runs["course_lib MultiHeadAttention"]()[0],
                                   runs["torch.nn.MultiheadAttention"]()[0], atol=1e-4, rtol=1e-4)
        for _ in range(WARMUP):
            for fn in runs.values():
                fn()
        for _ in range(REPEATS):
            for name, fn in runs.items():
                times[name].append(seconds(fn))

    medians = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"B={B}, L={L}, d_model={D_MODEL}, num_heads={NUM_HEADS}, "
          f"threads={torch.get_num_threads()}, {REPEATS} interleaved repeats")
    print(f"{'module':32s} {'median ms':>10s} {'min ms':>8s}")
    for name, ts in times.items():
        print(f"{name:32s} {1e3 * medians[name]:10.2f} {1e3 * min(ts):8.2f}")
    ratio = medians["course_lib MultiHeadAttention"] / medians["torch.nn.MultiheadAttention"]
    print(f"ratio ours/torch = {ratio:.3f}  (target <= {TARGET:.2f}: "
          f"{'met' if ratio <= TARGET else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
