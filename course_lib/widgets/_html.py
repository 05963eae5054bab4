"""What every widget shares: the inlined static files, ids, JSON and the HTML object."""

from __future__ import annotations

import hashlib
import html
import json
import numbers
from collections import Counter
from importlib import resources

from ..display import fmt

__all__ = ["Widget", "show", "static_text", "widget_id", "to_json", "compact", "check_digits", "esc"]

_seen: Counter = Counter()  # payload hash -> widgets made with it in this process


def static_text(name: str) -> str:
    """The text of ``course_lib/widgets/static/<name>`` (package data)."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def to_json(payload) -> str:
    """Deterministic JSON, safe inside an inline ``<script>``."""
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def widget_id(kind: str, payload_json: str) -> str:
    """An element id derived from the payload (no randomness, so nbval can compare HTML).

    The n-th widget with the same payload in one kernel gets the suffix ``-n``,
    so several identical widgets on one page still have distinct ids.
    """
    digest = hashlib.sha1(f"{kind}\0{payload_json}".encode("utf-8")).hexdigest()[:12]
    base = f"cw-{kind}-{digest}"
    _seen[base] += 1
    return base if _seen[base] == 1 else f"{base}-{_seen[base]}"


def show(x, digits: int) -> str:
    """How every widget shows a number, in Python and in the browser alike.

    ``x`` is rounded to 10 decimals first (this absorbs the last-bit
    differences between NumPy's and JavaScript's arithmetic, which would
    otherwise flip a value like 0.9125 between 0.912 and 0.913), then
    formatted as ``course_lib.display.fmt`` does (round half to even on the
    binary value; ``-0.000`` shows as ``0.000``). The JavaScript twin is
    ``cwShow`` in ``static/common.js``.
    """
    x = float(x)
    return fmt(round(x, 10) if abs(x) < 1e15 else x, digits)


def compact(x: float, digits: int) -> float:
    """``x`` rounded to ``digits + 4`` decimals for the inlined data, unless that
    would change how it shows (a near-tie such as 0.0049998): then ``x`` rounded
    to 10 decimals, exactly what :func:`show` formats, so the browser shows
    ``show(x, digits)``. Never ``x`` itself: its last bits depend on the CPU
    (0.004999861637965387 on one, …397 on another), and the inlined data,
    hence the HTML that nbval compares, must not."""
    x = float(x)
    r = round(x, digits + 4)
    return r if show(r, digits) == show(x, digits) else (round(x, 10) if abs(x) < 1e15 else x)


def check_digits(digits) -> int:
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral):
        raise TypeError(f"digits must be an integer between 0 and 8, got {type(digits).__name__} {digits!r}")
    if not 0 <= digits <= 8:
        raise ValueError(f"digits must be an integer between 0 and 8, got {digits}")
    return int(digits)


def esc(s) -> str:
    return html.escape(str(s), quote=True)


def script(widget_id_: str, js_names: list[str], entry: str, payload_json: str) -> str:
    """One inline script: the shared helpers, the widget's code, then the call on its root.

    The root is found from ``document.currentScript`` (the script sits inside it);
    ``getElementById`` is the fallback.
    """
    code = "\n".join(static_text(n) for n in ["common.js", *js_names])
    return ("<script>(function () {\n" + code +
            "\nvar s = document.currentScript;"
            f"\nvar root = (s && s.closest && s.closest('#{widget_id_}')) || "
            f"document.getElementById('{widget_id_}');"
            f"\nif (root && !root.hasAttribute('data-ready')) {entry}(root, {payload_json});"
            "\n})();</script>")


NOJS = ("<div class=\"cw-nojs\">Interactive view needs JavaScript: in JupyterLab, run this "
        "cell (or trust the notebook) · 交互视图需要 JavaScript：在 JupyterLab 中运行此单元格"
        "（或信任此笔记本）。</div>")


class Widget:
    """A self-contained HTML widget: ``_repr_html_`` for the book and Jupyter,
    ``__repr__`` (text/plain) with the same numbers for nbval and the terminal.

    Attributes:
        payload: the data inlined into the page (plain Python lists and numbers).
        id: the root element's id.
    """

    kind = "widget"

    def __init__(self, payload: dict, body: str, js: list[str], entry: str, text: str):
        self.payload = payload
        self._json = to_json(payload)
        self.id = widget_id(self.kind, self._json)
        self._body, self._js, self._entry, self._text = body, js, entry, text

    def _repr_html_(self) -> str:
        return (f'<div class="cw-root cw-{self.kind}" id="{self.id}">'
                f"<style>{static_text('widgets.css')}</style>{NOJS}{self._body}"
                f"{script(self.id, self._js, self._entry, self._json)}</div>")

    def __repr__(self) -> str:
        return self._text

    def to_page(self, title: str = "course_lib widget") -> str:
        """A minimal standalone HTML page holding just this widget."""
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<link rel=\"icon\" href=\"data:,\">"
                f"<title>{esc(title)}</title></head><body>\n{self._repr_html_()}\n</body></html>\n")
