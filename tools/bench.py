"""`make bench`: how long things take on this machine, printed as tables.

    python tools/bench.py                    # everything (about half an hour on 2 cores)
    python tools/bench.py --only book        # one section, or several: --only book,ci

Sections:

- ``notebooks``: each chapter notebook's execution (budget: 60 s on 2 cores;
  a notebook over it makes the run fail).
- ``book``: the book build in a copy of the sources: every page (``--all``, what
  ``make test`` and ``make book-all`` do), again with nothing changed, and after
  one notebook changed (``make book`` is incremental): with how many pages
  Sphinx re-read.
- ``ci``: each part of ``.ci/run``, run as the Makefile runs it (its recipe lines,
  from ``make -n``): ``make test`` (the book build, then pytest on every core),
  the learner's book build (as root only), ``make test-portable``'s two nbval
  passes and ``train.py --check``; and their sums.
- ``speed``: course_lib's multi-head attention relative to
  torch.nn.MultiheadAttention (both measured in the same run), the capstone
  classifier's serving latency (p50/p95) and throughput, chapter 9's tiled
  attention against full attention (memory and time ratios of one run),
  chapter 7's GPT generating with and without its KV cache (the speed-up of one
  run), and the capstone as an HTTP service under a bounded loopback load
  (course_lib.service.loadtest: p50/p95/p99, requests/s, errors, server RSS growth).

Apart from the notebooks' budget these are figures, not checks: nothing else
is asserted about time. A part that fails is reported as such, its time still
printed, and the run exits 1. Timings on shared machines are noisy; compare
ratios, not absolute seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from toc import ROOT, notebooks  # noqa: E402

NOTEBOOK_BUDGET_S = 60.0
SECTIONS = ("notebooks", "book", "ci", "speed")
BIN = Path(sys.executable).parent
#: The Makefile's exported environment (its recipe lines, run here one by one, need it).
MAKE_ENV = {"PYTHONHASHSEED": "0", "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}
#: A page whose notebook the incremental build sees changed.
TOUCHED = "book/ch02_worked_qkv.ipynb"


def _run(cmd, cwd=ROOT, env=None, shell=False) -> tuple[float, int, str]:
    """(seconds, exit code, output) of ``cmd``."""
    start = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return time.perf_counter() - start, r.returncode, r.stdout


def _execute(ipynb: Path) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ipynb, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ipynb.parent)}}).execute()
    return time.perf_counter() - start


def _table(title: str, rows) -> None:
    """Rows of (what, seconds, budget, status)."""
    width = max(len(r[0]) for r in rows)
    print(f"\n{title}")
    print(f"{'what':<{width}}  {'seconds':>8}  {'budget':>8}  status")
    for name, s, budget, status in rows:
        print(f"{name:<{width}}  {s:8.1f}  {budget:>8}  {status}", flush=True)


def _status(rc: int) -> str:
    return "ok" if rc == 0 else f"FAILED (exit {rc})"


def bench_notebooks() -> bool:
    rows, over = [], []
    for ipynb in notebooks():
        s = _execute(ipynb)
        ok = s < NOTEBOOK_BUDGET_S
        over += [] if ok else [ipynb.name]
        rows.append((f"notebook {ipynb.relative_to(ROOT)}", s, f"< {NOTEBOOK_BUDGET_S:.0f} s", "ok" if ok else "OVER"))
    _table("Notebooks (each executed in a fresh kernel)", rows)
    return not over


def _reread(output: str) -> str:
    """Sphinx's 'updating environment: N added, M changed, K removed', as 'read N+M page(s)'."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)         # Sphinx colours its output
    m = re.search(r"updating environment: (?:\[[^\]]*\] )?(\d+) added, (\d+) changed, (\d+) removed", output)
    return f"re-read {int(m.group(1)) + int(m.group(2))} page(s)" if m else "?"


def bench_book() -> bool:
    """The build in a copy of the sources (never touching this checkout's files or _build)."""
    rows, ok = [], True
    build = [str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"]
    skip = shutil.ignore_patterns(".git", ".venv", "node_modules", "_build", ".hypothesis", "__pycache__")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "book"
        shutil.copytree(ROOT, copy, ignore=skip, symlinks=True)
        for what, cmd, before in [
                ("book build, every page (--all: make test, make book-all)", build + ["--all"], None),
                ("book build, nothing changed (make book)", build, None),
                (f"book build, {TOUCHED} changed (make book)", build, TOUCHED)]:
            if before:
                os.utime(copy / before)                 # a newer mtime: Sphinx sees the page changed
            s, rc, out = _run(cmd, cwd=copy)
            ok &= rc == 0
            rows.append((what, s, "", f"{_status(rc)}, {_reread(out)}"))
    _table("Book build (in a copy of the sources)", rows)
    return ok


def _recipe(target: str) -> list[str]:
    """The commands of ``make <target>``'s own recipe, as make prints them (``make -n``), without
    its prerequisites' (``venv``, ``vendor``: up to date after ``make bench``'s own)."""
    out = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    lines = out.replace("\\\n", " ").splitlines()
    return [ln.strip() for ln in lines if re.search(r"jupyter-book build|pytest|train\.py", ln)]


def bench_ci() -> bool:
    env = {**os.environ, **MAKE_ENV, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    rows, ok, total = [], True, 0.0
    test = _recipe("test")
    names = {"jupyter-book": "make test: the book build (--all -W)",
             "pytest": "make test: pytest -n auto (unit, book, browser, nbval)"}
    make_test = 0.0
    for line in test:
        s, rc, _ = _run(line, env=env, shell=True)
        ok &= rc == 0
        make_test += s
        rows.append((next(v for k, v in names.items() if k in line), s, "", _status(rc)))
    rows.append(("make test (the two above)", make_test, "", ""))
    total += make_test
    if "tools/learner_book.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8"):
        if os.geteuid() == 0:
            s, rc, _ = _run(["bash", "tools/learner_book.sh"], env=env)
            ok &= rc == 0
            total += s
            rows.append(("tools/learner_book.sh (the book as a learner, no root)", s, "", _status(rc)))
        else:
            rows.append(("tools/learner_book.sh (the book as a learner, no root)", 0.0, "", "skipped: needs root"))
    portable = _recipe("test-portable")
    for i, line in enumerate(portable, 1):
        threads = re.search(r"OMP_NUM_THREADS=(\d+)", line)
        kernel = re.search(r"ATEN_CPU_CAPABILITY=(\w+)", line)
        desc = f"{kernel.group(1) if kernel else '?'} kernels, {threads.group(1) if threads else '?'} thread(s)"
        what = (f"make test-portable: nbval pass ({desc}), -n auto" if "pytest" in line
                else f"make test-portable: train.py --check --jobs 2 ({desc})")
        s, rc, _ = _run(line, env=env, shell=True)
        ok &= rc == 0
        total += s
        rows.append((what, s, "", _status(rc)))
    rows.append((".ci/run (all of the above)", total, "", ""))
    _table("CI: the parts of .ci/run, as the Makefile runs them", rows)
    return ok


def bench_speed() -> bool:
    for extra in ("bench_mha.py", "bench_serving.py", "bench_tiled.py", "bench_kv_cache.py"):  # one run each
        print()
        subprocess.run([sys.executable, str(ROOT / "tools" / extra)], cwd=ROOT, check=True)
    print()  # the capstone as an HTTP service: loopback load test (float32/int8, 1/2 workers, RSS)
    subprocess.run([sys.executable, "-m", "course_lib.service.loadtest"], cwd=ROOT, check=True)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run, of {', '.join(SECTIONS)} (default: all)")
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"--only: unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    results = {}
    for section in SECTIONS:
        if section in chosen:
            results[section] = globals()[f"bench_{section}"]()
    # Exit 1 if a notebook is over its budget or a part failed; no other time is judged.
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
