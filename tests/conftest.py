"""The shared kit of the test suite (``tests/unit``, ``tests/chapters``, ``tests/book``).

For the exercise-checker tests (``tests/chapters/test_exercises*.py``, which
import it as ``from conftest import ...``): typical wrong learners (a stub, a
function that raises, one that forgets to return), a hypothesis strategy for
"anything a learner's function might return or raise", the assertion that a
verdict names the right mistake, and the two tests every chapter's checkers
get (:func:`wrong_submissions_test`, :func:`never_raises_test`).
"""

import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def stub(*args):
    raise NotImplementedError


def raises(*args):
    raise ValueError("boom")


def returns_none(*args):
    return None


def anything():
    """Any value a learner's function might return."""
    arrays = st.integers(0, 3).flatmap(
        lambda n: st.lists(st.integers(1, 3), min_size=n, max_size=n)).map(lambda shape: np.full(shape, 0.5))
    return st.one_of(st.none(), st.text(max_size=5), st.integers(), st.floats(), arrays,
                     st.just(np.array([np.nan, np.inf])), st.just(object()),
                     st.lists(st.floats(), max_size=4), st.tuples(arrays, arrays),
                     st.just({"a": 1}), st.just(...), st.complex_numbers(max_magnitude=10))


#: Exceptions a learner's function might raise (None: it returns instead).
ERRORS = st.sampled_from([None, ValueError, ZeroDivisionError, KeyError, NotImplementedError,
                          MemoryError, RecursionError, SystemExit])


def learner(result, error):
    """A learner's function that returns ``result``, or raises ``error`` if given."""
    def fn(*args):
        if error is not None:
            raise error("learner code failed")
        return result
    return fn


def wrong_cases(table: dict) -> list:
    """Flatten ``{name: (checker, [(learner, pattern), ...])}`` into test parameters."""
    return [(name, check, fn, match) for name, (check, subs) in table.items() for fn, match in subs]


def assert_says(verdict, match: str, name: str = "") -> None:
    """The verdict fails, lists a problem, and its text matches ``match``."""
    assert not verdict.ok
    assert verdict.problems
    assert re.search(match, repr(verdict), re.M), f"{name}: {verdict!r} does not say {match!r}"


def wrong_submissions_test(table: dict):
    """The test that every typical wrong answer in ``table`` gets the right message.

    ``table`` is ``{name: (checker, [(learner, pattern), ...])}``; use as
    ``test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)``.
    """
    cases = wrong_cases(table)

    @pytest.mark.parametrize("name,check,fn,match", cases, ids=[f"{c[0]}-{i}" for i, c in enumerate(cases)])
    def test_wrong_submissions_get_the_right_message(name, check, fn, match):
        assert_says(check(fn), match, name)
    return test_wrong_submissions_get_the_right_message


def never_raises_test(coding=(), by_hand=(), results=None):
    """The hypothesis test that no checker ever raises, whatever the learner does.

    Args:
        coding: checkers of a learner's *function* (it returns anything or raises).
        by_hand: checkers of a learner's *value* (anything at all).
        results: the hypothesis strategy of returned values; :func:`anything` by default.
    """
    from course_lib.chapters._check import Verdict

    @settings(max_examples=40, deadline=None)
    @given(result=anything() if results is None else results, error=ERRORS)
    def test_no_checker_ever_raises(result, error):
        fn = learner(result, error)
        verdicts = [check(fn) for check in coding] + [check(result) for check in by_hand]
        for verdict in verdicts:
            assert isinstance(verdict, Verdict) and isinstance(repr(verdict), str)
            assert isinstance(verdict._repr_markdown_(), str)
    return test_no_checker_ever_raises


def right_answers_test(table: dict):
    """The test that every right answer in ``table`` (``{name: (checker, answer)}``) gets ✓."""
    @pytest.mark.parametrize("name", table)
    def test_right_answers_pass(name):
        check, answer = table[name]
        verdict = check(answer)
        assert verdict.ok, f"{name}: {verdict!r}"
        assert repr(verdict).startswith("✓")
    return test_right_answers_pass


def _nudged(answer, delta, everywhere: bool):
    """``answer`` (a value or a tuple of them) moved by ``delta``: every entry, or one entry of its last part."""
    if isinstance(answer, tuple):
        head = tuple(_nudged(a, delta, True) for a in answer[:-1]) if everywhere else answer[:-1]
        return head + (_nudged(answer[-1], delta, everywhere),)
    arr = np.array(answer, dtype=float)
    if everywhere:
        return arr + delta
    arr.flat[0] += delta
    return arr


def tolerance_test(table: dict):
    """The test that pins each checker's tolerance from both sides.

    ``table`` is ``{name: (checker, right, atol)}``, ``right`` the right value
    (a by-hand exercise) or a right function (a coding exercise, whose result
    is moved). Every entry moved by ±atol/2 must pass; one entry moved by
    ±2·atol must fail, so a loosened (or tightened) tolerance fails this test.
    """
    @pytest.mark.parametrize("sign", [1, -1], ids=["plus", "minus"])
    @pytest.mark.parametrize("name", table)
    def test_the_tolerance_is_pinned(name, sign):
        check, right, atol = table[name]

        def moved(delta, everywhere):
            if callable(right):
                return lambda *args: _nudged(right(*args), delta, everywhere)
            return _nudged(right, delta, everywhere)
        inside = check(moved(sign * atol / 2, True))
        assert inside.ok, f"{name}: the right answer ± atol/2 must pass: {inside!r}"
        assert_says(check(moved(sign * 2 * atol, False)), r"wrong value at position", name)
    return test_the_tolerance_is_pinned


# --------------------------------------------------------------------------- no silent skips under CI
# A skipped test proves nothing. Under CI (`CI` set) every skip, of a test or of
# a whole module, is turned into a failure that names its reason; a test may
# only skip there if it carries `@pytest.mark.skip_in_ci_ok("why")`. Outside CI
# the reasons of all skips are printed at the end of the run (-rs in pyproject).

def _skip_allowed(item) -> bool:
    return item is not None and item.get_closest_marker("skip_in_ci_ok") is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not _skip_allowed(item) \
            and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which is not allowed: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{collector.nodeid} skipped under CI, which is not allowed: {reason}"


# ---- the end of every run: say loudly when the browser tests could not run ---------------------

CHROMIUM_MISSING = "Chromium is not installed"   # the skip reason of tests/book/test_*browser*.py, test_pdf.py


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """A bilingual banner when browser tests were skipped because Chromium is missing,
    printed after pytest's own short summary (outermost wrapper, code after ``yield``).

    (Under CI those modules raise instead of skipping, so the run fails.)
    """
    yield
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if CHROMIUM_MISSING in str(getattr(r, "longrepr", ""))]
    if not skipped:
        return
    tw = terminalreporter
    line = "!" * 78
    tw.write_line(line, red=True, bold=True)
    tw.write_line(f"BROWSER TESTS SKIPPED: Chromium is missing ({len(skipped)} module(s) or test(s)).",
                  red=True, bold=True)
    tw.write_line("The built book, the widgets and the PDF were NOT checked in a browser.", red=True)
    tw.write_line("浏览器测试已跳过：未安装 Chromium。本书网页、交互控件和 PDF 均未在浏览器中检查。",
                  red=True, bold=True)
    tw.write_line("Install it, then run the tests again · 请安装后重新运行测试:", red=True)
    tw.write_line("    sudo apt-get install chromium", bold=True)
    tw.write_line(line, red=True, bold=True)


# ---- the browser kit of tests/book/test_*browser*.py: Chromium, a local server, watched pages ----

import contextlib        # noqa: E402
import functools         # noqa: E402
import http.server       # noqa: E402
import threading         # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import urlparse  # noqa: E402

CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))  # another path: tests of the banner
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def need_chromium(module: str, also_missing: str | None = None):
    """At a browser test module's top: skip it whole when Chromium (or ``also_missing``, a reason)
    is missing, printing why; under CI raise instead, so the run fails."""
    why = (f"{CHROMIUM_MISSING} at {CHROMIUM} (apt-get install chromium)" if not CHROMIUM.exists()
           else also_missing)
    if why is None:
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"{module} cannot run under CI: {why}")
    pytest.skip(f"{module} skipped: {why}", allow_module_level=True)


from page_visits import page_visits  # noqa: E402,F401  (the session fixture: one visit a page)

STAND_IN_FILES = ("conftest.py", "page_visits.py")
"""What a copy of this conftest needs beside it (the stand-in runs of tests/unit/test_parallel.py
and test_ci_skips.py)."""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory):
    """Serve ``directory`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        thread.join(timeout=10)


_BROWSER: list = []   # [playwright, browser, how many hold it] while a `with chromium()` is open


@contextlib.contextmanager
def chromium():
    """Debian's Chromium, headless, driven by playwright; yields the browser.

    Nested uses share one browser (Playwright's sync API runs one instance at a time): a module
    holds it for its tests, and the page visits the browser modules share (tests/page_visits.py)
    borrow it for each visit. It closes when the outermost ``with`` ends, so that the next module
    (an asyncio server, JupyterLab) finds no Playwright event loop running."""
    if not _BROWSER:
        from playwright.sync_api import sync_playwright
        p = sync_playwright().start()
        try:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        except BaseException:
            p.stop()
            raise
        _BROWSER.extend([p, browser, 0])
    _BROWSER[2] += 1
    try:
        yield _BROWSER[1]
    finally:
        _BROWSER[2] -= 1
        if _BROWSER[2] == 0:
            p, browser, _ = _BROWSER
            _BROWSER.clear()
            try:
                browser.close()
            finally:
                p.stop()


def watch(page, errors: list, foreign: list):
    """Record ``page``'s console errors and uncaught exceptions in ``errors``, and every
    request to a host other than 127.0.0.1 (file:, data:, blob: and about: are local) in ``foreign``."""
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def check(req):
        u = urlparse(req.url)
        if u.scheme not in ("file", "data", "blob", "about") and u.hostname != "127.0.0.1":
            foreign.append(req.url)
    page.on("request", check)


def wait_for_stored(page, key: str, value: str, timeout_ms: int = 10000) -> bool:
    """Poll ``localStorage[key]`` in ``page`` until it equals ``value`` (True) or ``timeout_ms`` has
    passed (False). Chromium hands a page's localStorage write to the browser process
    asynchronously: a page of the same context that reads the value has it from there, so a
    reload after this cannot outrun the write (on a loaded machine it could)."""
    return page.evaluate("""([key, value, limit]) => new Promise(done => {
        const t0 = Date.now(), poll = () => localStorage.getItem(key) === value ? done(true)
            : Date.now() - t0 > limit ? done(false) : setTimeout(poll, 50);
        poll();
    })""", [key, value, timeout_ms])


@contextlib.contextmanager
def page_opener(browser, base: str, timeout_ms: int = 15000):
    """Yields ``open(path) -> page`` for pages under ``base`` (http://… or file://…), all in one
    browser context; on leaving, asserts that no page logged a console error or asked another host."""
    context = browser.new_context()
    context.set_default_timeout(timeout_ms)
    errors, foreign = [], []

    def _open(path):
        page = context.new_page()
        watch(page, errors, foreign)
        page.goto(f"{base}/{path}", wait_until="load")
        return page

    yield _open
    context.close()
    assert not errors, f"console errors: {errors}"
    assert not foreign, f"requests to other hosts: {foreign}"


# ---- parallel runs (pytest-xdist, `make test`, `make check`): what stays in one worker -------------
# `make test` runs `pytest -n auto --dist loadscope`: each scope (a test module, a class, a notebook)
# runs whole in one worker, so a notebook's cells share one kernel and a module's fixtures are made
# once. Modules that start a browser or a server, or read the built book in `_build/`, form ONE
# scope instead: one worker runs them one after another (while the others run the rest), so they
# never race for a port, a page or the CPU's attention. They are found by what they import
# (serial_reason); SERIAL_MODULES adds those that say nothing of it. tests/unit/test_parallel.py.

import ast  # noqa: E402
import json  # noqa: E402

SERIAL_MODULES = (
    "tests/book/test_browser_banner.py",   # pytest on the browser modules, in subprocesses
    "tests/book/test_lab.py",              # JupyterLab's contents manager
)
SERVING = frozenset({"chromium", "serve", "page_opener", "running_server", "visit_step"})  # imported at module level
SERIAL_SCOPE = "serial: browsers, servers, the built book"
_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def serial_reason(module: str) -> str | None:
    """Why the test module ``module`` (its path from the repository's root) runs in the serial
    scope: it is listed, imports a name of :data:`SERVING` at module level, or names ``"_build"``."""
    if module in SERIAL_MODULES:
        return "listed in SERIAL_MODULES"
    path = _ROOT / module
    if path.suffix != ".py" or not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    names = sorted({a.name for node in ast.parse(text).body if isinstance(node, ast.ImportFrom)
                    for a in node.names if a.name in SERVING})
    if names:
        return f"imports {', '.join(names)}"
    if re.search(r"""["']_build["']""", text):
        return "reads the built book (_build)"
    return None


def xdist_scope(nodeid: str) -> str:
    """The unit of work of ``--dist loadscope`` for ``nodeid``: :data:`SERIAL_SCOPE` for a module
    with a :func:`serial_reason`, else xdist's own (the module, the class, or the notebook)."""
    if serial_reason(nodeid.split("::", 1)[0]):
        return SERIAL_SCOPE
    return nodeid.rsplit("::", 1)[0]


def pytest_configure(config):
    """In a pytest-xdist worker, everything runs on one thread unless ``OMP_NUM_THREADS`` says
    otherwise: torch and the BLAS libraries of the worker, and, through ``OMP_NUM_THREADS=1`` and
    ``MKL_NUM_THREADS=1`` in its environment, the notebook kernels it starts
    (``course_lib.repro.setup`` reads it). ``-n auto`` already keeps every core busy: two threads
    per worker on two cores ran the unit tests slower than no parallelism at all, and the four
    longest notebooks 33 % slower (126 s against 95 s on 2 workers). Every notebook must match
    its stored outputs at any thread count; ``make test-portable`` runs them with one thread and
    with three, its own setting. A test that needs a thread count sets it.

    In every run, a notebook kernel that dies at its start is started again
    (:func:`retry_kernel_start`)."""
    _install_kernel_retry()
    in_worker = hasattr(config, "workerinput")   # xdist's own mark; not an inherited environment
    if in_worker and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ.setdefault("MKL_NUM_THREADS", "1")
        import torch
        from threadpoolctl import threadpool_limits
        torch.set_num_threads(1)
        threadpool_limits(1)


KERNEL_START_ATTEMPTS = 3


def retry_kernel_start(start, attempts: int = KERNEL_START_ATTEMPTS):
    """``start`` (nbval's ``start_new_kernel``), started again when the kernel dies before it
    answers, up to ``attempts`` times in all. jupyter_client picks a new kernel's TCP ports by
    binding port 0 and letting go; another process (a worker's kernel, a test's server, Chromium)
    can take one before the kernel binds it, and the kernel exits at once ("Kernel died before
    replying to kernel_info"; seen in a parallel make test). The kernel has run no cell, so a new
    one checks exactly the same; any other failure, and the last attempt's, is raised."""
    @functools.wraps(start)
    def start_new_kernel(*args, **kwargs):
        for attempt in range(1, attempts + 1):
            try:
                return start(*args, **kwargs)
            except RuntimeError as e:
                if "died before replying" not in str(e) or attempt == attempts:
                    raise
                import warnings
                warnings.warn(f"a notebook kernel died at its start ({e}); starting another "
                              f"(attempt {attempt + 1} of {attempts})", RuntimeWarning, stacklevel=2)
    return start_new_kernel


def _install_kernel_retry():
    try:
        import nbval.kernel
    except ImportError:
        return
    if not hasattr(nbval.kernel.start_new_kernel, "__wrapped__"):   # RunningKernel looks it up here
        nbval.kernel.start_new_kernel = retry_kernel_start(nbval.kernel.start_new_kernel)


# The longest scopes go first, so that the run does not end with one worker on a long notebook
# while the other core idles. xdist's own order (most tests first) put test_grading (9 tests, the
# longest scope of run A) near the end. The seconds are measured: `make scope-seconds` rewrites SCOPE_SECONDS_FILE.
SCOPE_SECONDS_FILE = _ROOT / "tests" / "scope_seconds.json"


def scope_order(nodeids: list[str], seconds: dict[str, float]) -> list[str]:
    """``nodeids`` regrouped by :func:`xdist_scope`, the longest scope first (its measured
    ``seconds``; a scope not measured counts 0.1 s a test). Each scope's tests keep their order."""
    scopes: dict[str, list[str]] = {}
    for nodeid in nodeids:
        scopes.setdefault(xdist_scope(nodeid), []).append(nodeid)
    ranked = sorted(scopes.items(), key=lambda kv: -seconds.get(kv[0], 0.1 * len(kv[1])))  # stable
    return [nodeid for _, ids in ranked for nodeid in ids]


def pytest_collection_modifyitems(session, config, items):
    """In a pytest-xdist worker, the tests in :func:`scope_order` (every worker sorts alike, and
    ``--dist loadscope`` schedules the scopes in the order collected). A serial run is untouched."""
    if not hasattr(config, "workerinput"):     # (a worker's own "dist" option is always "no")
        return
    seconds = json.loads(SCOPE_SECONDS_FILE.read_text()) if SCOPE_SECONDS_FILE.exists() else {}
    rank = {nodeid: k for k, nodeid in enumerate(scope_order([i.nodeid for i in items], seconds))}
    items.sort(key=lambda item: rank[item.nodeid])


def pytest_addoption(parser):
    parser.addoption("--record-scope-seconds", metavar="FILE", default=None,
                     help="write each xdist scope's seconds (setup, call, teardown) to FILE as JSON")


_SCOPE_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    scope = xdist_scope(report.nodeid)
    _SCOPE_SECONDS[scope] = _SCOPE_SECONDS.get(scope, 0.0) + report.duration


def pytest_sessionfinish(session):
    out = session.config.getoption("--record-scope-seconds")
    if out and not hasattr(session.config, "workerinput"):
        rows = dict(sorted(((k, round(v, 1)) for k, v in _SCOPE_SECONDS.items()), key=lambda kv: -kv[1]))
        Path(out).write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` with :func:`xdist_scope` as its scopes, in the order the workers
    collected them (:func:`scope_order`), not xdist's (other modes: xdist's own)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling
    config.option.loadscopereorder = False

    class CourseScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return xdist_scope(nodeid)
    return CourseScopeScheduling(config, log)
