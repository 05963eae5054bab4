"""Small display objects that read well in Jupyter, in the HTML book and to nbval.

Each object has a Markdown form (rendered by Jupyter and by the book) and a
plain-text form. Both hold the same numbers, and the test suite compares
both, so neither can drift from the code that computed them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Table", "fmt", "matrix_table"]


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
        esc = [[c.replace("|", "\\|") for c in r] for r in [self.headers] + self.rows]
        lines = ["| " + " | ".join(esc[0]) + " |",
                 "|" + "|".join(":--" if i == 0 else "--:" for i in range(len(esc[0]))) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
        head = f"**{self.caption}**\n\n" if self.caption else ""
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
