"""Errata of chapter 4 (positional encoding)."""

from __future__ import annotations

import numpy as np

from ...display import fmt
from .worked import EXAMPLES
from .._errata import Erratum

__all__ = ["ERRATA"]


def _length_details():
    return {"shape": "(L, B, d_model) = ({}, {}, {})".format(*EXAMPLES["pe_test"][1]["input_shape"])}


def _pos5_error_details():
    err = EXAMPLES["pe_test"][0]()["pos5_error"]
    return {"ours": fmt(err[6], 8), "ulp": f"{float(np.spacing(np.float32(0.9))):.1e}",
            "worst": fmt(err.max(), 8)}


def _d4_details():
    x = float(EXAMPLES["pe_d4"][0]()["angles"][1, 3])
    return {"x": f"{x:g}", "exact": f"{np.cos(x):.8f}", "approx": f"1 − {x * x / 2:g}"}


CH04 = "book/ch04_positional_encoding"

ERRATA = [
    Erratum(
        "ch04-length", CH04, "pe_test", "length_changed",
        "“did the length change? True” contradicts the shapes it prints",
        "“是否改变了序列长度: True”与它打印的形状矛盾",
        "The log prints the same shape before and after adding the positional encoding, "
        "{shape}: adding two arrays of one shape cannot change the length, so the answer "
        "to the printed question is False. The script probably printed a test for *equal* "
        "shapes under a label that asks the opposite.",
        "日志在加位置编码前后打印的形状相同，都是 {shape}：两个形状相同的数组相加不可能改变长度，"
        "所以这个问题的答案是 False。脚本大概打印的是“形状是否*相同*”，标签却问的是相反的问题。",
        _length_details),
    Erratum(
        "ch04-pos5-error", CH04, "pe_test", "pos5_error",
        "the error column's last digit is float32 noise", "误差列的最后一位是 float32 噪声",
        "These errors are the gaps between the exact value and a float32 one: near 1, "
        "neighbouring float32 numbers are {ulp} apart, and the float32 angle pos·div_term is "
        "rounded too. Rounding every float32 step correctly gives {ours} at dimension 6; the "
        "printed digit comes from a float32 sin/exp that lands one float32 step away. Digits "
        "this small depend on the maths library, not on the formula: what can be checked is "
        "that every error is far below the six printed decimals (the largest is {worst}).",
        "这些误差是精确值与 float32 值之差：在 1 附近，相邻两个 float32 数相差 {ulp}，"
        "而 float32 的角度 pos·div_term 本身也被舍入。每个 float32 步骤都正确舍入时，第 6 维的"
        "误差为 {ours}；原文打印的数字来自一个落在相邻 float32 数上的 sin/exp 实现。这么小的"
        "数字取决于数学库，而不是公式：能核对的只是每个误差都远小于打印的六位小数（最大的是 {worst}）。",
        _pos5_error_details),
    Erratum(
        "ch04-d4-cos", CH04, "pe_d4", "values",
        "cos(0.01) is 1.000 to three decimals, not 0.999",
        "cos(0.01) 保留三位小数是 1.000，不是 0.999",
        "cos({x}) = {exact}. For a small angle x, cos x ≈ 1 − x²/2 = {approx}, far closer to "
        "1 than to 0.999: the source truncated instead of rounding. Rounded correctly, the "
        "entry shows the point of the example: in the slow dimensions the cosine stays "
        "almost exactly 1 for the first positions, and only the fast dimensions tell "
        "neighbouring positions apart.",
        "cos({x}) = {exact}。对很小的角 x，cos x ≈ 1 − x²/2 = {approx}，离 1 比离 0.999 近得多："
        "原文是截断而不是四舍五入。正确取整后，这一项恰好说明了例子的要点：在慢变化的维度上，"
        "前几个位置的余弦几乎正好是 1，只有快变化的维度才能区分相邻位置。",
        _d4_details,
        practice="ch04-ex-hand"),
]
