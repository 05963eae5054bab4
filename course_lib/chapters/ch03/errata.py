"""Errata of chapter 3 (multi-head attention): found by running the source documents' listings."""

from __future__ import annotations

from .. import listings_evidence as _lx
from .._errata import Erratum

__all__ = ["ERRATA"]

LISTINGS = "book/appendix/listings"

ERRATA = [
    Erratum(
        "ch03-haskell-one-head", LISTINGS, None, None,
        "the Haskell multi-head attention keeps only its first head",
        "Haskell 版多头注意力只用了第一个头",
        "multiHeadForward takes head headOutputs, the first head's ({rows} × {d_k}) output, and "
        "multiplies it by the ({d_model} × {d_model}) W_O. The hand-written multiply sums over "
        "ncols a = {d_k} and never checks the shapes, so it silently uses only the first {d_k} "
        "rows of W_O and the other {others} heads are never computed (Haskell is lazy). The "
        "comment calls it a simplification, but the result is not multi-head attention: with the "
        "listing's constant inputs the three rows above differ. The heads must be concatenated "
        "side by side (a {rows} × {d_model} matrix) before W_O. Moreover replicate makes every "
        "head the same value, with one constant for every weight, so even concatenated heads would all compute "
        "the same thing; heads need different projections.",
        "multiHeadForward 取 head headOutputs，即第一个头的 ({rows} × {d_k}) 输出，再乘以 "
        "({d_model} × {d_model}) 的 W_O。手写的 multiply 按 ncols a = {d_k} 求和且不检查形状，于是悄悄地只用了 "
        "W_O 的前 {d_k} 行，另外 {others} 个头根本没有计算（Haskell 是惰性求值的）。注释称之为简化，但结果已"
        "不是多头注意力：在原文的常数输入上，上表三行各不相同。应先把各头并排拼接（{rows} × {d_model} 的矩阵）"
        "再乘 W_O。此外 replicate 让每个头都是同一个值、所有权重都是同一个常数，即使拼接，各头也算出同样的东西；"
        "多个头需要不同的投影。",
        _lx.haskell_heads_details, evidence=_lx.haskell_heads, kind="code",
        practice="ch03-ex-merge"),
]
