"""The built pages reference nothing on the internet (no browser needed).

`make test` builds the book before running pytest; without a build these
tests skip with a message.
"""

import re
from toc import ROOT

import pytest

HTML = ROOT / "_build" / "html"
PAGES = sorted(HTML.rglob("*.html")) if HTML.exists() else []
if not PAGES:
    pytest.skip("the book is not built (run `make book`)", allow_module_level=True)

# src= of scripts, images, iframes; href= of stylesheets, icons and preloads; url(...) in styles
RESOURCE = re.compile(
    r"<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc=[\"'](https?:)?//[^\"']*[\"']"
    r"|<link\b[^>]*\bhref=[\"'](https?:)?//[^\"']*[\"']"
    r"|url\(\s*[\"']?(https?:)?//", re.I)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(HTML)))
def test_page_loads_nothing_from_the_internet(page):
    text = page.read_text(encoding="utf-8")
    found = [m.group(0)[:120] for m in RESOURCE.finditer(text)]
    assert not found, f"{page.name} loads external resources: {found}"


def test_thebe_and_cdn_scripts_are_gone():
    text = (HTML / "book" / "ch02_worked_qkv.html").read_text(encoding="utf-8")
    assert "unpkg.com" not in text and "cdn.jsdelivr" not in text and "THEBE_JS_URL" not in text
    assert "_static/mathjax/tex-mml-chtml.js" in text and "_static/mermaid/mermaid.min.js" in text


MERMAID_TAGS = ('<script src="{up}_static/mermaid/mermaid.min.js', '<script src="{up}_static/course/mermaid-init.js')


def test_mermaid_is_loaded_by_the_pages_that_draw_a_diagram_and_by_no_other():
    """Mermaid is 3 MB of JavaScript: a page without a diagram should not parse it (_ext/course_book.py)."""
    drawn = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        up = "../" * (len(page.relative_to(HTML).parts) - 1)
        at = [text.find(tag.format(up=up)) for tag in MERMAID_TAGS]
        name = page.relative_to(HTML).as_posix()
        if '<pre class="mermaid">' in text:
            drawn.append(name)
            assert -1 < at[0] < at[1], f"{name} draws a diagram; mermaid, then its start, must load: {at}"
        else:
            assert "mermaid.min.js" not in text and "mermaid-init.js" not in text, f"{name} loads mermaid"
    assert "book/ch02_worked_qkv.html" in drawn and "book/appendix/glossary.html" not in drawn, drawn


def test_the_regex_catches_a_cdn_script():
    # the check above can fail: a CDN script tag is recognised
    assert RESOURCE.search('<script src="https://cdn.example.org/x.js"></script>')
    assert RESOURCE.search('<link rel="stylesheet" href="//fonts.example.org/a.css">')
    assert not RESOURCE.search('<script src="../_static/course/lang.js"></script>')
