"""What the reader sees is what the code printed: every output of every notebook page, in a browser.

For each page built from a notebook and each output of each of its code
cells, the text Chromium shows on the page is compared with the output's
``text/plain`` (the text nbval compares), so a token that vanishes on the
way to the reader fails here: a raw ``<mask>`` read by the browser as an
HTML tag, an ``*`` eaten as emphasis, a ``$`` eaten as math. Issue #20,
CONTRIBUTING.md *What the reader sees*.

**How cells map to the page.** myst-nb renders each code cell that is not
removed (tag ``remove-cell``, or ``remove-input`` with ``remove-output``, or
an empty cell) as one ``div.cell``, in notebook order, with the source in
``div.cell_input`` (absent for ``remove-input``) and the outputs as the
children of ``div.cell_output`` (absent when there is none to show or for
``remove-output``; both inside a ``<details>`` for ``hide-input`` and
``hide-output``). Each cell's source is compared with its ``cell_input``
first, so a page built from another version of the notebook is reported as
such rather than as wrong outputs. The outputs are taken as myst-nb takes
them: streams merged (``nb_merge_streams``) with myst-nb's own
``coalesce_streams``, ``remove-stdout``/``remove-stderr`` honoured, hidden
glue outputs (metadata ``scrapbook`` with a MIME prefix: ``glue(...,
display=False)``, what ``course_lib.display.glue`` makes) dropped, and the
MIME type chosen by myst-nb's own HTML priority. A failure names the page,
the cell (its 0-based index in the notebook, its number among the code
cells, its execution count), the output (0-based index in the cell) and the
tokens missing from the page.

**Rules, per rendered MIME type** (the page side is ``innerText``, i.e. what
is rendered, after opening every dropdown and with both languages shown):

- stream, ``text/plain``, error: the ``div.output`` shows the text exactly.
- ``text/markdown`` (``Table``, checker results, errata boxes): myst-nb puts
  the rendered blocks straight into ``div.cell_output`` with no wrapper, so a
  run of consecutive Markdown outputs is compared as one text, aligned token
  by token, and every output of the run that differs is named. Layout only is normalised: runs of
  whitespace (table cells, line breaks, column padding) count as one space,
  a ``Table``'s dashed separator line in ``text/plain`` is dropped, list
  items get their marker back (``- ``, ``1. ``); and, as long as the book
  lets Sphinx's ``smartquotes`` educate its text (the default), curly quotes
  count as straight ones and ``--``/``...`` as dashes/ellipses, on both
  sides (``'<mask>'`` shown as ``‘’`` still fails: the token is gone).
  Text the course writes as Markdown on purpose (errata and checker prose, ``md_prose``) carries its
  ``*emphasis*``, ``**strong**`` and ```code``` in ``text/plain``, so those
  are written back around ``em``/``strong``/``code`` in prose; never inside a
  table or its bold caption (every ``Table`` cell is escaped, ``md_escape``,
  and must show literally), and not around a paragraph that is bold as a
  whole (a caption or a checker's verdict line, bold in Markdown only). An
  errata box's last line of cross-references (``{doc}``/``{ref}`` links,
  which ``text/plain`` does not carry) is skipped.
- ``text/html`` of a course widget (``div.cw-root``): it must have run (its
  script marks it ``data-ready``) and hide its no-JavaScript notice; its
  text is interactive, and its numbers are compared with Python's by
  ``tests/book/test_widgets_browser.py``, so it is not compared here.
- ``text/html`` with ``<audio>``: the player must be there; other HTML: its
  text is compared exactly, like a stream.
- images: the ``<img>`` must be there and decoded; the text is not compared.

Needs the built book (``make book``) and Debian's Chromium. While developing,
``COURSE_BOOK_HTML`` points at another build (e.g. one made with
``jupyter-book build . --path-output /tmp/x``: ``/tmp/x/_build/html``) and
``COURSE_BOOK_SOURCE`` at another book's folder (its ``_toc.yml`` and
notebooks; its HTML is then ``<folder>/_build/html`` unless
``COURSE_BOOK_HTML`` says otherwise).
"""

from __future__ import annotations

import copy
import difflib
import os
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import chromium, need_chromium
from page_visits import visit_step
from toc import ROOT

SOURCE = Path(os.environ.get("COURSE_BOOK_SOURCE", ROOT))
HTML = Path(os.environ.get("COURSE_BOOK_HTML", SOURCE / "_build" / "html"))


def notebook_pages() -> list[str]:
    """Pages of SOURCE's _toc.yml that are built from a notebook, in reading order."""
    toc = yaml.safe_load((SOURCE / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [p for p in pages if (SOURCE / f"{p}.ipynb").exists()]


def _nb_config() -> dict:
    config = yaml.safe_load((SOURCE / "_config.yml").read_text(encoding="utf-8")) or {}
    return ((config.get("sphinx") or {}).get("config") or {})


# ----------------------------------------------------------------------- the notebook's side

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TABLE_RULE = re.compile(r"^-+( +-+)*$")     # the dashed line under a Table's header in text/plain


def _text(x) -> str:
    return "".join(x) if isinstance(x, list) else str(x)


def shown_outputs(cell, merge_streams: bool, stderr: str = "show") -> list[dict]:
    """The outputs myst-nb shows for ``cell``: ``[{"kind", "mime", "text", "index"}]``.

    ``kind`` is the DOM shape expected: ``stream``, ``plain``, ``error``,
    ``markdown``, ``widget``, ``audio``, ``html``, ``image``, or the MIME type
    itself when the module has no rule for it (reported as such).
    """
    from myst_nb.core.render import base_render_priority
    from myst_nb.core.utils import coalesce_streams

    tags = cell.metadata.get("tags", [])
    outputs = []
    for i, out in enumerate(cell.get("outputs", [])):
        meta = out.get("metadata", {})
        if "scrapbook" in meta and meta["scrapbook"].get("mime_prefix"):
            continue                                    # glue(..., display=False): only in the prose
        out = copy.deepcopy(out)
        out["_index"] = i
        outputs.append(out)
    if merge_streams:
        outputs = coalesce_streams(outputs)
    priority = base_render_priority()["html"]
    shown = []
    for out in outputs:
        kind, mime, text = None, None, ""
        if out.output_type == "stream":
            if f"remove-{out.name}" in tags or (out.name == "stderr" and stderr.startswith("remove")):
                continue
            kind, mime, text = "stream", out.name, ANSI.sub("", _text(out.text))
        elif out.output_type == "error":
            kind, mime, text = "error", "error", ANSI.sub("", "\n".join(out.traceback))
        else:
            data = out.get("data", {})
            mimes = sorted((m for m in data if priority.get(m) is not None), key=priority.get)
            if not mimes:
                continue
            mime = mimes[0]
            plain = _text(data.get("text/plain", ""))
            if mime == "text/markdown":
                kind, text = "markdown", plain
            elif mime == "text/html":
                html = _text(data[mime])
                kind = ("widget" if 'class="cw-root' in html else "audio" if "<audio" in html else "html")
                text = plain
            elif mime.startswith("image/"):
                kind = "image"
            elif mime == "text/plain":
                kind, text = "plain", plain
            else:
                kind, text = mime, plain              # no rule: reported as such
        shown.append({"kind": kind, "mime": mime, "text": text, "index": out["_index"]})
    return shown


def rendered_cells(nb, merge_streams: bool, stderr: str = "show") -> list[tuple[int, object, list]]:
    """``[(cell index, cell, shown outputs)]`` for every code cell that gets a ``div.cell``."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        tags = cell.metadata.get("tags", [])
        if {"remove-cell", "remove_cell"} & set(tags):
            continue
        no_in = bool({"remove-input", "remove_input"} & set(tags))
        no_out = bool({"remove-output", "remove_output"} & set(tags))
        if no_in and no_out:
            continue
        out.append((i, cell, [] if no_out else shown_outputs(cell, merge_streams, stderr)))
    return out


def squash(text: str) -> str:
    """Layout away: every run of whitespace is one space."""
    return " ".join(text.split())


def markdown_plain(text: str) -> str:
    """A Markdown output's text/plain with its Table separator lines dropped, squashed."""
    return squash("\n".join(line for line in text.splitlines() if not TABLE_RULE.match(line.strip())))


def smartquotes_action() -> str:
    """What Sphinx's smartquotes does to the book's Markdown text (``""`` when it is off)."""
    config = _nb_config()
    return str(config.get("smartquotes_action", "qDe")) if config.get("smartquotes", True) else ""


def typography(text: str, action: str) -> str:
    """``text`` with what Sphinx's smartquotes educates made plain again, on either side:
    curly quotes become straight ('q'), en/em dashes ``--``/``---`` ('D', 'd'), ``…`` ``...`` ('e').

    Applied to Markdown outputs only (streams are literal blocks, never educated), to both
    the page and text/plain, so a literal ``--`` in a code span compares equal too."""
    if "q" in action:
        text = text.translate(str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'}))
    if "D" in action or "d" in action:
        text = text.replace("---", "—").replace("--", "–")
    if "e" in action:
        text = text.replace("...", "…")
    return text


# ----------------------------------------------------------------------- the page's side

# Run in the page once it is loaded: open every dropdown, show both languages, write
# back the Markdown of prose (see the module docstring), and return every div.cell.
EXTRACT = r"""
() => {
  for (const b of document.querySelectorAll('button.toggle-button-hidden')) b.click();
  for (const d of document.querySelectorAll('details')) d.open = true;
  const article = document.querySelector('article') || document.body;
  const isOutput = el => el.classList.contains('output');
  const isImage = el => el.tagName === 'IMG' || (!isOutput(el) && el.querySelector('img') && !el.innerText.trim());
  const tableCaption = p => {
    const next = p.nextElementSibling;
    return next && (next.tagName === 'TABLE' || next.querySelector('table'));
  };
  const wholeBold = el => {
    const p = el.parentElement;
    return el.tagName === 'STRONG' && p && p.tagName === 'P' && p.textContent.trim() === el.textContent.trim();
  };
  const prepare = root => {
    // the cross-references line of an errata box: not in text/plain
    for (const p of root.querySelectorAll('.admonition > p:last-child')) {
      if (!p.classList.contains('admonition-title') && p.querySelector('a.reference.internal')) p.remove();
    }
    for (const el of root.querySelectorAll('em, strong, code')) {
      if (el.closest('table, pre')) continue;
      const p = el.closest('p');
      if (p && wholeBold(p.firstElementChild || p) && tableCaption(p)) continue;
      if (wholeBold(el)) continue;
      const mark = {EM: '*', STRONG: '**', CODE: '`'}[el.tagName];
      el.before(mark); el.after(mark);
    }
    for (const li of root.querySelectorAll('li')) {
      const ol = li.parentElement.tagName === 'OL';
      li.prepend(ol ? `${[...li.parentElement.children].indexOf(li) + 1}. ` : '- ');
    }
  };
  const shownNow = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const kindOf = el => {
    if (el.classList.contains('stream') || el.classList.contains('stderr')) return 'stream';
    if (el.classList.contains('text_plain')) return 'plain';
    if (el.classList.contains('traceback')) return 'error';
    if (el.classList.contains('text_html')) return el.querySelector('.cw-root') ? 'widget'
                                                  : el.querySelector('audio') ? 'audio' : 'html';
    if (isImage(el)) return 'image';
    return isOutput(el) ? [...el.classList].join('.') : 'markdown';
  };
  // hide-input / hide-output / hide-cell put them in a <details> (opened above)
  const cells = [...article.querySelectorAll('div.cell')].map(cell => ({
    cell,
    input: cell.querySelector(':scope > div.cell_input, :scope > details > div.cell_input'),
    output: cell.querySelector(':scope > div.cell_output, :scope > details > div.cell_output'),
  }));
  // first every change to the page, then every reading of it: one layout, not one per block
  for (const c of cells) {
    c.blocks = c.output ? [...c.output.children].map(el => ({el, kind: kindOf(el)})) : null;
    for (const b of c.blocks || []) if (b.kind === 'markdown') prepare(b.el);
  }
  return cells.map(c => ({
    input: c.input ? c.input.innerText : null,
    shown: shownNow(c.cell),
    outputs: c.blocks && c.blocks.map(({el, kind}) => {
      const item = {kind, shown: shownNow(el), text: el.innerText};
      if (kind === 'image') {
        const img = el.tagName === 'IMG' ? el : el.querySelector('img');
        item.ok = img.complete && img.naturalWidth > 0;
      } else if (kind === 'widget') {
        const root = el.querySelector('.cw-root'), nojs = root.querySelector('.cw-nojs');
        item.ok = root.hasAttribute('data-ready') && (!nojs || !shownNow(nojs)) && root.innerText.trim() !== '';
      } else if (kind === 'audio') {
        item.ok = !!el.querySelector('audio source[src], audio[src]');
      }
      return item;
    }),
  }));
}
"""

BOTH = ".course-lang-switch button[value=both]"


def show_both_languages(page):
    """Click EN + 中文 and check that every block of either language is shown."""
    page.click(BOTH)
    counts = page.evaluate("""() => ['en', 'zh'].map(l => {
        const all = [...document.querySelectorAll('.lang-' + l)];
        return [all.length, all.filter(e => e.getClientRects().length > 0).length]; })""")
    for lang, (n, shown) in zip(("en", "zh"), counts):
        assert shown == n, f"with both languages chosen, {n - shown} of {n} .lang-{lang} blocks are hidden"


# ----------------------------------------------------------------------- the comparison

def _cut(text: str, at: int, width: int = 90) -> str:
    lo = max(0, at - width // 3)
    return ("…" if lo else "") + text[lo:lo + width] + ("…" if lo + width < len(text) else "")


def describe(expected: str, shown: str) -> str:
    """What is missing from the page (and what it shows instead), by whitespace-separated token."""
    a, b = expected.split(), shown.split()
    missing, extra = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            missing.append(" ".join(a[i1:i2]))
        if op in ("replace", "insert"):
            extra.append(" ".join(b[j1:j2]))
    at = next((k for k, (x, y) in enumerate(zip(expected, shown)) if x != y), min(len(expected), len(shown)))
    out = f"missing on the page: {missing!r}"
    if extra:
        out += f"; shown instead: {extra!r}"
    return out + f"\n      text/plain: {_cut(expected, at)!r}\n      on the page: {_cut(shown, at)!r}"


def compare_cell(where: str, expected: list[dict], shown: list[dict] | None) -> list[str]:
    """The problems of one cell: its shown outputs against the page's children of div.cell_output."""
    problems = []
    if not expected:
        if shown:
            problems.append(f"{where}: the notebook shows no output but the page has {len(shown)} block(s)")
        return problems
    if shown is None:
        return [f"{where}: {len(expected)} output(s) in the notebook, no div.cell_output on the page"]
    for k, item in enumerate(shown):
        if not item["shown"]:
            problems.append(f"{where}: page block {k} ({item['kind']}) is hidden: {_cut(squash(item['text']), 0)!r}")
    j = 0
    i = 0
    while i < len(expected):
        out = expected[i]
        label = f"{where} output {out['index']} ({out['mime']})"
        if out["kind"] == "markdown":
            run = [out]
            while i + len(run) < len(expected) and expected[i + len(run)]["kind"] == "markdown":
                run.append(expected[i + len(run)])
            blocks = []
            while j < len(shown) and shown[j]["kind"] == "markdown":
                blocks.append(shown[j])
                j += 1
            i += len(run)
            if not blocks:
                problems.append(f"{label}: no rendered Markdown where the notebook has it")
                continue
            problems += _compare_markdown_run(where, run, squash(" ".join(b["text"] for b in blocks)))
            continue
        i += 1
        if j >= len(shown):
            problems.append(f"{label}: not on the page")
            continue
        item = shown[j]
        j += 1
        if item["kind"] != out["kind"]:
            problems.append(f"{label}: the page shows a {item['kind']} block where the notebook has a {out['kind']}")
            continue
        if out["kind"] in ("stream", "plain", "error", "html"):
            exp, got = squash(out["text"]), squash(item["text"])
            if exp != got:
                problems.append(f"{label}: {describe(exp, got)}")
        elif out["kind"] in ("image", "widget", "audio"):
            if not item.get("ok"):
                problems.append(f"{label}: the {out['kind']} is not rendered (see the module's rules)")
        else:
            problems.append(f"{label}: no rule for {out['mime']} outputs in tests/book/test_visible_text.py")
    if j < len(shown):
        problems.append(f"{where}: the page has {len(shown) - j} block(s) more than the notebook's outputs: "
                        f"{[s['kind'] for s in shown[j:]]}")
    return problems


def _compare_markdown_run(where: str, run: list[dict], got: str) -> list[str]:
    """Consecutive Markdown outputs against the text of their rendered blocks, in order.

    Their blocks are not separated on the page, so the run's tokens are aligned with the
    page's (difflib) and every difference is charged to the output whose tokens it touches:
    each wrong output of the run is named, with the part of the page aligned to it."""
    action = smartquotes_action()
    exps = [typography(markdown_plain(o["text"]), action) for o in run]
    got = typography(got, action)
    if got == squash(" ".join(exps)):
        return []
    owner = [k for k, e in enumerate(exps) for _ in e.split()]          # output of each expected token
    if not owner:
        return [f"{where}: the page shows {_cut(got, 0)!r} where the notebook's Markdown outputs are empty"]
    a, b = " ".join(exps).split(), got.split()
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()

    def page_at(i: int) -> int:
        """The page token aligned with expected token i (or where it would be)."""
        for op, i1, i2, j1, j2 in ops:
            if i1 <= i < i2:
                return j1 + (i - i1) if op == "equal" else j1
        return len(b)

    wrong = sorted({owner[min(i1, len(owner) - 1)] for op, i1, i2, j1, j2 in ops if op != "equal"})
    problems = []
    for k in wrong:
        first = owner.index(k)
        last = len(owner) - owner[::-1].index(k)
        j1, j2 = page_at(first), (page_at(last) if last < len(owner) else len(b))
        out = run[k]
        problems.append(f"{where} output {out['index']} ({out['mime']}): {describe(exps[k], ' '.join(b[j1:j2]))}")
    return problems


def compare_page(page_path: str, cells: list[dict], nb) -> list[str]:
    """Every problem of one page (its div.cell list, as EXTRACT returns it, against notebook ``nb``)."""
    config = _nb_config()
    expected = rendered_cells(nb, bool(config.get("nb_merge_streams", False)),
                              str(config.get("nb_output_stderr", "show")))
    if len(expected) != len(cells):
        return [f"{page_path}: {len(expected)} code cells to show in the notebook but {len(cells)} div.cell "
                f"on the page: the page is not built from this notebook (rebuild the book)"]
    problems = []
    for (index, cell, outs), dom in zip(expected, cells):
        # cell: its 0-based index in the notebook; code cell: 1-based among the code cells
        ordinal = 1 + sum(c.cell_type == "code" for c in nb.cells[:index])
        where = f"{page_path} cell {index} (code cell {ordinal}, In [{cell.get('execution_count')}])"
        if dom["input"] is not None and squash(dom["input"]) != squash(cell.source):
            problems.append(f"{where}: its source on the page differs from the notebook's: the page is not "
                            f"built from this notebook (rebuild the book)\n      {describe(squash(cell.source), squash(dom['input']))}")
            continue
        if not dom["shown"]:
            problems.append(f"{where}: the cell is hidden on the page")
        problems += compare_cell(where, outs, dom["outputs"])
    return problems


# ----------------------------------------------------------------------- the tests

@visit_step("text", rank=2)
def visible_cells(page) -> list[dict]:
    """Both languages shown, then EXTRACT, on the visit shared with the other browser modules
    (tests/page_visits.py). Last of the steps: EXTRACT opens every dropdown and rewrites the page."""
    show_both_languages(page)
    return page.evaluate(EXTRACT)


@pytest.fixture(scope="module")
def visits(page_visits):
    """The session's page visits (tests/page_visits.py), with this module's Chromium.

    Skips (raises under CI) without Chromium or the built book; the tests of the rules
    below need neither."""
    need_chromium("visible-text tests", None if (HTML / "index.html").exists() else
                  f"the book is not built at {HTML} (run `make book`)")
    with chromium():        # held for the module: each visit borrows it
        yield page_visits


@pytest.mark.browser
@pytest.mark.parametrize("page_path", notebook_pages())
def test_every_output_is_visible_as_printed(visits, page_path):
    ipynb, html = SOURCE / f"{page_path}.ipynb", HTML / f"{page_path}.html"
    nb = nbformat.read(ipynb, as_version=4)
    seen = visits(HTML, page_path)
    problems = compare_page(page_path, seen.step("text"), nb)
    problems += [f"{page_path}: console error {e}" for e in seen.errors]
    problems += [f"{page_path}: request to another host {u}" for u in seen.foreign]
    stale = (" NOTE: the notebook is newer than its page; rebuild the book first."
             if html.exists() and ipynb.stat().st_mtime > html.stat().st_mtime else "")
    assert not problems, (f"{len(problems)} output(s) of {page_path} do not show what the notebook printed "
                          f"(a token the browser ate? see tests/book/test_visible_text.py).{stale}\n  - "
                          + "\n  - ".join(problems))


# ----------------------------------------------------------------------- the rules themselves

def _cell(outputs, tags=(), source="x"):
    return nbformat.v4.new_code_cell(source, outputs=outputs, metadata={"tags": list(tags)})


def _md(markdown, plain):
    return nbformat.v4.new_output("execute_result", {"text/markdown": markdown, "text/plain": plain},
                                  execution_count=1)


def test_the_notebook_side_follows_myst_nb():
    glued = nbformat.v4.new_output("display_data", {"application/papermill.record/text/plain": "'0.5'"},
                                   metadata={"scrapbook": {"name": "x", "mime_prefix": "application/papermill.record/"}})
    cell = _cell([nbformat.v4.new_output("stream", name="stdout", text="a\n"), glued,
                  _md("**t**", "t"), nbformat.v4.new_output("stream", name="stdout", text="b\n")])
    shown = shown_outputs(cell, merge_streams=True)
    assert [(o["kind"], o["text"], o["index"]) for o in shown] == [("stream", "a\nb\n", 0), ("markdown", "t", 2)]
    nb = nbformat.v4.new_notebook(cells=[
        _cell([], ["remove-cell"]), _cell([_md("m", "m")], ["remove-output"]), _cell([], source="  "),
        _cell([_md("m", "m")], ["remove-input", "remove-output"]), _cell([_md("m", "m")], ["remove-input"])])
    assert [(i, len(o)) for i, _, o in rendered_cells(nb, True)] == [(1, 0), (4, 1)]


def test_a_table_rule_and_whitespace_are_layout():
    plain = "cap\nh1    h2\n----  --\n<mask>  a*b*\n- x  $5"
    assert markdown_plain(plain) == "cap h1 h2 <mask> a*b* - x $5"


def _block(text, kind="markdown"):
    return {"kind": kind, "text": text, "shown": True}


def test_a_vanished_token_is_named():
    exp = [{"kind": "markdown", "mime": "text/markdown", "index": 0, "text": "w\n-\nthe <mask> sat"}]
    problems = compare_cell("p cell 3", exp, [_block("w\nthe  sat")])
    assert len(problems) == 1 and "p cell 3 output 0" in problems[0] and "'<mask>'" in problems[0], problems
    assert compare_cell("p cell 3", exp, [_block("w\tthe <mask> sat")]) == []


def test_the_first_wrong_output_of_a_markdown_run_is_named():
    exp = [{"kind": "markdown", "mime": "text/markdown", "index": i, "text": t}
           for i, t in enumerate(["a b", "c *d*", "e"])]
    problems = compare_cell("p cell 1", exp, [_block("a b"), _block("c d e")])
    assert len(problems) == 1 and "output 1" in problems[0] and "'*d*'" in problems[0], problems
    assert compare_cell("p cell 1", exp, [_block("a\nb"), _block("c *d*"), _block("e")]) == []
    problems = compare_cell("p cell 1", exp, [_block("a b"), _block("c *d*")])
    assert len(problems) == 1 and "output 2" in problems[0], problems


def test_every_wrong_output_of_a_markdown_run_is_named():
    """ch07's MLM examples and its "50 corruptions" table: one cell, two Tables, both ate <mask>."""
    exp = [{"kind": "markdown", "mime": "text/markdown", "index": i, "text": t}
           for i, t in enumerate(["MLM\ninput\n-----\n<cls> [the→<mask>] book <sep>",
                                  "50 corruptions\nshare  rule\n-----  ----\n→ <mask>  80%"])]
    page = [_block("MLM\ninput\n[the→] book"), _block("50 corruptions\nshare\trule\n→\t80%")]
    problems = compare_cell("ch07 cell 29", exp, page)
    assert [p.split(":")[0] for p in problems] == ["ch07 cell 29 output 0 (text/markdown)",
                                                   "ch07 cell 29 output 1 (text/markdown)"], problems
    assert "missing on the page: ['<cls> [the→<mask>]', '<sep>']" in problems[0], problems
    assert "missing on the page: ['<mask>']" in problems[1], problems


def test_streams_compare_exactly_and_kinds_must_match():
    exp = [{"kind": "stream", "mime": "stdout", "index": 0, "text": "cost $5 and $6\n"}]
    assert compare_cell("p cell 2", exp, [_block("cost $5 and $6", "stream")]) == []
    assert "['$5', '$6']" in compare_cell("p cell 2", exp, [_block("cost 5 and 6", "stream")])[0]
    assert "markdown block where" in compare_cell("p cell 2", exp, [_block("cost $5 and $6")])[0]
    assert "not on the page" in compare_cell("p cell 2", exp, [])[0]
    assert "no div.cell_output" in compare_cell("p cell 2", exp, None)[0]
