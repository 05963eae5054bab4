"""`make bench`: how long things take on this machine, printed as a table.

Rows: each chapter notebook's execution (budget: 60 s on 2 cores), the book
build, the test suite; then the speed of course_lib's multi-head attention
relative to torch.nn.MultiheadAttention (both measured in the same run), the
capstone classifier's serving latency (p50/p95) and throughput, chapter 9's
tiled attention against full attention (memory and time ratios of one run), and
chapter 7's GPT generating with and without its KV cache (the speed-up of one run).
Last, the capstone as an HTTP service under a bounded loopback load
(course_lib.service.loadtest: p50/p95/p99, requests/s, errors, server RSS growth).
Timings on shared machines are noisy; compare ratios, not absolute seconds.
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from toc import ROOT, notebooks  # noqa: E402

NOTEBOOK_BUDGET_S = 60.0


def _run(cmd) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _execute(ipynb: Path) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ipynb, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ipynb.parent)}}).execute()
    return time.perf_counter() - start


def main() -> int:
    rows, over = [], []
    for ipynb in notebooks():
        s = _execute(ipynb)
        ok = s < NOTEBOOK_BUDGET_S
        over += [] if ok else [ipynb.name]
        rows.append((f"notebook {ipynb.relative_to(ROOT)}", s, f"< {NOTEBOOK_BUDGET_S:.0f} s",
                     "ok" if ok else "OVER"))
    with tempfile.TemporaryDirectory() as out:
        rows.append(("book build (jupyter-book, all pages)",
                     _run([str(Path(sys.executable).parent / "jupyter-book"), "build", ".", "--all",
                           "-W", "-n", "--keep-going", "--path-output", out]), "", ""))
    rows.append(("test suite: unit, structure, browser (pytest tests)",
                 _run([sys.executable, "-m", "pytest", "-q", "tests"]), "", ""))
    rows.append(("test suite: notebooks (pytest --nbval)",
                 _run([sys.executable, "-m", "pytest", "-q", "--nbval", "--nbval-current-env",
                       *map(str, notebooks())]), "", ""))
    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'seconds':>8}  {'budget':>8}  status")
    for name, s, budget, status in rows:
        print(f"{name:<{width}}  {s:8.1f}  {budget:>8}  {status}")
    for extra in ("bench_mha.py", "bench_serving.py", "bench_tiled.py", "bench_kv_cache.py"):  # ratios and latencies, one run each
        print()
        subprocess.run([sys.executable, str(ROOT / "tools" / extra)], cwd=ROOT, check=True)
    print()  # the capstone as an HTTP service: loopback load test (float32/int8, 1/2 workers, RSS)
    subprocess.run([sys.executable, "-m", "course_lib.service.loadtest"], cwd=ROOT, check=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
