"""The built book in a real browser, served from 127.0.0.1 and opened from disk.

Needs the book built (`make test` builds it first) and Debian's Chromium at
/usr/bin/chromium, driven by the Python playwright package (no browser
download). Without Chromium these tests skip, except under CI, where a
missing browser is an error.
"""

from urllib.parse import quote

import pytest

from conftest import chromium, need_chromium, serve, wait_for_stored, watch
from page_visits import visit_step
from toc import ROOT, pages

HTML = ROOT / "_build" / "html"

pytestmark = pytest.mark.browser

need_chromium("browser tests", None if (HTML / "index.html").exists() else
              "the book is not built (run `make book`)")


@pytest.fixture(scope="module")
def server():
    with serve(HTML) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _base(kind, server):
    return server if kind == "http" else HTML.as_uri()


def _open(browser, url):
    """Open url in a fresh context; return (page, console errors, foreign requests)."""
    page = browser.new_context().new_page()
    errors, foreign = [], []
    watch(page, errors, foreign)
    page.goto(url, wait_until="load")
    return page, errors, foreign


def _wait_rendered(page):
    page.wait_for_function("() => !window.MathJax || (window.MathJax.startup && "
                           "window.MathJax.startup.promise)", timeout=20000)
    page.evaluate("() => window.MathJax ? window.MathJax.startup.promise : null")
    page.wait_for_function("() => [...document.querySelectorAll('pre.mermaid')]"
                           ".every(p => p.querySelector('svg'))", timeout=30000)


@visit_step("render", rank=0)
def rendered(page) -> dict:
    """Wait until MathJax and mermaid are done; count what they drew, and read the article's text."""
    _wait_rendered(page)
    return {"math": page.locator("div.math, span.math").count(), "mjx": page.locator("mjx-container").count(),
            "text": page.inner_text("article"), "diagrams": page.locator("pre.mermaid").count(),
            "drawn": page.locator("pre.mermaid svg").count()}


@pytest.mark.parametrize("kind", ["http", "file"])
@pytest.mark.parametrize("page_path", pages())
def test_page_renders_offline(browser, server, page_visits, kind, page_path):
    """Over http the page is read from the visit shared with the other browser modules (page_visits);
    from disk it is opened here."""
    if kind == "http":
        seen = page_visits(HTML, page_path)
        got, errors, foreign = seen.step("render"), seen.errors, seen.foreign
    else:
        page, errors, foreign = _open(browser, f"{HTML.as_uri()}/{page_path}.html")
        got = rendered(page)
        page.context.close()
    if got["math"]:
        assert got["mjx"] >= got["math"], f"{page_path}: {got['math']} formulas but {got['mjx']} rendered by MathJax"
    assert "$$" not in got["text"], f"{page_path}: raw $$ left in the text"
    assert got["drawn"] == got["diagrams"], f"{page_path}: {got['diagrams']} diagrams, {got['drawn']} drawn"
    assert not foreign, f"{page_path}: requests to other hosts: {foreign}"
    assert not errors, f"{page_path}: console errors: {errors}"


def _visible(page, selector):
    return page.evaluate(
        f"() => [...document.querySelectorAll('{selector}')].filter(e => e.offsetParent !== null).length")


@pytest.mark.parametrize("kind", ["http", "file"])
def test_language_switch_hides_shows_and_persists(browser, server, kind):
    base = _base(kind, server)
    page, errors, _ = _open(browser, f"{base}/book/ch02_worked_qkv.html")
    n_en, n_zh = page.locator(".lang-en").count(), page.locator(".lang-zh").count()
    assert n_en > 5 and n_zh > 5
    assert _visible(page, ".lang-en") == n_en and _visible(page, ".lang-zh") == n_zh  # default: both

    page.click(".course-lang-switch button[value=en]")
    assert _visible(page, ".lang-zh") == 0 and _visible(page, ".lang-en") == n_en
    # another page of the context must see the choice before the reload (wait_for_stored); it
    # stays open over the reload, as a reader's other tab would
    probe = page.context.new_page()
    probe.goto(f"{base}/book/intro.html", wait_until="load")
    assert wait_for_stored(probe, "course-lang", "en"), "the choice was not stored (localStorage 'course-lang')"
    page.reload(wait_until="load")
    assert _visible(page, ".lang-zh") == 0, "the choice did not survive a reload"
    probe.close()
    assert page.get_attribute(".course-lang-switch button[value=en]", "aria-pressed") == "true"
    page.goto(f"{base}/book/intro.html", wait_until="load")
    assert _visible(page, ".lang-zh") == 0, "the choice did not carry to another page"

    page.click(".course-lang-switch button[value=zh]")
    assert _visible(page, ".lang-en") == 0 and _visible(page, ".lang-zh") > 0
    page.click(".course-lang-switch button[value=both]")
    assert _visible(page, ".lang-en") > 0 and _visible(page, ".lang-zh") > 0
    assert not errors
    page.context.close()


@pytest.mark.parametrize("kind", ["http", "file"])
@pytest.mark.parametrize("query", ["attention", "注意力", "softmax", "勘误"])
def test_search_finds_pages_in_both_languages(browser, server, kind, query):
    page, errors, foreign = _open(browser, f"{_base(kind, server)}/search.html?q={quote(query)}")
    page.wait_for_selector("#search-results li", timeout=20000)
    links = page.eval_on_selector_all("#search-results li a", "els => els.map(e => e.href)")
    assert any("ch02_worked_qkv" in link or "errata" in link for link in links), (
        f"search for {query!r} found {links}")
    assert not errors and not foreign
    page.context.close()
