"""`make test` (tools/test_all.py): the book build beside the tests that do not read it, then the
tests of the built book. The split must leave no test out and run none twice; a failure anywhere
must fail the run; a failed build must stop the tests and never start those that read the book."""

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("test_all_tool", ROOT / "tools" / "test_all.py")
test_all = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(test_all)
sys.path.insert(0, str(ROOT / "tests"))
from conftest import serial_reason  # noqa: E402


def test_the_serial_modules_are_exactly_the_serial_scope():
    every = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py"))
    serial = test_all.serial_modules(["tests"])
    assert serial == [m for m in every if serial_reason(m)]
    assert "tests/book/test_visible_text.py" in serial and "tests/book/test_offline_html.py" in serial
    assert "tests/unit/test_training.py" not in serial and "tests/book/test_bands.py" not in serial
    assert test_all.serial_modules(["tests/book/test_pdf.py", "tests/unit/test_text.py"]) == ["tests/book/test_pdf.py"]


def test_without_xdist_drops_only_the_worker_options():
    assert test_all.without_xdist(["pytest", "-q", "-n", "auto", "--dist", "loadscope", "-x"]) == ["pytest", "-q", "-x"]
    assert test_all.without_xdist(["pytest", "-n=2", "--dist=load", "-q"]) == ["pytest", "-q"]
    assert test_all.without_xdist(["pytest", "-q"]) == ["pytest", "-q"]


def _recorder(tmp_path, name, rc=0, sleep=0.0):
    """A stand-in command that records its arguments, start and end, then exits with ``rc``."""
    script = tmp_path / f"{name}.py"
    script.write_text(
        "import json, sys, time\n"
        f"start = time.time(); time.sleep({sleep})\n"
        f"open({str(tmp_path / (name + '.json'))!r}, 'a').write(json.dumps([sys.argv[1:], start, time.time()]) + '\\n')\n"
        f"print({name!r} + ' ran'); sys.exit({rc})\n")
    return [sys.executable, str(script)]


def _calls(tmp_path, name):
    import json
    path = tmp_path / f"{name}.json"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_tests_start_beside_the_build_and_the_book_tests_after_it(tmp_path, capsys):
    build = _recorder(tmp_path, "build", sleep=3.0)       # long enough for A to start first, even under load
    pytest = _recorder(tmp_path, "pytest", sleep=0.5)
    rc = test_all.run(build, [*pytest, "-q", "-n", "2"], ["tests/book", "book/x.ipynb"], ["--nbval"])
    assert rc == 0
    (b,) = _calls(tmp_path, "build")
    runs = _calls(tmp_path, "pytest")
    assert len(runs) == 2
    (a_args, a_start, _), (b_args, b_start, _) = sorted(runs, key=lambda r: r[1])
    serial = test_all.serial_modules(["tests/book"])
    assert a_args == ["-q", "-n", "2", "tests/book", "book/x.ipynb", "--nbval", *(f"--ignore={m}" for m in serial)]
    assert b_args == ["-q", *serial]
    assert a_start < b[2] <= b_start                     # A started before the build ended, B after it
    out = capsys.readouterr().out
    assert "build ran" in out and "exit 0" in out and "pytest on the built book" in out


def test_run_a_yields_the_cpu_to_the_build_and_the_book_tests(tmp_path):
    """A runs niced: while it competes with the build (and later run B), they win."""
    script = tmp_path / "nice.py"
    script.write_text("import os, sys\n"
                      f"open({str(tmp_path / 'nice.txt')!r}, 'a').write(f'{{sys.argv[1]}} {{\"A\" if \"--ignore=tests/book/test_pdf.py\" in sys.argv else \"-\"}} {{os.nice(0)}}\\n')\n")
    base = os.nice(0)
    assert test_all.run([sys.executable, str(script), "build"], [sys.executable, str(script), "pytest"],
                        ["tests/book"], []) == 0
    got = sorted(line.split() for line in (tmp_path / "nice.txt").read_text().splitlines())
    niced = min(base + test_all.A_NICENESS, 19)              # 19 is the lowest priority there is
    assert niced > base, "this test itself runs at the lowest priority: nothing to compare"
    assert got == [["build", "-", str(base)], ["pytest", "-", str(base)], ["pytest", "A", str(niced)]]


def test_a_failed_build_stops_the_tests_and_never_starts_the_book_tests(tmp_path, capsys):
    build = _recorder(tmp_path, "build", rc=2)
    pytest = _recorder(tmp_path, "pytest", sleep=60.0)
    start = time.time()
    assert test_all.run(build, pytest, ["tests/book"], []) == 2
    assert time.time() - start < 30                      # A was stopped, not waited for
    assert _calls(tmp_path, "pytest") == []              # stopped before it recorded; B never ran
    assert "the book build failed (exit 2)" in capsys.readouterr().out


def test_a_failure_of_either_pytest_run_fails_make_test(tmp_path):
    ok_build = _recorder(tmp_path, "build")
    for name, rc in (("pytest_a_fails", 1), ("pytest_b_fails", 1)):
        script = tmp_path / f"{name}.sh"
        # run A has the --ignore options, run B has not: fail the one this case names
        cond = '[[ "$*" == *--ignore* ]]' if name == "pytest_a_fails" else '[[ "$*" != *--ignore* ]]'
        script.write_text(f"if {cond}; then exit {rc}; fi\nexit 0\n")
        assert test_all.run(ok_build, ["bash", str(script)], ["tests/book"], []) == rc


def _make_test_line(*args):
    make = subprocess.run(["make", "-n", "--no-print-directory", "test", *args], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "MAKEFLAGS": ""}).stdout.replace("\\\n", " ")
    return next(ln for ln in make.splitlines() if "tools/test_all.py" in ln)


def test_make_test_uses_it_with_the_same_options():
    line = _make_test_line()
    assert '--build ".venv/bin/jupyter-book build . -W -n --keep-going " --all-unless-warm' in line
    assert '--pytest ".venv/bin/pytest -q -n auto --dist loadscope"' in line
    assert "-- tests" in line and "--nbval --nbval-current-env" in line
    assert '--build ".venv/bin/jupyter-book build . -W -n --keep-going --all" --all-unless-warm' in \
        _make_test_line("BOOK_ALL=--all")


# ----------------------------------------------------------------- a warm clone's build

def _warm(tmp_path):
    """A checkout whose last make test build succeeded a minute ago, nothing changed since."""
    for name in ("_ext/course_book.py", "_ext/static/course/lang.js", "_config.yml", "_toc.yml",
                 ".venv/.installed", "_vendor/.stamp", "book/ch01.md", test_all.ENVIRONMENT, test_all.STAMP):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    now = time.time()
    for f in tmp_path.rglob("*"):
        if f.is_file():
            os.utime(f, (now - 120, now - 120))
    os.utime(tmp_path / test_all.STAMP, (now - 60, now - 60))
    return now


def test_a_warm_checkout_rebuilds_only_what_sphinx_sees_changed(tmp_path):
    now = _warm(tmp_path)
    assert test_all.full_build_reason(tmp_path, env={}) is None
    os.utime(tmp_path / "book/ch01.md", (now, now))          # a page: Sphinx's own cache sees it
    assert test_all.full_build_reason(tmp_path, env={}) is None
    os.utime(tmp_path / "_config.yml", (now - 61, now - 61))  # a second older than the build: not a change
    assert test_all.full_build_reason(tmp_path, env={}) is None
    cached = tmp_path / "_ext/__pycache__/course_book.cpython-311.pyc"   # Python's bytecode, written on import
    cached.parent.mkdir()
    cached.write_text("x")
    assert test_all.full_build_reason(tmp_path, env={}) is None


def test_every_page_is_built_under_ci_on_a_fresh_clone_or_after_what_sphinx_cannot_see(tmp_path):
    now = _warm(tmp_path)
    assert test_all.full_build_reason(tmp_path, env={"CI": "true"}) == "CI builds every page"
    for name in ("_ext/static/course/lang.js", "_ext/course_book.py", "_config.yml", "_toc.yml",
                 ".venv/.installed", "_vendor/.stamp"):
        os.utime(tmp_path / name, (now - 59, now - 59))      # a second newer than the build
        assert test_all.full_build_reason(tmp_path, env={}) == f"{name} changed since the last build"
        os.utime(tmp_path / name, (now - 120, now - 120))
    for missing in (test_all.STAMP, test_all.ENVIRONMENT):
        _warm(tmp_path)
        (tmp_path / missing).unlink()
        assert test_all.full_build_reason(tmp_path, env={}) == "no earlier make test build here"


def test_a_build_is_remembered_when_it_succeeds_and_its_cache_forgotten_when_it_fails(tmp_path):
    _warm(tmp_path)
    before = time.time()
    assert test_all.run(_recorder(tmp_path, "build", sleep=1.0), _recorder(tmp_path, "pytest"), ["tests/unit"], [],
                        remember=tmp_path) == 0
    (build,) = _calls(tmp_path, "build")
    stamped = (tmp_path / test_all.STAMP).stat().st_mtime
    assert before - 1 <= stamped <= build[1]              # dated when the build started, not when it ended
    assert test_all.full_build_reason(tmp_path, env={}) is None
    assert test_all.run(_recorder(tmp_path, "build", rc=1), _recorder(tmp_path, "pytest"), ["tests/unit"], [],
                        remember=tmp_path) == 1
    assert not (tmp_path / test_all.ENVIRONMENT).exists() and not (tmp_path / test_all.STAMP).exists()
    assert (tmp_path / "_ext/course_book.py").exists()    # nothing else removed


def test_main_adds_all_only_when_a_full_build_is_needed(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(test_all, "run", lambda build, *a, **k: seen.append(build) or 0)
    argv = ["--build", "jb build . -W", "--all-unless-warm", "--pytest", "pytest -q", "--", "tests", "--nbval"]
    monkeypatch.setattr(test_all, "full_build_reason", lambda: "_toc.yml changed since the last build")
    assert test_all.main(argv) == 0 and seen[-1] == ["jb", "build", ".", "-W", "--all"]
    assert "builds every page (_toc.yml changed since the last build)" in capsys.readouterr().out
    monkeypatch.setattr(test_all, "full_build_reason", lambda: None)
    assert test_all.main(argv) == 0 and seen[-1] == ["jb", "build", ".", "-W"]
    assert "rebuilds only the pages changed" in capsys.readouterr().out
    assert test_all.main(["--build", "jb build . --all", *argv[2:]]) == 0 and seen[-1].count("--all") == 1
    assert test_all.main(["--build", "jb build .", *argv[3:]]) == 0 and seen[-1] == ["jb", "build", "."]
