"""One bilingual PDF of the whole book, printed by Chromium from the built HTML.

    python tools/pdf.py                      # _build/html -> _build/pdf/course.pdf
    python tools/pdf.py --html DIR --out F   # another build, another file
    python tools/pdf.py --pages book/intro,book/ch02_worked_qkv   # a few pages (drafts)

Needs the HTML book (`make book`), Debian's Chromium at /usr/bin/chromium
(driven by the Python playwright package; no browser download), pypdf, and a
CJK font for the Chinese (Debian: fonts-noto-cjk). For every page of
`_toc.yml`, in reading order, Chromium opens the built page from disk, waits
for MathJax and the mermaid diagrams, shows both languages (whatever the
language switch stored), opens the exercise solutions (--solutions hide
leaves them out), hides the navigation and wraps long code lines so nothing
is cut off; then prints it. The pages are merged into one PDF whose outline
(bookmarks) has the parts of the book, an entry per page, and each page's
headings below it. Nothing is requested from the network: any request to a
host other than the local files is blocked.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import unicodedata
from pathlib import Path
from urllib.parse import urlparse

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from toc import pages as toc_pages  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]

# Print styles: the article only, at full width; code wraps instead of being cut.
PRINT_CSS = """
.bd-header, .bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer,
.bd-footer-article, .bd-footer-content, .prev-next-area, .footer-article-items,
.course-lang-switch, .toggle-button, button.copybtn, a.headerlink, .search-button-field,
.skip-link, #pst-back-to-top, .header-article-items, .sidebar-toggle, #jb-print-docs-body,
.cw-nojs { display: none !important; }
html, body { background: #fff !important; }
body, .bd-container, .bd-container__inner, .bd-main, .bd-content { display: block !important; }
.bd-container, .bd-container__inner, .bd-main, .bd-content, .bd-article-container, article,
article section, .cell, .cell_output, .output { min-width: 0 !important; max-width: 100% !important; }
article p, article li, article td, article th { overflow-wrap: anywhere; }
article h1 { display: block !important; }   /* the theme's print style hides it */
.bd-container, .bd-container__inner, .bd-main, .bd-content, .bd-article-container,
.bd-article, .bd-page-width { max-width: none !important; width: auto !important;
  margin: 0 !important; padding: 0 !important; display: block !important; }
pre, pre *, .highlight pre, div.cell_output pre, .output pre {
  white-space: pre-wrap !important; word-break: break-word !important;
  overflow-wrap: anywhere !important; overflow: visible !important; max-height: none !important; }
div.highlight, .cell_input, .cell_output, .output, div.output_area, .table-wrapper,
.pst-scrollable-table-container, .cw-root {
  overflow: visible !important; max-height: none !important; }
.cell_output img, article img { max-width: 100% !important; height: auto; }
table { font-size: 0.85em; }
mjx-container[display="true"] { overflow: visible !important; }
h1, h2, h3, h4 { break-after: avoid; page-break-after: avoid; }
figure, .mermaid, mjx-container, tr, img, div.cell_input, div.cell_output, div.highlight,
.cw-root { break-inside: avoid; page-break-inside: avoid; }
.admonition-title, p.rubric { break-after: avoid; page-break-after: avoid; }
.admonition.toggle-hidden .admonition-title ~ * { display: block !important; }
html[data-course-lang] .lang-en, html[data-course-lang] .lang-zh { display: block !important; }
"""

# Before any script of the page: ask the language switch for both languages.
INIT_JS = "try { localStorage.setItem('course-lang', 'both'); } catch (e) {}"

EXPAND_JS = """() => {
  document.documentElement.setAttribute('data-course-lang', 'both');
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('details').forEach(d => { d.open = true; });
}"""

HIDE_SOLUTIONS_JS = """() => {
  document.querySelectorAll('.solution, .solution-start, .solution-end')
    .forEach(e => { e.style.display = 'none'; });
}"""

HEADINGS_JS = """() => [...document.querySelectorAll('article h1, article h2')].map(h => {
  const c = h.cloneNode(true);
  c.querySelectorAll('.headerlink, .toggle-button').forEach(x => x.remove());
  return [h.tagName, c.textContent.replace(/\\s+/g, ' ').trim()];
})"""


def parts(toc_path: Path | None = None) -> list[tuple[str | None, list[str]]]:
    """The book as (part caption or None, pages) in reading order (from ``_toc.yml``)."""
    flat = toc_pages()
    path = toc_path or Path(os.environ.get("COURSE_TOC", ROOT / "_toc.yml"))
    try:
        toc = yaml.safe_load(path.read_text(encoding="utf-8"))
        out = [(None, [toc["root"]])]
        out += [(p.get("caption"), [c["file"] for c in p.get("chapters", [])])
                for p in toc.get("parts", [])]
    except (OSError, KeyError, TypeError):
        return [(None, flat)]
    if [p for _, ps in out for p in ps] != flat:   # a toc layout this script does not know
        return [(None, flat)]
    return out


def _wait_rendered(page) -> None:
    page.wait_for_function("() => !window.MathJax || (window.MathJax.startup && "
                           "window.MathJax.startup.promise)", timeout=30000)
    page.evaluate("() => window.MathJax ? window.MathJax.startup.promise : null")
    page.wait_for_function("() => [...document.querySelectorAll('pre.mermaid')]"
                           ".every(p => p.querySelector('svg'))", timeout=60000)
    page.evaluate("() => document.fonts.ready.then(() => true)")


def _print_page(context, html_file: Path, out: Path, solutions: str):
    """Print one built page to ``out``; return (title, [(tag, heading)], problems)."""
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    page.goto(html_file.as_uri(), wait_until="load")
    _wait_rendered(page)
    page.evaluate(EXPAND_JS)
    if solutions == "hide":
        page.evaluate(HIDE_SOLUTIONS_JS)
    page.add_style_tag(content=PRINT_CSS)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    headings = page.evaluate(HEADINGS_JS)
    title = next((t for tag, t in headings if tag == "H1"), None) or page.title()
    page.pdf(path=str(out), format="A4", print_background=True, outline=True,
             margin={"top": "14mm", "bottom": "14mm", "left": "14mm", "right": "14mm"})
    page.close()
    return title, headings, problems


_BFCHAR = re.compile(rb"beginbfchar(.*?)endbfchar", re.S)
_RADICAL = re.compile(rb"(<[0-9A-Fa-f]+>\s*<)(2[EF][0-9A-Fa-f]{2})>")


def _ideograph(m: re.Match) -> bytes:
    ch = chr(int(m.group(2), 16))
    norm = unicodedata.normalize("NFKC", ch)
    if len(norm) == 1 and norm != ch:
        return m.group(1) + f"{ord(norm):04X}>".encode()
    return m.group(0)


def searchable_cjk(writer) -> int:
    """Map Kangxi radicals back to the ideographs in the fonts' ToUnicode tables.

    Noto CJK draws 力 (U+529B) and the radical ⼒ (U+2F12) with one glyph, and
    Chromium writes the radical into the PDF's text map, so searching or
    copying "注意力" fails. Each such entry becomes its NFKC ideograph.
    Returns how many entries changed.
    """
    done, changed = set(), 0
    for page in writer.pages:
        fonts = page.get("/Resources", {}).get("/Font", {})
        for ref in fonts.values():
            tu = ref.get_object().get("/ToUnicode")
            if tu is None or id(tu.get_object()) in done:
                continue
            stream = tu.get_object()
            done.add(id(stream))
            data = stream.get_data()
            new = _BFCHAR.sub(lambda b: b.group(0).replace(b.group(1), _RADICAL.sub(
                _ideograph, b.group(1))), data)
            if new != data:
                changed += sum(1 for _ in _RADICAL.finditer(data))
                stream.set_data(new)
    return changed


def _page_of(reader, dest) -> int | None:
    try:
        return reader.get_destination_page_number(dest)
    except Exception:
        return None


def build(html: Path, out: Path, only: list[str] | None = None, solutions: str = "show",
          log=print) -> Path:
    """Print every page of the book (or ``only`` those) from ``html`` into one PDF at ``out``."""
    from playwright.sync_api import sync_playwright
    from pypdf import PdfReader, PdfWriter

    html = Path(html)
    if not (html / "index.html").exists():
        raise SystemExit(f"pdf: no built book in {html} (no index.html). "
                         "Build it first: `make book`, or pass --html DIR.")
    if not CHROMIUM.exists():
        raise SystemExit("pdf: Chromium is not installed at /usr/bin/chromium "
                         "(sudo apt-get install chromium)")
    layout = parts()
    if only:
        unknown = [p for p in only if p not in {q for _, ps in layout for q in ps}]
        if unknown:
            raise SystemExit(f"pdf: not pages of _toc.yml: {unknown}")
        layout = [(cap, [p for p in ps if p in only]) for cap, ps in layout]
        layout = [(cap, ps) for cap, ps in layout if ps]
    missing = [p for _, ps in layout for p in ps if not (html / f"{p}.html").exists()]
    if missing:
        raise SystemExit(f"pdf: pages of _toc.yml missing from {html}: {missing}. "
                         "Rebuild the book (`make book`).")

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = PdfWriter()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        context = browser.new_context(color_scheme="light", viewport={"width": 1000, "height": 1400})
        context.add_init_script(INIT_JS)
        blocked: list[str] = []

        def offline(route):
            u = urlparse(route.request.url)
            if u.scheme in ("file", "data", "blob", "about"):
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()
        context.route("**/*", offline)

        n = 0
        for caption, page_paths in layout:
            parent = None
            for path in page_paths:
                n += 1
                pdf = Path(tmp) / f"{n:03d}.pdf"
                title, headings, problems = _print_page(context, html / f"{path}.html", pdf, solutions)
                for msg in problems:
                    log(f"  {path}: {msg}")
                first = len(writer.pages)
                reader = PdfReader(pdf)
                writer.append(reader, import_outline=False)
                if caption and parent is None:   # the part starts on its first page
                    parent = writer.add_outline_item(title=caption, page_number=first, bold=True)
                item = writer.add_outline_item(title=title, page_number=first, parent=parent)
                for dest in reader.outline:   # Chromium's outline: the page's headings
                    if isinstance(dest, list):
                        continue
                    k = _page_of(reader, dest)
                    if k is not None and dest.title.strip() != title:
                        writer.add_outline_item(title=dest.title.strip(), page_number=first + k,
                                                parent=item, is_open=False)
                log(f"  {path}: {len(reader.pages)} page(s), {title}")
        browser.close()
    searchable_cjk(writer)
    writer.add_metadata({"/Title": "Attention and Transformers · 注意力机制与 Transformer",
                         "/Author": "The course team · 课程团队"})
    writer.page_mode = "/UseOutlines"
    with open(out, "wb") as f:
        writer.write(f)
    if blocked:
        log(f"pdf: blocked {len(blocked)} request(s) to other hosts: {sorted(set(blocked))[:5]}")
    log(f"pdf: {out} ({len(writer.pages)} pages) in {time.perf_counter() - start:.0f} s")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", type=Path, default=ROOT / "_build" / "html",
                    help="the built HTML book (default: _build/html)")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "course.pdf",
                    help="the PDF to write (default: _build/pdf/course.pdf)")
    ap.add_argument("--pages", default="", help="comma-separated pages of _toc.yml (default: all)")
    ap.add_argument("--solutions", choices=["show", "hide"], default="show",
                    help="print the exercises' solutions opened (default) or leave them out")
    args = ap.parse_args(argv)
    only = [p.strip().removesuffix(".html") for p in args.pages.split(",") if p.strip()] or None
    build(args.html, args.out, only, args.solutions)


if __name__ == "__main__":
    main()
