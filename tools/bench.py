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
- ``ci``: ``.ci/run`` itself, and its own closing table: the time of each part
  (``make venv vendor``, ``make test``, the learner's book build beside
  ``make portable-plain`` (as root only), ``make portable-avx2``,
  ``make train-check``) and of the whole, beside the budgets (``make test`` 6
  minutes on a warm clone, all of it 25 minutes on 2 cores).
- ``speed``: course_lib's multi-head attention relative to
  torch.nn.MultiheadAttention (both measured in the same run), the capstone
  classifier's serving latency (p50/p95) and throughput, chapter 10's attention
  variants (full, local, strided, linear) against sequence length (times, and
  their ratios beside the counted multiply-adds, of one run), chapter 11's tiled
  attention against full attention (memory and time ratios of one run),
  chapter 8's GPT generating with and without its KV cache (the speed-up of one
  run), a training step of chapter 9's long Chinese GPT with AdamW and with Muon
  (the whole step and the update alone, their ratios of one run), and the
  capstone as an HTTP service under a bounded loopback load
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


#: CI's budget for the whole of ``.ci/run`` on a 2-core machine, and ``make test``'s (a warm clone).
CI_BUDGET_S, TEST_BUDGET_S = 25 * 60, 6 * 60


def parse_ci_summary(out: str) -> list[tuple[str, float, str]]:
    """The rows of ``.ci/run``'s closing table ("where the time went"): (what, seconds, status)."""
    lines = out.splitlines()
    if "== .ci/run: where the time went ==" not in lines:
        raise ValueError(".ci/run printed no 'where the time went' table")
    rows = []
    for line in lines[lines.index("== .ci/run: where the time went ==") + 1:]:
        m = re.fullmatch(r" *(\d+) s  (.*?)(?:  (FAILED \(exit \d+\)|STOPPED \(the run ended first\)))?", line)
        if m:
            rows.append((m.group(2), float(m.group(1)), m.group(3) or "ok"))
    return rows


def bench_ci() -> bool:
    """Run ``.ci/run`` itself (what CI runs, in this checkout) and print its own timing table, each
    part against its budget where it has one. Not as root, it skips the learner's build."""
    env = {**os.environ, **MAKE_ENV, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    _, rc, out = _run(["bash", ".ci/run"], env=env)
    try:
        parsed = parse_ci_summary(out)
    except ValueError as err:
        print(out[-3000:])
        _table("CI: .ci/run", [(str(err), 0.0, "", _status(rc))])
        return False
    budgets = {"make test": f"{TEST_BUDGET_S} s", "in all": f"{CI_BUDGET_S} s"}
    rows = []
    for what, seconds, status in parsed:
        budget = next((b for k, b in budgets.items() if what.startswith(k)), "")
        over = budget and seconds > float(budget.split()[0])
        rows.append((what, seconds, budget, status + (", OVER budget" if over else "")))
    _table("CI: the parts of .ci/run, as it ran here (its own table)", rows)
    return rc == 0


def bench_speed() -> bool:
    for extra in ("bench_mha.py", "bench_serving.py", "bench_attention_variants.py", "bench_tiled.py",
                  "bench_kv_cache.py", "bench_optimizers.py"):  # one run each
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
