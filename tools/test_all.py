"""`make test`: the book build beside the tests that do not need it, then the tests of the built book.

    python tools/test_all.py --build "jupyter-book build . -W -n --keep-going" --all-unless-warm \\
        --pytest ".venv/bin/pytest -q -n auto --dist loadscope" -- tests book/ch01_why_attention.ipynb … --nbval …

The build is the whole book (``--all``) under CI, on a fresh clone, and whenever what Sphinx's
cache cannot see has changed since the last ``make test`` build (:func:`full_build_reason`:
the book's extension ``_ext/``, ``_config.yml``, ``_toc.yml``, the installed packages, the
vendored JavaScript); otherwise Sphinx rebuilds only the pages that changed, as ``make book``
does. A failed build forgets Sphinx's saved environment, so that its warnings come back.

The book build runs on one core. The test modules that read the built book or drive a browser
or a server (``tests/conftest.py``'s ``serial_reason``: they share one worker anyway) wait for
it; everything else (unit tests, the notebooks under nbval, the other book checks) starts at
once beside it, on every core. So:

1. the build and pytest run A start together: A is the given pytest arguments with every
   serial module left out (``--ignore``); its output is shown as it comes. A runs at a lower
   priority (``nice``, :data:`A_NICENESS`), so that the build, which run B waits for, keeps a
   whole core while A takes every cycle it leaves;
2. when the build has succeeded, pytest run B starts beside A: the serial modules, in one
   process, its output kept and shown when it ends (the build's log likewise);
3. the exit status is the first failure's: the build's, A's or B's. A failed build stops A and
   never starts B (its tests would read a stale book).

The same tests run, with the same options, as in one pytest run (``tests/unit/test_test_all.py``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = "_build/.make_test_built"
"""Written when ``make test``'s build has succeeded, with the time that build started."""
ENVIRONMENT = "_build/.doctrees/environment.pickle"
"""Sphinx's saved environment (its cache of what each page read)."""
UNSEEN_BY_SPHINX = ("_ext", "_config.yml", "_toc.yml", ".venv/.installed", "_vendor/.stamp")
"""What changes the pages without Sphinx's cache seeing it: a change to any of these since the
last build means every page is built again."""


def full_build_reason(root: Path = ROOT, env=None) -> str | None:
    """Why the book must be built whole (``--all``), or None when Sphinx may rebuild only the pages
    that changed since the last successful ``make test`` build."""
    env = os.environ if env is None else env
    if env.get("CI"):
        return "CI builds every page"
    stamp = root / STAMP
    if not (root / ENVIRONMENT).exists() or not stamp.exists():
        return "no earlier make test build here"
    built = stamp.stat().st_mtime
    for name in UNSEEN_BY_SPHINX:
        path = root / name
        files = (sorted(f for f in path.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
                 if path.is_dir() else [path] if path.exists() else [])     # bytecode follows its source
        newer = [f for f in files if f.stat().st_mtime > built]
        if newer:
            return f"{newer[0].relative_to(root)} changed since the last build"
    return None


def _after_build(root: Path, rc: int, started: float) -> None:
    """Remember a successful build (the stamp, dated when it started); after a failed one forget
    Sphinx's environment and the stamp, so that the next build reads every page again."""
    stamp = root / STAMP
    if rc == 0:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text("make test's last successful book build started at this file's time\n")
        os.utime(stamp, (started, started))
    else:
        for path in (root / ENVIRONMENT, stamp):
            path.unlink(missing_ok=True)


A_NICENESS = 10
"""How much lower run A's priority is than the build's (``nice``): while both want the CPU, the
build, which the tests of the built book wait for, keeps a whole core; A has every idle cycle."""


def _lower_priority() -> None:
    os.nice(A_NICENESS)


def serial_modules(paths) -> list[str]:
    """The test modules under ``paths`` (folders or files, relative to the repository) that
    ``tests/conftest.py`` keeps in its serial scope: the ones that need the built book."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import conftest
    finally:
        sys.path.pop(0)
    found = []
    for p in paths:
        path = ROOT / p
        files = sorted(path.rglob("test_*.py")) if path.is_dir() else [path] if path.suffix == ".py" else []
        found += [str(f.relative_to(ROOT)) for f in files if conftest.serial_reason(str(f.relative_to(ROOT)))]
    return found


def without_xdist(args: list[str]) -> list[str]:
    """``args`` without pytest-xdist's ``-n N`` and ``--dist MODE`` (run B is one process)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-n", "--dist", "--numprocesses"):
            skip = True
            continue
        if a.startswith(("-n=", "--dist=", "--numprocesses=")):
            continue
        out.append(a)
    return out


def _show(title: str, log: Path) -> None:
    print(f"\n---- {title} ----", flush=True)
    sys.stdout.write(log.read_text(encoding="utf-8", errors="replace"))
    sys.stdout.flush()


def run(build: list[str], pytest: list[str], targets: list[str], options: list[str],
        remember: Path | None = None) -> int:
    """Run the build beside pytest run A, then run B once the build is done (see the module's
    docstring); return the exit status. With ``remember`` (the repository), a successful build
    leaves its stamp there and a failed one forgets Sphinx's environment (:func:`_after_build`)."""
    serial = serial_modules([t for t in targets if not t.endswith(".ipynb")])
    run_a = [*pytest, *targets, *options, *(f"--ignore={m}" for m in serial)]
    run_b = [*without_xdist(pytest), *serial]
    start, started = time.perf_counter(), time.time()
    with tempfile.TemporaryDirectory() as tmp:
        build_log, b_log = Path(tmp) / "build.log", Path(tmp) / "b.log"
        with open(build_log, "w") as out:
            builder = subprocess.Popen(build, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        a = subprocess.Popen(run_a, cwd=ROOT, preexec_fn=_lower_priority)
        build_rc = builder.wait()
        if remember is not None:
            _after_build(remember, build_rc, started)
        built_s = time.perf_counter() - start
        _show(f"the book build ({shlex.join(build)}): exit {build_rc} after {built_s:.0f} s, beside pytest", build_log)
        if build_rc != 0:
            a.terminate()
            a.wait()
            print(f"make test: the book build failed (exit {build_rc}); pytest stopped", flush=True)
            return build_rc
        with open(b_log, "w") as out:
            b = subprocess.Popen(run_b, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        a_rc, b_rc = a.wait(), b.wait()
        _show(f"pytest on the built book ({len(serial)} modules, one process): exit {b_rc}", b_log)
    total = time.perf_counter() - start
    print(f"make test: book build exit {build_rc} ({built_s:.0f} s); pytest beside it exit {a_rc}; "
          f"pytest on the built book exit {b_rc}; {total:.0f} s in all", flush=True)
    return a_rc or b_rc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True, help="the book build command, one string")
    parser.add_argument("--all-unless-warm", action="store_true",
                        help="add --all to the build unless full_build_reason() finds none (see above)")
    parser.add_argument("--pytest", required=True, help="pytest and its options for run A, one string")
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        help="after --: test paths and notebooks, then options such as --nbval …")
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    first_option = next((i for i, r in enumerate(rest) if r.startswith("-")), len(rest))
    if not rest[:first_option]:
        parser.error("give the test paths and notebooks after --, then their options")
    build = shlex.split(args.build)
    if args.all_unless_warm and "--all" not in build:
        reason = full_build_reason()
        if reason:
            build.append("--all")
        print("make test: the book build " + (f"builds every page ({reason})" if reason else
              "rebuilds only the pages changed since the last one (Sphinx's cache; make test BOOK_ALL=--all "
              "builds every page)"), flush=True)
    return run(build, shlex.split(args.pytest), rest[:first_option], rest[first_option:], remember=ROOT)


if __name__ == "__main__":
    sys.exit(main())
