"""`make test` runs pytest in parallel (pytest-xdist, ``-n auto --dist loadscope``): what stays together.

Each notebook runs whole in one worker (its cells share one kernel), each test
module or class too, and the modules that start a browser or a server or read
the built book form one scope, run one after another by one worker
(``tests/conftest.py``: ``serial_reason``, ``xdist_scope``).
"""

import json
import os
import re
import shutil
import subprocess
import sys

from conftest import (SCOPE_SECONDS_FILE, SERIAL_MODULES, SERIAL_SCOPE, STAND_IN_FILES, scope_order, serial_reason,
                      xdist_scope)
from toc import ROOT

#: Today's modules that must be serial; the rule must keep finding them.
KNOWN_SERIAL = ["tests/book/test_browser.py", "tests/book/test_widgets_browser.py",
                "tests/book/test_service_page.py", "tests/book/test_pdf.py",
                "tests/book/test_offline_html.py", "tests/unit/test_service_load.py",
                "tests/book/test_browser_banner.py", "tests/book/test_lab.py"]


def test_serial_modules_are_found():
    for module in SERIAL_MODULES:
        assert (ROOT / module).is_file(), f"SERIAL_MODULES names {module}, which does not exist"
    for module in KNOWN_SERIAL:
        if (ROOT / module).is_file():
            assert serial_reason(module), module
    for module in ["tests/unit/test_text.py", "tests/unit/test_service_bad_input.py",  # imports running_server in a test only
                   "tests/book/test_book_structure.py", "tests/unit/test_parallel.py"]:
        assert serial_reason(module) is None, (module, serial_reason(module))
    assert serial_reason("tests/book/test_browser.py") == "imports chromium, serve, visit_step"
    assert serial_reason("tests/book/test_visible_text.py") == "imports chromium, visit_step"
    assert serial_reason("tests/book/test_offline_html.py") == "reads the built book (_build)"


def test_scopes():
    assert xdist_scope("book/ch02_worked_qkv.ipynb::Cell 3") == "book/ch02_worked_qkv.ipynb"
    assert xdist_scope("book/appendix/errata.ipynb::Cell 0") == "book/appendix/errata.ipynb"
    assert xdist_scope("tests/unit/test_text.py::test_vocab[a-1]") == "tests/unit/test_text.py"
    assert xdist_scope("tests/unit/test_x.py::TestThing::test_y") == "tests/unit/test_x.py::TestThing"
    for module in KNOWN_SERIAL:
        assert xdist_scope(f"{module}::test_anything[1]") == SERIAL_SCOPE


SAMPLE = "import time\n\n" + "".join(f"def test_{i}():\n    time.sleep(0.2)\n\n\n" for i in range(3))


def _stand_in(tmp_path) -> dict:
    """``tmp_path`` set up as a repository with today's ``tests/conftest.py`` (and the module it
    imports) and xdist as its only plugin (the others cost seconds of imports); returns the
    environment to run pytest in there: as a shell would start it, without CI or anything from
    this run's own workers."""
    (tmp_path / "tests").mkdir(exist_ok=True)
    for name in STAND_IN_FILES:
        shutil.copy(ROOT / "tests" / name, tmp_path / "tests" / name)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p xdist.plugin\n")
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith("PYTEST_")}
    return env | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def test_serial_modules_run_in_one_worker(tmp_path):
    """A real parallel run on stand-ins: the serial ones in one worker, the rest shared out."""
    env = _stand_in(tmp_path)
    serial = [*SERIAL_MODULES[:2], "tests/book/test_reads_build.py"]
    modules = [serial[0], "tests/unit/test_a.py", serial[1], "tests/unit/test_b.py", serial[2],
               "tests/unit/test_c.py"]
    for module in modules:
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(SAMPLE)
    (tmp_path / serial[2]).write_text('HTML = "_%s"\n' % "build" + SAMPLE)  # found by what it reads
    out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "2", "--dist", "loadscope", *modules],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    workers = {}
    for worker, module in re.findall(r"\[(gw\d+)\][^\n]*?PASSED (\S+?)::", out.stdout):
        workers.setdefault(module, set()).add(worker)
    assert sorted(workers) == sorted(modules), out.stdout
    assert all(len(w) == 1 for w in workers.values()), workers                 # a module never splits
    assert len({min(workers[m]) for m in serial}) == 1, workers                 # the serial ones share one
    assert len(set().union(*workers.values())) == 2, workers                    # and the run was parallel


THREADS = """\
import os
import subprocess
import sys

import torch


def test_threads():
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('OMP_NUM_THREADS'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    with open("threads.txt", "w") as f:     # a worker's output is not shown: write it down
        f.write(f"worker={torch.get_num_threads()} kernel={child}")
"""


def _threads_seen(tmp_path, n_workers: str, **env_extra) -> str:
    env = {k: v for k, v in _stand_in(tmp_path).items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    (tmp_path / "tests" / "test_threads.py").write_text(THREADS)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", n_workers, "tests/test_threads.py"],
                         cwd=tmp_path, env=env | env_extra, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return (tmp_path / "threads.txt").read_text()


def test_a_worker_and_the_kernels_it_starts_run_one_thread(tmp_path):
    """A notebook kernel is a child process of its worker: it inherits one thread too, unless
    ``OMP_NUM_THREADS`` was set for the run (``make test-portable`` sets 1 and 3). One worker
    (``-n 1``) is a worker as two are (conftest asks xdist, not the count), and starts one
    process, one import of torch, fewer."""
    assert _threads_seen(tmp_path, "1") == "worker=1 kernel=1"
    chosen = _threads_seen(tmp_path, "1", OMP_NUM_THREADS="3")     # torch caps it at the cores
    assert chosen.endswith(" kernel=3") and not chosen.startswith("worker=1 "), chosen
    serial = _threads_seen(tmp_path, "0")                                # no workers: nothing changed
    assert serial.startswith("worker=") and serial.endswith(" kernel=None"), serial
    # a serial run started from inside a worker (as this test's are) inherits PYTEST_XDIST_WORKER
    assert _threads_seen(tmp_path, "0", PYTEST_XDIST_WORKER="gw0").endswith(" kernel=None")


def test_scope_order_puts_the_longest_scope_first_and_keeps_each_scope_together():
    ids = ["tests/unit/test_a.py::test_1", "tests/unit/test_a.py::test_2", "tests/unit/test_a.py::test_3",
           "tests/unit/test_b.py::test_1", "book/ch07.ipynb::Cell 0", "book/ch07.ipynb::Cell 1",
           "tests/unit/test_c.py::T::test_1", "tests/unit/test_a.py::test_4"]
    # measured: ch07 longest; test_c not measured counts 0.1 s a test (0.1), below test_b's 0.2
    seconds = {"book/ch07.ipynb": 90.0, "tests/unit/test_a.py": 5.0, "tests/unit/test_b.py": 0.2}
    assert scope_order(ids, seconds) == [
        "book/ch07.ipynb::Cell 0", "book/ch07.ipynb::Cell 1",
        "tests/unit/test_a.py::test_1", "tests/unit/test_a.py::test_2", "tests/unit/test_a.py::test_3",
        "tests/unit/test_a.py::test_4",
        "tests/unit/test_b.py::test_1", "tests/unit/test_c.py::T::test_1"]
    # nothing measured: most tests first (xdist's own rule); a tie keeps the collected order
    assert scope_order(ids, {}) == [*ids[:3], ids[7], ids[4], ids[5], ids[3], ids[6]]
    # the serial scope is one scope, ranked by its measured seconds like the rest
    serial = [f"{KNOWN_SERIAL[0]}::test_x", f"{KNOWN_SERIAL[1]}::test_y"]
    assert scope_order([ids[3], *serial], {SERIAL_SCOPE: 300.0})[:2] == serial


def test_a_worker_runs_the_scopes_in_measured_order_and_records_them(tmp_path):
    """A real ``-n 1`` run on stand-ins: with the measured seconds the one-test module runs
    first; without them, the module with more tests (xdist's own order); and
    ``--record-scope-seconds`` writes every scope's time."""
    env = _stand_in(tmp_path)
    (tmp_path / "tests" / "test_few.py").write_text("import time\n\ndef test_one():\n    time.sleep(0.3)\n")
    (tmp_path / "tests" / "test_many.py").write_text("".join(f"def test_{i}():\n    pass\n\n" for i in range(4)))

    def first_module(*extra):
        out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "1", "--dist", "loadscope", *extra,
                              "tests"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        return re.findall(r"PASSED (tests/\w+\.py)::", out.stdout)[0]

    assert first_module() == "tests/test_many.py"
    (tmp_path / "tests" / "scope_seconds.json").write_text('{"tests/test_few.py": 30.0, "tests/test_many.py": 1.0}')
    assert first_module("--record-scope-seconds", str(tmp_path / "rec.json")) == "tests/test_few.py"
    recorded = json.loads((tmp_path / "rec.json").read_text())
    assert list(recorded) == ["tests/test_few.py", "tests/test_many.py"]       # the longest first
    assert recorded["tests/test_few.py"] >= 0.3 > recorded["tests/test_many.py"]


def test_the_measured_scopes_exist():
    """Every scope in tests/scope_seconds.json is a notebook, a module or the serial scope of
    today's tree: a renamed one would silently fall back to its number of tests."""
    seconds = json.loads(SCOPE_SECONDS_FILE.read_text())
    assert len(seconds) > 50
    for scope in seconds:
        path = scope.split("::")[0]
        assert scope == SERIAL_SCOPE or (ROOT / path).is_file(), f"{scope} is measured but no longer exists"
