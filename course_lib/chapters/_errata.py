"""The machinery of the errata: compare a source's printed numbers with computed ones,
and render an ``Erratum`` as a bilingual warning box.

Each chapter's ``chNN/errata.py`` holds its errata; :mod:`course_lib.chapters`
collects them.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_UP, Decimal
from typing import Callable

import numpy as np

from ..display import Table, fmt, md_prose

__all__ = ["Erratum", "Box", "KINDS", "compare", "compare_grid", "mismatches", "rounds_to"]

#: kind -> (verdict, English label, Chinese label). ``arithmetic``: a number worked
#: out by hand is wrong; ``code``: a listing crashes or computes the wrong thing;
#: ``claim``: a printed statement or figure that the code or the facts do not
#: support; ``note``: the source is right (✓), and the box adds a caveat.
KINDS = {
    "arithmetic": ("✗", "arithmetic slip", "计算错误"),
    "code": ("✗", "code error", "代码错误"),
    "claim": ("✗", "unsupported claim", "说法与事实不符"),
    "note": ("✓", "correct, with a note", "正确，附说明"),
}

_PRINTED = re.compile(r"-?\d+(\.\d+)?")


def rounds_to(exact, printed: str) -> str | None:
    """How a published, rounded figure ``printed`` rounds the ``exact`` value.

    ``printed`` is rounded at its own last decimal (``"86"``: to units,
    ``"25.6"``: to tenths). A correct rounding is any of IEEE 754's: to
    nearest (ties to even), toward zero (truncation) or away from zero.

    Args:
        exact: the exact value (a finite real number), e.g. ``86.567656``.
        printed: the figure as printed, e.g. ``"86"``.

    Returns:
        ``"nearest"``, ``"toward zero"`` or ``"away from zero"`` (the first
        that gives ``printed``), or None if no correct rounding does. Used by
        the errata of published figures (chapter 6).
    """
    if isinstance(exact, bool) or not isinstance(exact, numbers.Real) or not math.isfinite(exact):
        raise TypeError(f"exact must be a finite real number, got {exact!r}")
    if not isinstance(printed, str) or not _PRINTED.fullmatch(printed):
        raise ValueError(f"printed must be a number as printed, e.g. '86' or '25.6', got {printed!r}")
    quantum = Decimal(1).scaleb(-len(printed.partition(".")[2]))
    x = Decimal(repr(float(exact)))
    for name, mode in (("nearest", ROUND_HALF_EVEN), ("toward zero", ROUND_DOWN),
                       ("away from zero", ROUND_UP)):
        if x.quantize(quantum, rounding=mode) == Decimal(printed):
            return name
    return None


#: How :func:`rounds_to` rounded, in both languages.
ROUNDING_LABELS = {"nearest": "nearest · 四舍六入五成双", "toward zero": "toward zero · 舍去",
                   "away from zero": "away from zero · 进一"}


def compare(example: str, step: str, caption: str = "", *, published: bool = False) -> Table:
    """Source value beside computed value for one step of a worked example.

    Args:
        example: a key of ``course_lib.chapters.EXAMPLES`` (e.g. ``"single_query"``).
        step: a claim of that example (e.g. ``"weights"``). A printed
            ``True``/``False`` is compared with the computed truth value.
        published: the source quotes published, rounded figures (a paper's
            "86M"): a figure is ✓ when :func:`rounds_to` finds a correct
            rounding of the computed value that gives it (the rule of the
            errata of published figures, chapter 6), and the computed value is
            shown with three more decimals.

    Returns:
        ``Table`` with one row per printed number: position, source value,
        computed value rounded to the same decimals, and ✓ or ✗.
    """
    if not isinstance(published, bool):
        raise TypeError(f"published must be True or False, got {published!r}")
    if published:
        rows = []
        for pos, printed, exact, dec in _exact_pairs(example, step):
            how = rounds_to(exact, printed)
            rows.append([pos, printed, fmt(exact, dec + 3),
                         f"✓ {ROUNDING_LABELS[how]}" if how else "✗ no rounding gives it · 任何舍入都得不到"])
        return Table(["entry · 位置", "source · 原始资料", "computed · 计算", "a correct rounding? · 是正确的舍入吗？"],
                     rows, caption)
    rows = []
    for pos, printed, computed in _pairs(example, step):
        rows.append([pos, printed, computed, "✓" if printed == computed else "✗"])
    return Table(["entry · 位置", "source · 原始资料", "computed · 计算", "match · 一致"],
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
    for pos, printed, v, dec in _exact_pairs(example, step):
        yield pos, printed, str(bool(v)) if printed in ("True", "False") else fmt(v, dec)


def _exact_pairs(example, step):
    """``(position, printed, computed value, printed decimals)`` for each printed number."""
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
        yield pos, printed, float(v), dec


@dataclass(frozen=True)
class Erratum:
    """One wrong step in a source document, with the reason in both languages.

    Attributes:
        key: a short id, e.g. ``"ch02-context"``.
        chapter: the chapter that discusses it (document path, no suffix).
        example, step: what ``compare`` checks; both None for an error in a
            source's *code* or reasoning rather than in a printed number.
        title_en, title_zh: one-line title.
        why_en, why_zh: the explanation. Titles and explanations are
            templates: ``{name}`` fields are filled from ``details()``, so any
            number in the text is computed, not typed
            (``tests/chapters/test_errata.py`` fails on a typed result).
        kind: one of ``KINDS``: ``"arithmetic"``, ``"code"``, ``"claim"`` (✗)
            or ``"note"`` (✓: the source is right, the box adds a caveat).
            Default: ``"arithmetic"`` for a printed number (``example`` set),
            else ``"code"``.
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
    source's code raises when run). Given with ``example``, it replaces the
    box's ``compare`` rows (e.g. published figures judged by :func:`rounds_to`)."""
    practice: str | None = None
    """Label of an exercise that practises the right computation, if any."""
    kind: str | None = None

    def __post_init__(self):
        kind = self.kind or ("arithmetic" if self.example is not None else "code")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "kind", kind)

    @property
    def verdict(self) -> str:
        """``"✗"`` for an error, ``"✓"`` for a note on a correct source."""
        return KINDS[self.kind][0]

    def title(self, lang: str) -> str:
        """The title in ``lang`` (``"en"`` or ``"zh"``), its fields filled from ``details()``."""
        if lang not in ("en", "zh"):
            raise ValueError(f"lang must be 'en' or 'zh', got {lang!r}")
        return getattr(self, f"title_{lang}").format(**self.details())

    def is_live(self) -> bool:
        """Is the point still there? (a mismatch remains, or the evidence shows it)"""
        if self.example is None or (self.evidence is not None and self.kind == "note"):
            return self.evidence is not None and bool(str(_as_text(self.evidence())).strip())
        return bool(mismatches(self.example, self.step))


def _as_text(x) -> str:
    return repr(x) if isinstance(x, Table) else str(x)


class Box:
    """Errata rendered as boxes (Markdown: warning for ✗, tip for a ✓ note) or plain text; see ``show``."""

    def __init__(self, errata: list[Erratum], link_chapter: bool):
        self.errata = errata
        self.link_chapter = link_chapter

    def _parts(self, e: Erratum):
        d = e.details()
        if e.evidence is not None:
            table = e.evidence()
        else:
            table = compare(e.example, e.step)
            table.rows = [r for r in table.rows if r[3] == "✗"]
        return table, e.why_en.format(**d), e.why_zh.format(**d)

    @staticmethod
    def _heading(e: Erratum) -> str:
        verdict, en, zh = KINDS[e.kind]
        label = "Note · 说明" if verdict == "✓" else "Erratum · 勘误"
        return (f"{label} {verdict} ({e.key}, {en} · {zh}): "
                f"{e.title('en')} · {e.title('zh')}")

    def _repr_markdown_(self) -> str:
        # In a chapter a box is source forensics, one click away (collapsed);
        # the errata appendix, where they are the subject, shows them open.
        fold = "" if self.link_chapter else " dropdown"
        out = []
        for e in self.errata:
            table, en, zh = self._parts(e)
            link = (f"Chapter · 章节: {{doc}}`/{e.chapter}`" if self.link_chapter
                    else "All errata · 全部勘误: {doc}`/book/appendix/errata`")
            if e.practice:
                link += f" · Practice · 练习: {{ref}}`{e.practice}`"
            out.append(
                f"::::{{admonition}} {md_prose(self._heading(e))}\n"
                f":class: {'tip' if e.verdict == '✓' else 'warning'}{fold}\n\n{_markdown(table)}\n"
                f":::{{container}} lang-en\n{md_prose(en)}\n:::\n\n"
                f":::{{container}} lang-zh\n{md_prose(zh)}\n:::\n\n{link}\n::::\n")
        return "\n".join(out)

    def __repr__(self) -> str:
        out = []
        for e in self.errata:
            table, en, zh = self._parts(e)
            out.append(f"{self._heading(e)}\n{_as_text(table)}\n{en}\n{zh}")
        return "\n\n".join(out)

    def summary(self) -> Table:
        """One row per entry: key, verdict, kind (both languages) and chapter."""
        return Table(["entry · 条目", "verdict · 结论", "kind · 类型", "chapter · 章节"],
                     [[e.key, e.verdict, f"{KINDS[e.kind][1]} · {KINDS[e.kind][2]}",
                       e.chapter.rpartition("/")[2]] for e in self.errata],
                     "every entry of the errata · 全部勘误条目")


def _markdown(evidence) -> str:
    if isinstance(evidence, Table):
        return evidence._repr_markdown_()
    return "```text\n" + str(evidence).rstrip() + "\n```\n"
