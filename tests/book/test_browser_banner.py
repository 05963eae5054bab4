"""Without Chromium, the browser tests skip, and the run ends with a loud bilingual banner.

Under CI they fail instead. Each case runs pytest in a subprocess on the
browser test modules, with COURSE_CHROMIUM (which they honour) pointing at a
path that does not exist. The modules skip or fail at import, so this is quick.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["tests/book/test_widgets_browser.py", "tests/book/test_browser.py"]


# The subprocesses load no plugin (nbval, hypothesis's, …: seconds of imports each): the banner
# and the failure under CI come from tests/conftest.py alone.
QUIET = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _run(ci: bool):
    env = {k: v for k, v in os.environ.items() if k != "CI"} | QUIET
    env["COURSE_CHROMIUM"] = str(ROOT / "no-such-dir" / "chromium")
    if ci:
        env["CI"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *MODULES],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_missing_chromium_skips_with_a_banner_at_the_end():
    r = _run(ci=False)
    # 5: pytest collected no test (both modules skipped whole); nothing failed
    assert r.returncode in (0, 5) and "error" not in r.stdout.lower(), r.stdout + r.stderr
    out = r.stdout
    assert "BROWSER TESTS SKIPPED: Chromium is missing (2 module(s) or test(s))" in out
    assert "浏览器测试已跳过" in out and "sudo apt-get install chromium" in out
    # at the end: after pytest's own short summary
    assert out.rindex("sudo apt-get install chromium") > out.rindex("SKIPPED [1]")


def test_missing_chromium_fails_under_ci():
    r = _run(ci=True)
    assert r.returncode != 0
    assert "browser tests cannot run under CI" in r.stdout + r.stderr
    assert "BROWSER TESTS SKIPPED" not in r.stdout


def test_no_banner_when_no_browser_test_was_skipped():
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "tests/unit/test_widgets.py", "-k", "show_is_fmt"],
                       cwd=ROOT, env=os.environ | QUIET, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout
    assert "BROWSER TESTS SKIPPED" not in r.stdout
