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


def test_the_regex_catches_a_cdn_script():
    # the check above can fail: a CDN script tag is recognised
    assert RESOURCE.search('<script src="https://cdn.example.org/x.js"></script>')
    assert RESOURCE.search('<link rel="stylesheet" href="//fonts.example.org/a.css">')
    assert not RESOURCE.search('<script src="../_static/course/lang.js"></script>')
