"""Latency and throughput of course_lib.labs.serving.predict on chapter 8's classifier.

Trains the capstone's small sentiment classifier (a few seconds), then calls
``predict`` one text at a time on the held-out sentences, float32 and int8
(dynamic quantisation), and prints p50/p95 latency and texts per second.

Run:  .venv/bin/python tools/bench_serving.py
"""

import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from course_lib.labs.compression import quantize_int8  # noqa: E402
from course_lib.labs.sentiment import build_classifier, load_sentiment, train_classifier  # noqa: E402
from course_lib.labs.serving import benchmark  # noqa: E402


def main() -> int:
    torch.set_num_threads(2)
    data = load_sentiment()
    model = build_classifier(len(data.vocab), max_len=data.max_len)
    train_classifier(model, data.X_train, data.M_train, data.y_train, steps=150)
    texts = [r["text"] for r in data.test]
    print(f"course_lib.labs.serving.predict, one text per call, {len(texts)} held-out texts x 5, "
          f"threads={torch.get_num_threads()}")
    print(f"{'model':22s} {'p50 ms':>8s} {'p95 ms':>8s} {'texts/s':>9s}")
    for name, m in (("float32", model), ("int8 (dynamic)", quantize_int8(model))):
        benchmark(texts[:10], repeats=1, model=m, vocab=data.vocab)            # warm-up
        r = benchmark(texts, repeats=5, model=m, vocab=data.vocab)
        print(f"{name:22s} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['texts_per_s']:9.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
