"""Where a source document's arithmetic is wrong: found by code, explained in words.

``compare`` recomputes a worked example and sets every number the source
printed beside the computed one, rounded the way the source rounds.
``ERRATA`` explains each mismatch in both languages; ``show`` renders one
erratum as a box (in the chapter), ``show_all`` renders them all (on the
errata appendix). The test suite checks that every mismatch has an erratum
and every erratum still points at a real mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .display import Table, fmt
from .worked import EXAMPLES

__all__ = ["Erratum", "ERRATA", "compare", "mismatches", "show", "show_all"]


def compare(example: str, step: str, caption: str = "") -> Table:
    """Source value beside computed value for one step of a worked example.

    Args:
        example: a key of ``course_lib.worked.EXAMPLES`` (e.g. ``"single_query"``).
        step: a claim of that example (e.g. ``"weights"``).

    Returns:
        ``Table`` with one row per printed number: position, source value,
        computed value rounded to the same decimals, and ✓ or ✗.
    """
    rows = []
    for pos, printed, computed in _pairs(example, step):
        rows.append([pos, printed, computed, "✓" if printed == computed else "✗"])
    return Table(["entry · 位置", "source · 原文", "computed · 计算", "match · 一致"],
                 rows, caption)


def mismatches(example: str, step: str) -> list[tuple[str, str, str]]:
    """The ``(position, source, computed)`` triples that disagree."""
    return [(p, s, c) for p, s, c in _pairs(example, step) if s != c]


def _pairs(example, step):
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
        yield pos, printed, fmt(v, dec)


@dataclass(frozen=True)
class Erratum:
    """One wrong step in a source document, with the reason in both languages.

    Attributes:
        key: a short id, e.g. ``"ch02-context"``.
        chapter: the chapter that discusses it (document path, no suffix).
        example, step: what ``compare`` checks.
        title_en, title_zh: one-line title.
        why_en, why_zh: the explanation; ``{name}`` fields are filled from
            ``details()``, so any number in the text is computed, not typed.
    """

    key: str
    chapter: str
    example: str
    step: str
    title_en: str
    title_zh: str
    why_en: str
    why_zh: str
    details: Callable[[], dict] = field(default=lambda: {})


def _context_details():
    c = EXAMPLES["single_query"][0]()["context"]
    return {"c": ", ".join(fmt(v, 4) for v in c)}


def _terms_details():
    steps_fn, data = EXAMPLES["single_query"]
    alpha, h = steps_fn()["weights"][2], data["H"][2, 2]
    printed = data["claims"]["weights"].printed[2]
    return {"rounded": f"{printed} × {h:g} = {fmt(float(printed) * h, 4)}",
            "exact": f"{fmt(alpha, 5)} × {h:g} = {fmt(alpha * h, 4)}"}


def _softmax_details():
    steps = EXAMPLES["two_head"][0]()
    gap = (float(steps["QKt1"][0, 2]) - float(steps["QKt1"][0, 1])) / np.sqrt(2)
    return {"gap": fmt(gap, 1), "tiny": f"{np.exp(-gap):.0e}"}


def _q1_details():
    X, W = EXAMPLES["two_head"][1]["X"], EXAMPLES["two_head"][1]["W1"]
    terms = " + ".join(f"{X[1, k]:g}·{W[k, 1]:g}" for k in range(X.shape[1]))
    return {"expansion": f"{terms} = {fmt(X[1] @ W[:, 1], 1)}"}


def _scores_details():
    claims = EXAMPLES["two_head"][1]["claims"]
    a, b = (float(v) for v in claims["Q1"].printed[2:4])
    printed = claims["QKt1"].printed[4]
    return {"own": f"{a:g}² + {b:g}² = {fmt(a * a + b * b, 2)} ≠ {printed}"}


CH02 = "book/ch02_worked_qkv"

ERRATA = [
    Erratum(
        "ch02-terms", CH02, "single_query", "terms",
        "weighted term computed from a rounded weight", "加权项用了取整后的权重",
        "The source multiplies the *rounded* weight by the state: {rounded}. With the "
        "unrounded weight the product is {exact}, which rounds differently.",
        "原文用**取整后**的权重乘以状态：{rounded}。用未取整的权重，乘积为 {exact}，"
        "取整结果不同。",
        _terms_details),
    Erratum(
        "ch02-context", CH02, "single_query", "context",
        "context vector rounded too early", "上下文向量过早取整",
        "The source adds the *rounded* terms (e.g. 0.037 + 0.190 + 0.667) instead of the "
        "unrounded ones, so rounding errors pile up in the last digit. Unrounded, "
        "c = ({c}). Because each column of H is the previous one plus 0.1 and the weights "
        "sum to 1, every component is the previous one plus exactly 0.1.",
        "原文把**已取整**的各项相加（例如 0.037 + 0.190 + 0.667），而不是用未取整的值，"
        "舍入误差在最后一位累积。不取整时 c = ({c})。由于 H 的每一列都比前一列大 0.1，"
        "且权重之和为 1，c 的每个分量恰好比前一个大 0.1。",
        _context_details),
    Erratum(
        "ch02-q1", CH02, "two_head", "Q1",
        "Q₁ = XW₁ multiplied wrongly", "Q₁ = XW₁ 乘错",
        "The second column of rows 2 and 3 is wrong. Row 2, column 2 is {expansion}. "
        "Every later step of the source's head 1 inherits this slip.",
        "第 2、3 行的第二列算错了。第 2 行第 2 列为 {expansion}。"
        "原文头 1 之后的每一步都继承了这个错误。",
        _q1_details),
    Erratum(
        "ch02-scores", CH02, "two_head", "QKt1",
        "scores Q₁K₁ᵀ wrong", "分数 Q₁K₁ᵀ 错误",
        "These products use the wrong Q₁ above, and some are not even the products of the "
        "source's own Q₁ (for instance {own}).",
        "这些乘积用的是上面错误的 Q₁，而且有些连原文自己的 Q₁ 都对不上（例如 {own}）。",
        _scores_details),
    Erratum(
        "ch02-softmax", CH02, "two_head", "A1",
        "softmax of huge scores is one-hot, not spread out",
        "巨大分数的 softmax 是独热的，而不是分散的",
        "Neighbouring scaled scores in each row differ by tens (row 1: {gap} between the "
        "last two). softmax turns a gap of g into a weight ratio of e^g, so the smaller "
        "weights are about {tiny}: the rows are one-hot to three decimals. The source's "
        "matrix is not the softmax of any of these rows. Chapter 3 shows why this "
        "saturation is exactly what dividing by √d_k is meant to prevent — and why it "
        "is not enough when inputs are this large.",
        "每行相邻的缩放分数相差几十（第 1 行最后两个相差 {gap}）。softmax 把差值 g 变成 e^g "
        "的权重比，所以较小的权重约为 {tiny}：保留三位小数时每行都是独热的。原文的矩阵"
        "不是其中任何一行的 softmax。第 3 章说明：除以 √d_k 正是为了避免这种饱和——"
        "而当输入这么大时，仅靠它还不够。",
        _softmax_details),
]


def _find(key: str) -> Erratum:
    for e in ERRATA:
        if e.key == key:
            return e
    raise ValueError(f"key must be one of {[e.key for e in ERRATA]}, got {key!r}")


class _Box:
    def __init__(self, errata: list[Erratum], link_chapter: bool):
        self.errata = errata
        self.link_chapter = link_chapter

    def _parts(self, e: Erratum):
        d = e.details()
        table = compare(e.example, e.step)
        table.rows = [r for r in table.rows if r[3] == "✗"]
        return table, e.why_en.format(**d), e.why_zh.format(**d)

    def _repr_markdown_(self) -> str:
        out = []
        for e in self.errata:
            table, en, zh = self._parts(e)
            link = (f"Chapter · 章节: {{doc}}`/{e.chapter}`" if self.link_chapter
                    else "All errata · 全部勘误: {doc}`/book/appendix/errata`")
            out.append(
                f"::::{{admonition}} Erratum · 勘误 ({e.key}): {e.title_en} · {e.title_zh}\n"
                f":class: warning\n\n{table._repr_markdown_()}\n"
                f":::{{container}} lang-en\n{en}\n:::\n\n"
                f":::{{container}} lang-zh\n{zh}\n:::\n\n{link}\n::::\n")
        return "\n".join(out)

    def __repr__(self) -> str:
        out = []
        for e in self.errata:
            table, en, zh = self._parts(e)
            out.append(f"Erratum · 勘误 ({e.key}): {e.title_en} · {e.title_zh}\n"
                       f"{table!r}\n{en}\n{zh}")
        return "\n\n".join(out)


def show(key: str) -> _Box:
    """The erratum ``key`` as a box: wrong entries, correct values, and why."""
    return _Box([_find(key)], link_chapter=False)


def show_all(chapter: str | None = None) -> _Box:
    """Every erratum (or those of one chapter), each linking to its chapter."""
    chosen = [e for e in ERRATA if chapter is None or e.chapter == chapter]
    if not chosen:
        raise ValueError(f"chapter must be one of {sorted({e.chapter for e in ERRATA})}, "
                         f"got {chapter!r}")
    return _Box(chosen, link_chapter=True)
