"""How much of each chapter's visible code is plumbing, and how many visible lines declare a band.

    python tools/plumbing.py            # a table: one row per chapter, then the book
    python tools/plumbing.py --json     # the same numbers as JSON
    python tools/plumbing.py book/ch05_transformer.md …   # only those chapters

What is counted
---------------
A chapter is ``book/ch*.md`` (jupytext MyST). Its **visible code** is every
```` ```{code-cell} ```` whose tags include none of ``hide-input``, ``hide-cell``,
``remove-input``, ``remove-cell`` (``hide-output`` and ``remove-output`` hide only
the output: the code stays visible). A cell's **lines** are the non-blank lines of
its source, without the ``:tags:`` header.

The statement rule (plumbing)
-----------------------------
The cell is parsed with ``ast`` (IPython lines starting with ``%`` or ``!`` are
blanked first; a cell that still does not parse has no plumbing). A **top-level
statement** is plumbing, with every non-blank line of its span
(``lineno``..``end_lineno``), when it is

- an expression statement whose value is a call, or an assignment (``=``, an
  annotated one, ``_ = …`` included) whose value is a call,
- and the called function is a display, glue, check or table helper, or figure
  styling:

  * display, glue, check and table helpers: a bare name or an attribute of
    ``display``/``repro``/``chapters``/``course_lib.display`` named ``glue``,
    ``check``, ``check_close``, ``Table``, ``matrix_table``, ``show``,
    ``display``, ``band``, ``band_for``, ``compare``, ``show_all``, or any name in
    ``course_lib.display.__all__`` (read from ``course_lib/display/__init__.py``).
    ``display(...)`` wrapping anything counts (it is a display call itself);
    ``print`` does not;
  * figure styling: a method of a figure, axes or pyplot object (the receiver's
    root name is ``ax…``, ``axes…``, ``axs``, ``fig…`` or ``plt``; ``ax.xaxis…``
    and ``axes[0, 1]…`` included) named ``set_*``, ``legend``, ``grid``,
    ``tick_params``, ``tight_layout``, ``suptitle``, ``xlabel``, ``ylabel``,
    ``title``, ``xlim``, ``ylim``, ``xticks``, ``yticks``, ``show``, or
    ``axhline``/``axvline`` used as decoration: every positional argument a number
    literal and no ``label=`` keyword (a reference line with a legend entry or at
    a computed height is data, not decoration); and ``plotting.setup``,
    ``plotting.style*``.

- A ``for`` loop whose body (and ``else``) holds only plumbing statements (or
  such loops) counts whole, header included.

Everything else (computation, ``print``, plotting data, imports, comments) is not
plumbing. The **share** is plumbing lines / visible lines.

Visible band lines
------------------
A line of a visible cell that calls ``band(``/``band_for(`` (``repro.band(``
included) or passes ``reference=`` (a training call checked against a stored
curve). The book's goal: 10 such lines at most in the whole book.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HIDDEN_TAGS = frozenset({"hide-input", "hide-cell", "remove-input", "remove-cell"})
SHARE_MAX = 0.10          # the goal: plumbing is 10 % of a chapter's visible code at most
BAND_LINES_MAX = 10       # the goal: 10 visible band lines in the whole book at most

HELPERS = frozenset({"glue", "check", "check_close", "Table", "matrix_table", "show", "display",
                     "band", "band_for", "compare", "show_all"})
HELPER_MODULES = frozenset({"display", "repro", "chapters", "course_lib.display", "course_lib.repro",
                            "course_lib.chapters"})
STYLE_METHODS = frozenset({"legend", "grid", "tick_params", "tight_layout", "suptitle", "xlabel", "ylabel",
                           "title", "xlim", "ylim", "xticks", "yticks", "show"})
FIGURE_RECEIVER = re.compile(r"^(ax\w*|axes\w*|axs|fig\w*|plt)$")
BAND_LINE = re.compile(r"(?<![\w])(?:band|band_for)\s*\(|(?<![\w])reference\s*=(?!=)")
_CELL_START = re.compile(r"^```\{code-cell\}")


def display_names(root: Path = ROOT) -> frozenset[str]:
    """The names in ``course_lib.display.__all__``, read without importing the package."""
    tree = ast.parse((root / "course_lib" / "display" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return frozenset(ast.literal_eval(node.value))
    raise ValueError("course_lib/display/__init__.py has no __all__ list")


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _root_name(node: ast.AST) -> str | None:
    """The name a chain of attributes, subscripts and calls starts from (``axes`` in ``axes[0].x``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)


def is_plumbing_call(call: ast.AST, helpers: frozenset[str]) -> bool:
    """Whether ``call`` (an ``ast.Call``) calls a display/glue/check/table helper or styles a figure."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in helpers
    if not isinstance(func, ast.Attribute):
        return False
    name, owner = func.attr, _dotted(func.value)
    if owner in HELPER_MODULES and name in helpers:
        return True
    if owner == "plotting" and (name == "setup" or name.startswith("style")):
        return True
    root = _root_name(func.value)
    if root is None or not FIGURE_RECEIVER.match(root):
        return False
    if name.startswith("set_") or name in STYLE_METHODS:
        return True
    if name in ("axhline", "axvline"):
        return all(_is_number(a) for a in call.args) and not any(k.arg == "label" for k in call.keywords)
    return False


def is_plumbing_statement(stmt: ast.stmt, helpers: frozenset[str]) -> bool:
    """The statement rule (module docstring) for one statement."""
    if isinstance(stmt, ast.Expr):
        return is_plumbing_call(stmt.value, helpers)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return is_plumbing_call(stmt.value, helpers)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        body = stmt.body + stmt.orelse
        return bool(body) and all(is_plumbing_statement(s, helpers) for s in body)
    return False


def plumbing_lines(source: str, helpers: frozenset[str]) -> set[int]:
    """The 1-based numbers of the non-blank source lines that are plumbing."""
    lines = source.split("\n")
    code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    out = set()
    for stmt in tree.body:
        if is_plumbing_statement(stmt, helpers):
            out.update(n for n in range(stmt.lineno, stmt.end_lineno + 1) if lines[n - 1].strip())
    return out


def code_cells(text: str) -> list[tuple[set[str], str]]:
    """Every ```` ```{code-cell} ```` of a MyST page: (its tags, its source without the header)."""
    cells, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        if not _CELL_START.match(lines[i]):
            i += 1
            continue
        fence = re.match(r"^`+", lines[i]).group(0)
        i += 1
        tags: set[str] = set()
        if i < len(lines) and lines[i].strip() == "---":           # a YAML metadata header
            i += 1
            while i < len(lines) and lines[i].strip() != "---":
                m = re.match(r"^\s*tags:\s*\[(.*)\]", lines[i])
                if m:
                    tags.update(t.strip().strip("'\"") for t in m.group(1).split(",") if t.strip())
                i += 1
            i += 1
        while i < len(lines) and lines[i].startswith(":") and re.match(r"^:[\w-]+:", lines[i]):
            m = re.match(r"^:tags:\s*\[(.*)\]", lines[i])
            if m:
                tags.update(t.strip().strip("'\"") for t in m.group(1).split(",") if t.strip())
            i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        cells.append((tags, "\n".join(body)))
    return cells


def measure_text(text: str, helpers: frozenset[str] | None = None) -> dict:
    """The measures of one chapter's MyST text: visible lines, plumbing lines, share, band lines."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a chapter's MyST text (str), got {type(text).__name__}")
    helpers = HELPERS | display_names() if helpers is None else helpers
    visible = plumbing = bands = hidden = 0
    for tags, source in code_cells(text):
        if tags & HIDDEN_TAGS:
            hidden += sum(1 for ln in source.split("\n") if ln.strip())
            continue
        visible += sum(1 for ln in source.split("\n") if ln.strip())
        plumbing += len(plumbing_lines(source, helpers))
        bands += sum(1 for ln in source.split("\n") if BAND_LINE.search(ln))
    return {"visible_lines": visible, "plumbing_lines": plumbing,
            "share": plumbing / visible if visible else 0.0, "band_lines": bands, "hidden_lines": hidden}


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapters' MyST files, in order."""
    return sorted((root / "book").glob("ch*.md"))


def measure(paths: list[Path] | None = None) -> dict:
    """{chapter name: measures} and a ``"book"`` total."""
    paths = chapters() if paths is None else [Path(p) for p in paths]
    helpers = HELPERS | display_names()
    out = {p.stem: measure_text(p.read_text(encoding="utf-8"), helpers) for p in paths}
    total = {k: sum(m[k] for m in out.values()) for k in ("visible_lines", "plumbing_lines", "band_lines",
                                                           "hidden_lines")}
    total["share"] = total["plumbing_lines"] / total["visible_lines"] if total["visible_lines"] else 0.0
    return {"chapters": out, "book": total}


def table(result: dict) -> str:
    rows = [f"{'chapter':<28} {'visible':>7} {'plumbing':>8} {'share':>7} {'bands':>5}"]
    for name, m in [*result["chapters"].items(), ("book", result["book"])]:
        flag = " >" if m["share"] > SHARE_MAX else ""
        rows.append(f"{name:<28} {m['visible_lines']:>7} {m['plumbing_lines']:>8} {m['share']:>6.1%} "
                    f"{m['band_lines']:>5}{flag}")
    rows.append(f"goal: share <= {SHARE_MAX:.0%} in every chapter ('>' marks one over); "
                f"visible band lines <= {BAND_LINES_MAX} in the book")
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="chapters' .md files (default: book/ch*.md)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    for f in args.files:
        if not Path(f).is_file():
            parser.error(f"files: {f} is not a file")
    result = measure(args.files or None)
    print(json.dumps(result, indent=1) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
