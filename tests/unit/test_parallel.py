"""`make test` runs pytest in parallel (pytest-xdist, ``-n auto --dist loadscope``): what stays together.

Each notebook runs whole in one worker (its cells share one kernel), each test
module or class too, and the modules that start a browser or a server or read
the built book form one scope, run one after another by one worker
(``tests/conftest.py``: ``serial_reason``, ``xdist_scope``).
"""

import os
import re
import shutil
import subprocess
import sys

from conftest import SERIAL_MODULES, SERIAL_SCOPE, serial_reason, xdist_scope
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
    assert serial_reason("tests/book/test_browser.py") == "imports chromium, serve"
    assert serial_reason("tests/book/test_offline_html.py") == "reads the built book (_build)"


def test_scopes():
    assert xdist_scope("book/ch02_worked_qkv.ipynb::Cell 3") == "book/ch02_worked_qkv.ipynb"
    assert xdist_scope("book/appendix/errata.ipynb::Cell 0") == "book/appendix/errata.ipynb"
    assert xdist_scope("tests/unit/test_text.py::test_vocab[a-1]") == "tests/unit/test_text.py"
    assert xdist_scope("tests/unit/test_x.py::TestThing::test_y") == "tests/unit/test_x.py::TestThing"
    for module in KNOWN_SERIAL:
        assert xdist_scope(f"{module}::test_anything[1]") == SERIAL_SCOPE


SAMPLE = "import time\n\n" + "".join(f"def test_{i}():\n    time.sleep(0.2)\n\n\n" for i in range(3))


def test_serial_modules_run_in_one_worker(tmp_path):
    """A real parallel run on stand-ins: the serial ones in one worker, the rest shared out."""
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    serial = [*SERIAL_MODULES[:2], "tests/book/test_reads_build.py"]
    modules = [serial[0], "tests/unit/test_a.py", serial[1], "tests/unit/test_b.py", serial[2],
               "tests/unit/test_c.py"]
    for module in modules:
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text(SAMPLE)
    (tmp_path / serial[2]).write_text('HTML = "_%s"\n' % "build" + SAMPLE)  # found by what it reads
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p xdist.plugin\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # xdist alone
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
    (tmp_path / "tests").mkdir(exist_ok=True)
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    (tmp_path / "tests" / "test_threads.py").write_text(THREADS)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p xdist.plugin\n")
    env = {k: v for k, v in os.environ.items()   # as a shell would start it: nothing from this run's workers
           if k not in ("CI", "OMP_NUM_THREADS", "MKL_NUM_THREADS") and not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", n_workers, "tests/test_threads.py"],
                         cwd=tmp_path, env=env | env_extra, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return (tmp_path / "threads.txt").read_text()


def test_a_worker_and_the_kernels_it_starts_run_one_thread(tmp_path):
    """A notebook kernel is a child process of its worker: it inherits one thread too, unless
    ``OMP_NUM_THREADS`` was set for the run (``make test-portable`` sets 1 and 3)."""
    assert _threads_seen(tmp_path, "2") == "worker=1 kernel=1"
    chosen = _threads_seen(tmp_path, "2", OMP_NUM_THREADS="3")     # torch caps it at the cores
    assert chosen.endswith(" kernel=3") and not chosen.startswith("worker=1 "), chosen
    serial = _threads_seen(tmp_path, "0")                                # no workers: nothing changed
    assert serial.startswith("worker=") and serial.endswith(" kernel=None"), serial
    # a serial run started from inside a worker (as this test's are) inherits PYTEST_XDIST_WORKER
    assert _threads_seen(tmp_path, "0", PYTEST_XDIST_WORKER="gw0").endswith(" kernel=None")
