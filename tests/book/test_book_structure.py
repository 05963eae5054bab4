"""The book's conventions, checked on every page.

- Every chapter with code is a jupytext pair whose .ipynb has the same inputs
  as its .md and holds the outputs of a real, complete execution (otherwise
  nbval would pass its cells vacuously).
- Prose comes in paired English/Chinese cells; headings are bilingual on one
  line and never sit inside a language cell.
"""

import re

import jupytext
import nbformat
import pytest

from toc import ROOT, notebooks, pages

CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")
LANG_TAGS = {"en", "zh"}


def _text_pages():
    """Every page as a notebook object: the .ipynb if paired, else the MyST .md."""
    out = []
    for p in pages():
        ipynb, md = ROOT / f"{p}.ipynb", ROOT / f"{p}.md"
        out.append((p, nbformat.read(ipynb, as_version=4) if ipynb.exists() else jupytext.read(md)))
    return out


PAGES = _text_pages()
PAGE_IDS = [p for p, _ in PAGES]


def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def test_toc_pages_exist_and_every_chapter_is_listed():
    for p in pages():
        assert (ROOT / f"{p}.md").exists(), f"{p}.md is in _toc.yml but missing"
    listed = {f"{p}.md" for p in pages()}
    on_disk = {str(md.relative_to(ROOT)) for md in (ROOT / "book").rglob("*.md")
               if ".ipynb_checkpoints" not in md.parts}
    assert on_disk <= listed, f"pages not in _toc.yml: {sorted(on_disk - listed)}"


@pytest.mark.parametrize("page", pages())
def test_pages_with_code_are_paired(page):
    md = ROOT / f"{page}.md"
    has_code = any(c.cell_type == "code" for c in jupytext.read(md).cells)
    assert has_code == (ROOT / f"{page}.ipynb").exists(), (
        f"{page}: a page with code cells needs a paired .ipynb (run `make sync`), "
        "and a prose-only page needs none")


@pytest.mark.parametrize("ipynb", notebooks(), ids=lambda p: p.stem)
def test_pair_has_identical_inputs(ipynb):
    md = jupytext.read(ipynb.with_suffix(".md"))
    nb = nbformat.read(ipynb, as_version=4)
    assert len(md.cells) == len(nb.cells), f"{ipynb.name}: cell count differs from the .md; run `make sync`"
    for i, (a, b) in enumerate(zip(md.cells, nb.cells)):
        assert (a.cell_type, a.source.strip(), _tags(a)) == (b.cell_type, b.source.strip(), _tags(b)), (
            f"{ipynb.name} cell {i} differs from the .md; run `make sync`")


@pytest.mark.parametrize("ipynb", notebooks(), ids=lambda p: p.stem)
def test_notebook_was_fully_executed(ipynb):
    nb = nbformat.read(ipynb, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{ipynb.name} has no code cell"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{ipynb.name}: execution counts {counts} are not 1..{len(code)} (stale or partly run)")
    for i, c in enumerate(code):
        assert c.outputs, f"{ipynb.name} code cell {i + 1} has no stored output: every cell shows a result"
        kinds = {o.output_type for o in c.outputs}
        assert "error" not in kinds, f"{ipynb.name} code cell {i + 1} stored an error"
        assert not any(o.get("name") == "stderr" for o in c.outputs), (
            f"{ipynb.name} code cell {i + 1} wrote to stderr (warnings are not stable under nbval)")
        assert not re.search(r"NBVAL_(IGNORE_OUTPUT|SKIP|RAISES_EXCEPTION)", c.source), (
            f"{ipynb.name} code cell {i + 1}: nbval markers hide outputs from the tests")


@pytest.mark.parametrize("page,nb", PAGES, ids=PAGE_IDS)
def test_language_cells_come_in_pairs_without_headings(page, nb):
    cells = nb.cells
    for i, c in enumerate(cells):
        langs = _tags(c) & LANG_TAGS
        if not langs:
            continue
        assert c.cell_type == "markdown", f"{page} cell {i}: only prose cells carry a language tag"
        assert not re.search(r"^#{1,6} ", c.source, re.M), (
            f"{page} cell {i}: a heading inside a language cell; keep headings bilingual and untagged")
        assert not re.search(r"^(```|:::)\{", c.source, re.M), (
            f"{page} cell {i}: a directive inside a language cell (add `+++` before it)")
        if langs == {"en"}:
            nxt = cells[i + 1] if i + 1 < len(cells) else None
            assert nxt is not None and _tags(nxt) & LANG_TAGS == {"zh"}, (
                f"{page} cell {i}: an English cell must be followed by its Chinese twin")
            assert LATIN.search(c.source) and not CJK.search(c.source.replace("中文", "")), (
                f"{page} cell {i}: the 'en' cell should be English")
        else:
            assert i > 0 and _tags(cells[i - 1]) & LANG_TAGS == {"en"}, (
                f"{page} cell {i}: a Chinese cell must follow its English twin")
            assert CJK.search(c.source), f"{page} cell {i}: the 'zh' cell has no Chinese"


@pytest.mark.parametrize("page,nb", PAGES, ids=PAGE_IDS)
def test_headings_are_bilingual_on_one_line(page, nb):
    headings = [line for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if re.match(r"#{1,6} ", line)]
    assert headings, f"{page} has no heading"
    for h in headings:
        assert " · " in h and CJK.search(h) and LATIN.search(h), (
            f"{page}: heading {h!r} must read 'English · 中文'")


@pytest.mark.parametrize("page,nb", PAGES, ids=PAGE_IDS)
def test_untagged_prose_is_bilingual(page, nb):
    """Outside language cells, a line of prose must carry both languages."""
    for i, c in enumerate(nb.cells):
        if c.cell_type != "markdown" or _tags(c) & LANG_TAGS:
            continue
        in_fence = in_math = False
        for line in c.source.splitlines():
            s = line.strip()
            if s.startswith(("```", ":::")):
                in_fence = not in_fence if s in ("```", ":::") or not in_fence else in_fence
                continue
            if s == "$$":                      # a display formula over several lines is not prose
                in_math = not in_math
                continue
            if in_math:
                continue
            if in_fence or not s or s.startswith(("#", "(", "$$", "|", "\\", ":")) or s.endswith("$$"):
                continue
            if CJK.search(s) or len(LATIN.findall(s)) > 3:
                assert CJK.search(s) and LATIN.search(s), (
                    f"{page} cell {i}: untagged prose {s[:60]!r} is in one language only")
