"""The PDF of the book (tools/pdf.py): every chapter, both languages, an outline, not blank.

If `_build/pdf/course.pdf` exists (`make pdf`), it is checked whole. Otherwise,
if the HTML book is built, a short PDF of three pages is printed into a
temporary folder (about half a minute) and checked the same way. Without a
built book, Chromium or pdftoppm these tests skip, except under CI, where
that is an error.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
FULL_PDF = ROOT / "_build" / "pdf" / "course.pdf"
CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))  # another path: tests of the skip banner

sys.path.insert(0, str(ROOT / "tools"))
import pdf as pdf_tool  # noqa: E402
from toc import pages  # noqa: E402

pytestmark = pytest.mark.browser

_missing = [why for bad, why in [
    (not CHROMIUM.exists(), f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"),
    (shutil.which("pdftoppm") is None, "pdftoppm is missing (apt-get install poppler-utils)"),
] if bad]
if _missing:
    if os.environ.get("CI"):
        raise RuntimeError(f"PDF tests cannot run under CI: {'; '.join(_missing)}")
    pytest.skip(f"PDF tests skipped: {'; '.join(_missing)}", allow_module_level=True)
if not FULL_PDF.exists() and not (HTML / "index.html").exists():
    if os.environ.get("CI"):
        raise RuntimeError("PDF tests cannot run under CI: the book is not built")
    pytest.skip("the book is not built (run `make book`, then `make pdf`)", allow_module_level=True)

from pypdf import PdfReader  # noqa: E402


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """(path of the PDF, the toc pages it holds)."""
    if FULL_PDF.exists():
        return FULL_PDF, pages()
    subset = [pages()[0], "book/ch02_worked_qkv", pages()[-1]]
    out = tmp_path_factory.mktemp("pdf") / "course.pdf"
    pdf_tool.build(HTML, out, only=subset, log=lambda *a: None)
    return out, subset


def _titles(outline, depth=0):
    out = []
    for item in outline:
        if isinstance(item, list):
            out += _titles(item, depth + 1)
        else:
            out.append((depth, item.title))
    return out


def _html_title(page):
    import html
    import re
    text = (HTML / f"{page}.html").read_text(encoding="utf-8")
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.S).group(1)
    h1 = re.sub(r'<a class="headerlink".*?</a>', "", h1, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", h1))).strip()


def test_pdf_has_a_page_per_chapter_at_least(book):
    path, printed = book
    reader = PdfReader(path)
    assert len(reader.pages) >= len(printed)
    assert reader.metadata.title.startswith("Attention and Transformers")


def test_pdf_text_is_in_both_languages(book):
    path, _ = book
    text = "\n".join(p.extract_text() or "" for p in PdfReader(path).pages)
    for word in ["attention", "softmax", "注意力", "查询"]:
        assert word in text, f"{word!r} is not in the PDF's text"


def test_outline_has_an_entry_per_page_in_reading_order(book):
    path, printed = book
    reader = PdfReader(path)
    titles = _titles(reader.outline)
    assert titles, "the PDF has no outline (bookmarks)"
    flat = [t for _, t in titles]
    positions = []
    for page in printed:
        want = _html_title(page) if (HTML / f"{page}.html").exists() else None
        match = [i for i, t in enumerate(flat) if want and t == want]
        assert match, f"no outline entry for {page} ({want!r}); outline: {flat[:20]}"
        positions.append(match[0])
    assert positions == sorted(positions), "outline entries are not in _toc.yml order"
    # chapters' entries point at increasing pages
    pages_of = [reader.get_destination_page_number(item) for item in reader.outline
                if not isinstance(item, list)]
    assert pages_of == sorted(pages_of)


def test_first_page_is_not_blank(book, tmp_path):
    import numpy as np
    from PIL import Image
    path, _ = book
    subprocess.run(["pdftoppm", "-r", "50", "-png", "-f", "1", "-l", "1", "-singlefile",
                    str(path), str(tmp_path / "page1")], check=True, timeout=60)
    img = Image.open(tmp_path / "page1.png").convert("L")
    dark = float((np.asarray(img) < 200).mean())
    assert dark > 0.01, f"page 1 is (nearly) blank: {dark:.2%} dark pixels"


def test_tool_explains_a_missing_build(tmp_path):
    with pytest.raises(SystemExit, match="no built book"):
        pdf_tool.build(tmp_path, tmp_path / "x.pdf")
