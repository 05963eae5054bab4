"""course_lib.widgets in a real browser, from disk (file://) and from 127.0.0.1.

Each widget is written into a minimal standalone page in a temporary folder;
Chromium (Debian's /usr/bin/chromium, driven by the Python playwright
package, no browser download) opens it. The numbers the JavaScript shows are
compared with the ones Python computes (course_lib.scratch), to the digits
shown. Without Chromium these tests skip, except under CI, where a missing
browser is an error. They do not need the built book.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from conftest import chromium, need_chromium, page_opener, serve
from course_lib.scratch import attention_scores, scaled_dot_product_attention, softmax
from course_lib.widgets import attention_explorer, qkv_playground, show

pytestmark = pytest.mark.browser

need_chromium("widget browser tests")

DIGITS = 2
TOKENS = [["the", "cat", "sat", "on", "the", "mat"],
          ["a", "b", "c", "d", "e", "f", "g", "h"]]


def _explorer_weights():
    rng = np.random.default_rng(7)
    w0 = softmax(rng.normal(scale=1.5, size=(2, 3, 6, 6)), axis=-1)   # asymmetric rows
    w1 = softmax(rng.normal(scale=1.5, size=(2, 3, 8, 8)), axis=-1)
    w1[1, 2] = 1 / 8   # uniform head: 0.125 is an exact tie, Python shows "0.12"
    return [w0, w1]


WEIGHTS = _explorer_weights()
# The playground: d_k = 4, so forgetting 1/sqrt(d_k) changes every score.
Q0 = np.array([0.5, -1.0, 1.5, 0.25])
K = np.array([[1.0, 0.5, -0.5, 2.0], [-1.0, 1.0, 0.0, 0.5], [0.3, -0.2, 1.1, -0.7]])
V = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [0.5, 0.5, 0.5]])


def _page(widgets):
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>widgets</title>"
            "<link rel=\"icon\" href=\"data:,\"></head><body>\n" + "\n".join(w._repr_html_() for w in widgets) + "\n</body></html>\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("widgets")
    explorer = attention_explorer(TOKENS, WEIGHTS, title="Test explorer · 测试", digits=DIGITS,
                                  head_names=["h1", "h2", "h3"])
    playground = qkv_playground(Q0, K, V, digits=3)
    (root / "explorer.html").write_text(_page([explorer]), encoding="utf-8")
    (root / "playground.html").write_text(_page([playground]), encoding="utf-8")
    twin = attention_explorer(TOKENS, WEIGHTS, title="Test explorer · 测试", digits=DIGITS,
                              head_names=["h1", "h2", "h3"])   # same payload: a distinct id
    (root / "several.html").write_text(_page([explorer, playground, twin]), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server(site):
    with serve(site) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(params=["http", "file"])
def open_page(request, browser, server, site):
    """open_page(name) -> page; afterwards, no console errors and no foreign request."""
    with page_opener(browser, server if request.param == "http" else site.as_uri()) as _open:
        yield _open


def _shown_weights(root):
    return root.locator(".cw-ktok .cw-w").all_inner_texts()


def test_explorer_hover_shows_the_python_weights(open_page):
    page = open_page("explorer.html")
    root = page.locator(".cw-explorer")
    assert root.get_attribute("data-ready") == "1", "the widget's script did not run"
    assert not root.locator(".cw-nojs").is_visible() and not root.locator(".cw-static").is_visible()
    for i, layer, head, queries in [(0, 0, 0, range(6)), (0, 1, 2, [1, 4]), (1, 0, 1, [0, 7]),
                                    (1, 1, 2, [3])]:
        root.locator("select[data-role=input]").select_option(str(i))
        root.locator("select[data-role=layer]").select_option(str(layer))
        root.locator("select[data-role=head]").select_option(str(head))
        for q in queries:
            root.locator(".cw-qtok").nth(q).hover()
            expected = [show(x, DIGITS) for x in WEIGHTS[i][layer, head, q]]
            assert _shown_weights(root) == expected, (i, layer, head, q)
            assert root.locator(".cw-qtok.cw-active").count() == 1
            assert root.locator(".cw-qtok").nth(q).get_attribute("aria-pressed") == "true"
            lines = root.locator("svg.cw-lines line")
            assert lines.count() == len(TOKENS[i])
            widths = [float(lines.nth(j).get_attribute("stroke-width")) for j in range(lines.count())]
            assert int(np.argmax(widths)) == int(np.argmax(WEIGHTS[i][layer, head, q]))
    assert set(_shown_weights(root)) == {"0.12"}, "an exact tie 0.125 must show as Python does"


def test_several_widgets_on_one_page_are_independent(open_page):
    page = open_page("several.html")
    ids = page.eval_on_selector_all(".cw-root", "els => els.map(e => e.id)")
    assert len(ids) == 3 and len(set(ids)) == 3, ids
    assert page.locator(".cw-root[data-ready='1']").count() == 3
    first, second = page.locator(".cw-explorer").nth(0), page.locator(".cw-explorer").nth(1)
    second.locator("select[data-role=head]").select_option("1")
    second.locator(".cw-qtok").nth(2).hover()
    first.locator(".cw-qtok").nth(5).hover()
    assert _shown_weights(first) == [show(x, DIGITS) for x in WEIGHTS[0][0, 0, 5]]
    assert _shown_weights(second) == [show(x, DIGITS) for x in WEIGHTS[0][0, 1, 2]]


def _scratch(q):
    Q = np.asarray(q, dtype=float)[None]
    scores = attention_scores(Q, K)[0]
    context, weights = scaled_dot_product_attention(Q, K, V)
    return scores, weights[0], context[0]


def _shown(root, L_k=3, d_v=3):
    def txt(name):
        return root.locator(f'[data-cell="{name}"]').inner_text()
    return ([txt(f"score-{i}") for i in range(L_k)], [txt(f"weight-{i}") for i in range(L_k)],
            [txt(f"context-{c}") for c in range(d_v)])


def _expected(q, d=3):
    s, w, c = _scratch(q)
    return [show(x, d) for x in s], [show(x, d) for x in w], [show(x, d) for x in c]


def test_playground_reproduces_python_then_follows_the_query(open_page):
    page = open_page("playground.html")
    root = page.locator(".cw-playground")
    assert root.get_attribute("data-ready") == "1", "the widget's script did not run"
    assert _shown(root) == _expected(Q0)                  # the JavaScript's own first numbers
    q = Q0.copy()
    for c, value in [(0, "2.5"), (2, "-0.75"), (3, "1e-3")]:
        root.locator(f'input[type=number][data-q="{c}"]').fill(value)
        q[c] = float(value)
        assert _shown(root) == _expected(q), f"after q[{c}] = {value}"
        if abs(q[c]) <= 3:   # the slider follows the number box (within its range)
            assert float(root.locator(f'input[type=range][data-q="{c}"]').input_value()) == \
                pytest.approx(q[c], abs=0.051)
    # the slider drives the number box and the numbers too
    root.locator('input[type=range][data-q="1"]').fill("1.5")
    q[1] = 1.5
    assert root.locator('input[type=number][data-q="1"]').input_value() == "1.5"
    assert _shown(root) == _expected(q)
    # large scores: the stable softmax (minus the max) gives no NaN
    for c in range(4):
        root.locator(f'input[type=number][data-q="{c}"]').fill("900")
    q[:] = 900
    assert _shown(root) == _expected(q)
    assert "NaN" not in root.inner_text()


def test_javascript_formats_numbers_exactly_like_python(open_page):
    from course_lib.widgets._html import static_text
    page = open_page("playground.html")
    rng = np.random.default_rng(3)
    values = [0.125, 0.375, 2.5, 3.5, -0.125, -0.0004, 0.9125, 0.9125000000000001,
              0.9124999999999999, 1 / 2048, 1e-12, 0.0, -0.0, 123.4565, 1 / 3, 2 / 3]
    values += [round(float(x), int(n)) for x, n in zip(rng.normal(scale=2, size=300), rng.integers(1, 6, size=300))]
    values += rng.random(200).tolist()
    for d in (0, 1, 2, 3, 6):
        got = page.evaluate("([vals, d]) => { " + static_text("common.js") +
                            "; return vals.map(v => cwShow(v, d)); }", [values, d])
        assert got == [show(v, d) for v in values], d


def test_tokens_are_shown_as_text_not_markup(open_page, site):
    evil = ["<img src=x onerror=alert(1)>", "</script>", "&amp;"]
    w = attention_explorer(evil, softmax(np.zeros((1, 1, 3, 3))), title="<i>t</i>")
    (site / "evil.html").write_text(_page([w]), encoding="utf-8")
    page = open_page("evil.html")
    root = page.locator(".cw-explorer")
    assert root.get_attribute("data-ready") == "1"
    assert root.locator(".cw-qtok").all_inner_texts() == evil
    assert root.locator("img").count() == 0 and root.locator("i").count() == 0


# ---- the widgets inside THE BUILT BOOK (_build/html), served and from disk -------------------

HTML = Path(__file__).resolve().parents[2] / "_build" / "html"


@pytest.fixture(scope="module")
def book_server():
    if not (HTML / "index.html").exists():
        why = "the book is not built (run `make book`)"
        if os.environ.get("CI"):
            raise RuntimeError(f"book widget tests cannot run under CI: {why}")
        pytest.skip(why)
    with serve(HTML) as base:
        yield base


@pytest.fixture(params=["http", "file"])
def open_book_page(request, browser, book_server):
    """open_book_page("book/x.html") -> page of the built book; afterwards, no console
    errors and no request to another host."""
    with page_opener(browser, book_server if request.param == "http" else HTML.as_uri(), 20000) as _open:
        yield _open


def test_chapter_2_playground_in_the_built_book(open_book_page):
    """Chapter 2's own worked example (q, K = V = H): the page shows what course_lib.scratch computes."""
    from course_lib.chapters.ch02 import source
    q0, H = source.SINGLE_QUERY["q"].astype(float), source.SINGLE_QUERY["H"].astype(float)

    def expected(q):
        Q = np.asarray(q, dtype=float)[None]
        scores = attention_scores(Q, H)[0]
        context, weights = scaled_dot_product_attention(Q, H, H)
        return ([show(x, 3) for x in scores], [show(x, 3) for x in weights[0]],
                [show(x, 3) for x in context[0]])

    page = open_book_page("book/ch02_worked_qkv.html")
    root = page.locator(".cw-playground")
    assert root.count() == 1
    root.scroll_into_view_if_needed()
    assert root.get_attribute("data-ready") == "1", "the widget's script did not run in the book"
    assert not root.locator(".cw-nojs").is_visible() and not root.locator(".cw-static").is_visible()
    assert _shown(root, L_k=3, d_v=4) == expected(q0)
    q = q0.copy()
    for c, value in [(0, "2"), (3, "-1.5"), (1, "10")]:
        root.locator(f'input[type=number][data-q="{c}"]').fill(value)
        q[c] = float(value)
        assert _shown(root, L_k=3, d_v=4) == expected(q), f"after q[{c}] = {value}"
    root.locator('input[type=range][data-q="2"]').fill("-2.5")
    q[2] = -2.5
    assert _shown(root, L_k=3, d_v=4) == expected(q)
    assert root.locator("td").first.inner_text() == "h₁"


@pytest.fixture(scope="module")
def minilm_maps():
    import copy

    import torch

    from course_lib.models.pretrained import load_minilm
    from course_lib.widgets import attention_maps
    model, tokenizer = load_minilm()
    return lambda s: attention_maps(copy.deepcopy(model).to(torch.float64), [tokenizer.encode(s).ids])[0]


def test_appendix_explorer_shows_minilm_attention(open_book_page, minilm_maps):
    page = open_book_page("book/appendix/explorer.html")
    root = page.locator(".cw-explorer")
    assert root.count() == 1 and root.get_attribute("data-ready") == "1"
    sentence = "The animal didn't cross the street because it was too tired."
    maps = minilm_maps(sentence)
    root.locator("select[data-role=input]").select_option("1")
    for layer, head, q in [(0, 2, 3), (5, 11, 8), (3, 6, 1)]:
        root.locator("select[data-role=layer]").select_option(str(layer))
        root.locator("select[data-role=head]").select_option(str(head))
        root.locator(".cw-qtok").nth(q).hover()
        assert _shown_weights(root) == [show(x, DIGITS) for x in maps[layer, head, q]], (layer, head, q)
