"""The machinery of the errata: compare a source's printed numbers with computed ones,
and render an ``Erratum`` as a bilingual warning box.

Each chapter's ``chNN/errata.py`` holds its errata; :mod:`course_lib.chapters`
collects them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..display import Table, fmt

__all__ = ["Erratum", "Box", "compare", "compare_grid", "mismatches"]


def compare(example: str, step: str, caption: str = "") -> Table:
    """Source value beside computed value for one step of a worked example.

    Args:
        example: a key of ``course_lib.chapters.EXAMPLES`` (e.g. ``"single_query"``).
        step: a claim of that example (e.g. ``"weights"``). A printed
            ``True``/``False`` is compared with the computed truth value.

    Returns:
        ``Table`` with one row per printed number: position, source value,
        computed value rounded to the same decimals, and ✓ or ✗.
    """
    rows = []
    for pos, printed, computed in _pairs(example, step):
        rows.append([pos, printed, computed, "✓" if printed == computed else "✗"])
    return Table(["entry · 位置", "source · 原文", "computed · 计算", "match · 一致"],
                 rows, caption)


def compare_grid(example: str, step: str, row_names, col_names, caption: str = "") -> Table:
    """``compare`` laid out like the source's table, for long tables.

    Each cell shows the computed value and ✓, or ``source ✗ computed``.
    ``row_names`` and ``col_names`` label the printed values in reading order.
    """
    cells = [f"{c} ✓" if s == c else f"{s} ✗ {c}" for _, s, c in _pairs(example, step)]
    n = len(col_names)
    if len(cells) != len(row_names) * n:
        raise ValueError(f"row_names × col_names must cover the {len(cells)} printed values "
                         f"of {step!r}, got {len(row_names)} × {n}")
    return Table([""] + list(col_names),
                 [[r] + cells[i * n:(i + 1) * n] for i, r in enumerate(row_names)], caption)


def mismatches(example: str, step: str) -> list[tuple[str, str, str]]:
    """The ``(position, source, computed)`` triples that disagree."""
    return [(p, s, c) for p, s, c in _pairs(example, step) if s != c]


def _pairs(example, step):
    from . import EXAMPLES              # collected from the chapters once they are imported
    if example not in EXAMPLES:
        raise ValueError(f"example must be one of {sorted(EXAMPLES)}, got {example!r}")
    steps_fn, data = EXAMPLES[example]
    if step not in data["claims"]:
        raise ValueError(f"step must be one of {sorted(data['claims'])} for example "
                         f"{example!r}, got {step!r}")
    claim = data["claims"][step]
    values = np.atleast_1d(np.asarray(steps_fn()[step], dtype=float))
    if values.size != len(claim.printed):
        raise ValueError(f"the source printed {len(claim.printed)} values for {step!r} "
                         f"but the computation has {values.size}")
    index = list(np.ndindex(values.shape))
    for idx, printed, dec, v in zip(index, claim.printed, claim.decimals(), values.ravel()):
        pos = "[" + ",".join(str(i + 1) for i in idx) + "]" if values.size > 1 else "·"
        yield pos, printed, str(bool(v)) if printed in ("True", "False") else fmt(v, dec)


@dataclass(frozen=True)
class Erratum:
    """One wrong step in a source document, with the reason in both languages.

    Attributes:
        key: a short id, e.g. ``"ch02-context"``.
        chapter: the chapter that discusses it (document path, no suffix).
        example, step: what ``compare`` checks; both None for an error in a
            source's *code* or reasoning rather than in a printed number.
        title_en, title_zh: one-line title.
        why_en, why_zh: the explanation; ``{name}`` fields are filled from
            ``details()``, so any number in the text is computed, not typed.
    """

    key: str
    chapter: str
    example: str | None
    step: str | None
    title_en: str
    title_zh: str
    why_en: str
    why_zh: str
    details: Callable[[], dict] = field(default=lambda: {})
    evidence: Callable[[], object] | None = None
    """For an erratum without a printed number: a function returning a
    ``Table`` or text that shows the problem, computed (e.g. the error the
    source's code raises when run)."""
    practice: str | None = None
    """Label of an exercise that practises the right computation, if any."""

    def is_live(self) -> bool:
        """Is the error still there? (a mismatch remains, or the evidence shows it)"""
        if self.example is None:
            return self.evidence is not None and bool(str(_as_text(self.evidence())).strip())
        return bool(mismatches(self.example, self.step))


def _as_text(x) -> str:
    return repr(x) if isinstance(x, Table) else str(x)


class Box:
    """Errata rendered as warning boxes (Markdown) or plain text; see ``show``."""

    def __init__(self, errata: list[Erratum], link_chapter: bool):
        self.errata = errata
        self.link_chapter = link_chapter

    def _parts(self, e: Erratum):
        d = e.details()
        if e.example is None:
            table = e.evidence()
        else:
            table = compare(e.example, e.step)
            table.rows = [r for r in table.rows if r[3] == "✗"]
        return table, e.why_en.format(**d), e.why_zh.format(**d)

    def _repr_markdown_(self) -> str:
        out = []
        for e in self.errata:
            table, en, zh = self._parts(e)
            link = (f"Chapter · 章节: {{doc}}`/{e.chapter}`" if self.link_chapter
                    else "All errata · 全部勘误: {doc}`/book/appendix/errata`")
            if e.practice:
                link += f" · Practice · 练习: {{ref}}`{e.practice}`"
            out.append(
                f"::::{{admonition}} Erratum · 勘误 ({e.key}): {e.title_en} · {e.title_zh}\n"
                f":class: warning\n\n{_markdown(table)}\n"
                f":::{{container}} lang-en\n{en}\n:::\n\n"
                f":::{{container}} lang-zh\n{zh}\n:::\n\n{link}\n::::\n")
        return "\n".join(out)

    def __repr__(self) -> str:
        out = []
        for e in self.errata:
            table, en, zh = self._parts(e)
            out.append(f"Erratum · 勘误 ({e.key}): {e.title_en} · {e.title_zh}\n"
                       f"{_as_text(table)}\n{en}\n{zh}")
        return "\n\n".join(out)


def _markdown(evidence) -> str:
    if isinstance(evidence, Table):
        return evidence._repr_markdown_()
    return "```text\n" + str(evidence).rstrip() + "\n```\n"
