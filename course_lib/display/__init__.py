"""Small display objects that read well in Jupyter, in the HTML book and to nbval.

Each object has a Markdown form (rendered by Jupyter and by the book) and a
plain-text form. Both hold the same numbers, and the test suite compares
both, so neither can drift from the code that computed them. What the reader
sees is proven too (CONTRIBUTING.md, *What the reader sees*):

- :func:`md_escape` escapes every cell, so a token such as ``<mask>`` is never
  eaten by the browser as a tag (``tests/book/test_visible_text.py``);
- :func:`check` and :func:`check_close` print ✓ or raise: an on-page check
  can never print ``False`` and pass;
- a display object built in a cell but not shown (not the cell's last
  expression, not passed to ``display``) fails the cell (:func:`install_guard`);
- :func:`glue` hands a formatted number to the prose (``{glue:text}`name```).
"""

from __future__ import annotations

import ast
import numbers
import re

import numpy as np

__all__ = ["Table", "fmt", "matrix_table", "md_escape", "md_prose", "check", "check_close", "glue",
           "NotShownError", "install_guard"]

# Characters that Markdown, MyST or HTML would read as syntax rather than text.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>&$|~])")


def md_escape(text: str) -> str:
    """``text`` for a Markdown cell, with every syntax character backslash-escaped.

    The browser then shows exactly ``text``: ``<mask>`` stays ``<mask>``
    (not an HTML tag), ``*``, ``_``, ``$`` and ``|`` stay themselves (no
    emphasis, no math, no new table column).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    return _MD_SPECIAL.sub(r"\\\1", text)


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def md_prose(text: str) -> str:
    """``text`` that is Markdown on purpose (``*emphasis*``, `` `code` ``, roles), with
    ``<``, ``>`` and ``&`` escaped outside code spans so no token becomes an HTML tag."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(re.sub(r"([<>&])", r"\\\1", text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(re.sub(r"([<>&])", r"\\\1", text[pos:]))
    return "".join(out)


def fmt(x, decimals: int) -> str:
    """Round ``x`` to ``decimals`` places as text; ``-0.000`` becomes ``0.000``."""
    s = f"{float(x):.{decimals}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


class Table:
    """A table with a caption, shown as Markdown in notebooks and the book.

    Args:
        headers: column titles (bilingual titles are fine: ``"step · 步骤"``).
        rows: list of rows, each a list of cells already formatted as text.
        caption: optional line printed above the table.
    """

    def __init__(self, headers, rows, caption: str = ""):
        self.headers = [str(h) for h in headers]
        self.rows = [[str(c) for c in r] for r in rows]
        bad = [i for i, r in enumerate(self.rows) if len(r) != len(self.headers)]
        if bad:
            raise ValueError(f"rows must have {len(self.headers)} cells like headers; "
                             f"row {bad[0]} has {len(self.rows[bad[0]])}")
        self.caption = caption

    def _repr_markdown_(self) -> str:
        esc = [[md_escape(c) for c in r] for r in [self.headers] + self.rows]
        lines = ["| " + " | ".join(esc[0]) + " |",
                 "|" + "|".join(":--" if i == 0 else "--:" for i in range(len(esc[0]))) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
        head = f"**{md_escape(self.caption)}**\n\n" if self.caption else ""
        return head + "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        cols = list(zip(self.headers, *self.rows))
        widths = [max(_width(c) for c in col) for col in cols]
        def line(r):
            return "  ".join(c + " " * (w - _width(c)) for c, w in zip(r, widths)).rstrip()
        out = [self.caption] if self.caption else []
        out += [line(self.headers), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in self.rows]
        return "\n".join(out)


def _width(s: str) -> int:
    """Display width: CJK characters take two columns."""
    return sum(2 if "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" else 1 for ch in s)


def matrix_table(M, decimals: int, row_names=None, col_names=None, caption: str = "") -> Table:
    """A 1-D or 2-D array as a ``Table``, every entry rounded to ``decimals``.

    Args:
        M: ``(n,)`` or ``(n, m)`` array.
        decimals: decimals shown.
        row_names, col_names: labels (default ``row 1 …`` / ``1 …``).
    """
    M = np.atleast_2d(np.asarray(M, dtype=float))
    row_names = row_names or [f"{i + 1}" for i in range(M.shape[0])]
    col_names = col_names or [f"{j + 1}" for j in range(M.shape[1])]
    rows = [[rn] + [fmt(v, decimals) for v in r] for rn, r in zip(row_names, M)]
    return Table([""] + list(col_names), rows, caption)


# --------------------------------------------------------------------------- checks

CHECK_MARK = "✓"


def _truth(ok, name: str) -> bool:
    if hasattr(ok, "item") and getattr(ok, "ndim", None) == 0:
        ok = ok.item()
    if not isinstance(ok, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool (one truth value), got {type(ok).__name__}; "
                        "reduce an array with .all() or .any() first")
    return bool(ok)


def check(label: str, ok) -> None:
    """An on-page check: print ``✓ label`` if ``ok``, else raise ``AssertionError``.

    Use it for every yes/no fact a cell proves ("equal to course_lib", "the
    rows sum to 1"): the page can then never show ``False`` beside a claim,
    and a failed check fails the cell, ``make sync`` and nbval.

    Args:
        label: the claim, in both languages (``"rows sum to 1 · 每行之和为 1"``).
        ok: its truth value (a Python, NumPy or 0-d torch bool).
    """
    if not isinstance(label, str) or not label.strip():
        raise TypeError("label must be a non-empty string")
    if not _truth(ok, "ok"):
        raise AssertionError(f"check failed · 检查未通过: {label}")
    print(f"{CHECK_MARK} {label}", flush=True)


def check_close(label: str, actual, expected, *, atol: float) -> None:
    """:func:`check` that two arrays agree: ``max |actual − expected| < atol``.

    Prints ``✓ label (max |Δ| < atol)``; raises ``AssertionError`` naming the
    largest difference otherwise. Shapes must match exactly.

    Args:
        label: what is compared, in both languages.
        actual, expected: arrays (NumPy, torch or nested lists) of one shape.
        atol: the positive bound, e.g. ``1e-12``.
    """
    if not isinstance(label, str) or not label.strip():
        raise TypeError("label must be a non-empty string")
    if isinstance(atol, bool) or not isinstance(atol, numbers.Real) or not atol > 0:
        raise ValueError(f"atol must be a positive number, got {atol!r}")
    a, b = (np.asarray(x.detach() if hasattr(x, "detach") else x, dtype=float)
            for x in (actual, expected))
    if a.shape != b.shape:
        raise AssertionError(f"check failed · 检查未通过: {label}: shape {a.shape} != {b.shape}")
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    if not diff < atol:  # also catches NaN
        raise AssertionError(f"check failed · 检查未通过: {label}: max |Δ| = {diff:.3g} ≥ {atol:g}")
    print(f"{CHECK_MARK} {label} (max |Δ| < {atol:g})", flush=True)


# --------------------------------------------------------------------------- glue

_GLUE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def glue(name: str, value, fmt: str | None = None) -> str:
    """Hand a result to the prose: ``{glue:text}`name``` shows it in the page.

    The value is formatted here (``fmt``, e.g. ``".3f"`` or ``".1%"``) so the
    text that nbval compares and the page shows is exactly what the sentence
    says, with no CPU's last bits in it. Nothing is shown in the cell itself.

    Args:
        name: the key used in the prose (letters, digits, ``-``, ``_``).
        value: a number or a string.
        fmt: a format spec for a number (required for floats).

    Returns:
        The formatted text.
    """
    if not isinstance(name, str) or not _GLUE_NAME.match(name):
        raise ValueError(f"name must be letters, digits, '-' and '_', starting with a letter, got {name!r}")
    if isinstance(value, str):
        if fmt is not None:
            raise ValueError("fmt is for numbers; value is already a string")
        text = value
    else:
        if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"value must be a number or a string, got {type(value).__name__}")
        if fmt is None and not isinstance(value, numbers.Integral):
            raise ValueError("fmt is required for a float, e.g. fmt='.3f'")
        text = format(value, fmt or "d")
    from myst_nb import glue as _glue
    _glue(name, text, display=False)
    return text


# --------------------------------------------------------------------------- never dropped

_SHOWN = "_course_shown"


class NotShownError(TypeError):
    """A display object was built in a cell and dropped without being shown."""


def _is_display(value) -> bool:
    cls = type(value)
    return (cls.__module__.startswith("course_lib")
            and any(hasattr(cls, m) for m in ("_repr_markdown_", "_repr_html_")))


def _discarded(value):
    """Called on every expression statement of a cell but its last (see :func:`install_guard`)."""
    if _is_display(value):
        raise NotShownError(
            f"a {type(value).__name__} is built here but never shown: make it the cell's last "
            f"expression or call display(...) on it · 这里构造的 {type(value).__name__} 没有显示出来："
            "把它放在单元格最后一行，或用 display(...) 显示")
    return value


class _Guard(ast.NodeTransformer):
    """Wrap every expression statement except the cell's last in ``_discarded(...)``."""

    def visit_Module(self, node):
        last = node.body[-1] if node.body and isinstance(node.body[-1], ast.Expr) else None
        for stmt in ast.walk(node):
            for field_name in ("body", "orelse", "finalbody"):
                body = getattr(stmt, field_name, None)
                if not isinstance(body, list):
                    continue
                for i, sub in enumerate(body):
                    if isinstance(sub, ast.Expr) and sub is not last and not _is_plain(sub.value):
                        call = ast.Call(
                            func=ast.Attribute(
                                value=ast.Call(func=ast.Name("__import__", ast.Load()),
                                               args=[ast.Constant("course_lib.display")],
                                               keywords=[ast.keyword("fromlist", ast.Constant(("x",)))]),
                                attr="_discarded", ctx=ast.Load()),
                            args=[sub.value], keywords=[])
                        body[i] = ast.copy_location(ast.Expr(call), sub)
        return ast.fix_missing_locations(node)


def _is_plain(expr) -> bool:
    """Constants (docstrings), ``print(...)``, awaits and yields are never display objects."""
    if isinstance(expr, (ast.Constant, ast.Await, ast.Yield, ast.YieldFrom)):
        return True
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)
            and expr.func.id in ("print", "display"))


def install_guard(shell=None) -> bool:
    """In IPython, fail any cell that builds a course display object and drops it.

    A ``Table`` (or errata box, checker result, widget) that is not the last
    expression of its cell is silently thrown away by Jupyter; the guard turns
    that into a ``NotShownError`` in the cell. Installed when this module is
    imported inside IPython; returns whether it is installed.
    """
    if shell is None:
        try:
            shell = get_ipython()  # noqa: F821 (IPython's builtin)
        except NameError:
            return False
    if not any(isinstance(t, _Guard) for t in shell.ast_transformers):
        shell.ast_transformers.append(_Guard())
    return True


install_guard()
