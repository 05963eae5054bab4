"""Under CI a skip fails the run; outside it, every skip's reason is printed."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import STAND_IN_FILES

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
SAMPLE = '''
import pytest

def test_runs():
    assert True

def test_skips():
    pytest.skip("needs a thing that is missing")

@pytest.mark.skip_in_ci_ok("optional hardware")
def test_allowed():
    pytest.skip("no GPU here")
'''
MODULE_SKIP = 'import pytest\npytest.skip("module needs a missing tool", allow_module_level=True)\n'


def _run(tmp_path, ci: bool, files: dict, args=()):
    for name in STAND_IN_FILES:
        shutil.copy(CONFTEST.parent / name, tmp_path / name)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    # Only the plugin the hooks are tested with (xdist): the others (nbval, hypothesis's, …) cost
    # seconds of imports in each of these pytest processes and play no part here.
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if ci:
        env["CI"] = "true"
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:cacheprovider -p xdist.plugin -rs\nmarkers =\n  skip_in_ci_ok(reason): allowed\n")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *args, str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True)


def test_outside_ci_skips_pass_and_print_their_reason(tmp_path):
    out = _run(tmp_path, ci=False, files={"test_sample.py": SAMPLE})
    assert out.returncode == 0, out.stdout
    assert "needs a thing that is missing" in out.stdout and "2 skipped" in out.stdout


def test_under_ci_a_skip_fails_unless_marked(tmp_path):
    out = _run(tmp_path, ci=True, files={"test_sample.py": SAMPLE})
    assert out.returncode == 1, out.stdout
    assert "skipped under CI, which is not allowed" in out.stdout
    assert "needs a thing that is missing" in out.stdout
    assert "1 failed, 1 passed, 1 skipped" in out.stdout


def test_under_ci_a_module_level_skip_fails(tmp_path):
    out = _run(tmp_path, ci=True, files={"test_mod.py": MODULE_SKIP})
    assert out.returncode != 0 and "module needs a missing tool" in out.stdout


def test_in_a_parallel_run_the_same_skips_fail_under_ci(tmp_path):
    """`make test` runs pytest-xdist workers (-n, --dist loadscope): the hooks still see every skip."""
    out = _run(tmp_path, ci=True, files={"test_sample.py": SAMPLE, "test_mod.py": MODULE_SKIP},
               args=("-n", "2", "--dist", "loadscope"))
    assert out.returncode == 1, out.stdout
    assert "skipped under CI, which is not allowed" in out.stdout
    assert "needs a thing that is missing" in out.stdout and "module needs a missing tool" in out.stdout
    assert "1 failed, 1 passed, 1 skipped, 1 error" in out.stdout.splitlines()[-1], out.stdout
    quiet = _run(tmp_path, ci=False, files={}, args=("-n", "2", "--dist", "loadscope"))
    assert quiet.returncode == 0 and "needs a thing that is missing" in quiet.stdout, quiet.stdout
    assert "1 passed, 3 skipped" in quiet.stdout.splitlines()[-1], quiet.stdout
