"""Errata of chapter 2 (worked Q/K/V examples)."""

from __future__ import annotations

import numpy as np

from ...display import fmt
from .worked import EXAMPLES
from .._errata import Erratum

__all__ = ["ERRATA"]


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
        _terms_details,
        practice="ch02-ex-hand"),
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
        _context_details,
        practice="ch02-ex-hand"),
    Erratum(
        "ch02-q1", CH02, "two_head", "Q1",
        "Q₁ = XW₁ multiplied wrongly", "Q₁ = XW₁ 乘错",
        "The second column of rows 2 and 3 is wrong. Row 2, column 2 is {expansion}. "
        "Every later step of the source's head 1 inherits this slip.",
        "第 2、3 行的第二列算错了。第 2 行第 2 列为 {expansion}。"
        "原文头 1 之后的每一步都继承了这个错误。",
        _q1_details,
        practice="ch02-ex-attention"),
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
        _softmax_details,
        practice="ch02-ex-softmax"),
]
