"""Errata of chapter 4 (positional encoding)."""

from __future__ import annotations

import numpy as np

from ...display import Table, fmt
from .worked import BASE, EXAMPLES
from .._errata import Erratum

__all__ = ["ERRATA"]


def _length_details():
    return {"shape": "(L, B, d_model) = ({}, {}, {})".format(*EXAMPLES["pe_test"][1]["input_shape"])}


def _pos5_columns():
    steps_fn, data = EXAMPLES["pe_test"]
    steps = steps_fn()
    ideal_err = np.abs(steps["pos5_manual"] - steps["pos5_ideal"])
    return steps, data["claims"]["pos5_error"].printed, ideal_err


def _pos5_error_evidence() -> Table:
    steps, printed, ideal_err = _pos5_columns()
    rows = []
    for j, (p, e, i) in enumerate(zip(printed, steps["pos5_error"], ideal_err)):
        torch_err = fmt(e, 8)
        rows.append([str(j), p, f"{torch_err} {'✓' if torch_err == p else '✗'}", fmt(i, 8)])
    return Table(["dim · 维度", "source 误差 · 原文", "PyTorch float32 recipe · PyTorch 写法",
                  "every step correctly rounded · 每步正确舍入"], rows,
                 "position 5, |exact − float32| · 位置 5")


def _pos5_error_details():
    steps, printed, ideal_err = _pos5_columns()
    differs = [j for j in range(len(printed)) if fmt(ideal_err[j], 8) != printed[j]]
    j = differs[0]
    torch32, ideal32 = np.float32(steps["pos5_model"][j]), np.float32(steps["pos5_ideal"][j])
    steps_apart = abs(int(torch32.view(np.int32)) - int(ideal32.view(np.int32)))
    return {"base": f"{BASE:g}", "dims": ", ".join(str(d) for d in differs), "torch": fmt(steps["pos5_error"][j], 8),
            "ideal": fmt(ideal_err[j], 8),
            "apart": "one float32 step" if steps_apart == 1 else f"{steps_apart} float32 steps",
            "apart_zh": "一个 float32 间隔" if steps_apart == 1 else f"{steps_apart} 个 float32 间隔",
            "ulp": f"{float(np.spacing(np.float32(abs(torch32)))):.1e}",
            "worst": fmt(steps["pos5_error"].max(), 8)}


def _d4_details():
    x = float(EXAMPLES["pe_d4"][0]()["angles"][1, 3])
    claim = EXAMPLES["pe_d4"][1]["claims"]["values"]
    dec = claim.decimals()[7]
    return {"x": f"{x:g}", "exact": f"{np.cos(x):.8f}", "approx": f"1 − {x * x / 2:g}",
            "printed": claim.printed[7], "rounded": fmt(np.cos(x), dec), "dec": str(dec)}


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
        _length_details, kind="claim"),
    Erratum(
        "ch04-pos5-error", CH04, None, None,
        "the error column is what PyTorch prints in float32, last digit included",
        "误差列正是 PyTorch 在 float32 下打印的结果，连最后一位也对",
        "Run the source's recipe in PyTorch (torch.arange, div_term = exp(arange(0, d_model, 2) · "
        "(−log {base} / d_model)), sin and cos, all in float32) and every entry of the error column "
        "comes out as printed. These errors are float32 rounding: near 1, neighbouring float32 "
        "numbers are {ulp} apart, and the largest error is {worst}, far below the six printed "
        "decimals. An earlier version of this book marked dimension {dims} wrong: it compared with "
        "a float32 routine that rounds every step correctly, which gives {ideal} there, whereas "
        "PyTorch's float32 sin lands {apart} away and gives the printed {torch}. "
        "Digits this small belong to the maths library, not to the formula; PyTorch's default and "
        "AVX2 CPU kernels give the same bits.",
        "用 PyTorch 按原文的写法计算（torch.arange，div_term = exp(arange(0, d_model, 2) · "
        "(−log {base} / d_model))，再取 sin 和 cos，全部为 float32），误差列的每一项都与原文一致。这些误差"
        "来自 float32 舍入：在 1 附近，相邻两个 float32 数相差 {ulp}，最大的误差是 {worst}，远小于打印的"
        "六位小数。本书早先的版本把第 {dims} 维标为错误：它对照的是一个每一步都正确舍入的 float32 实现，"
        "在那里得到 {ideal}；而 PyTorch 的 float32 sin 落在相距{apart_zh}的数上，"
        "得到的正是原文的 {torch}。这么小的数字取决于数学库，而不是公式；PyTorch 的 default 与 AVX2 "
        "两种 CPU 内核给出的比特完全相同。",
        _pos5_error_details, evidence=_pos5_error_evidence, kind="note"),
    Erratum(
        "ch04-d4-cos", CH04, "pe_d4", "values",
        "cos({x}) is {rounded} to {dec} decimals, not {printed}",
        "cos({x}) 保留 {dec} 位小数是 {rounded}，不是 {printed}",
        "cos({x}) = {exact}. For a small angle x, cos x ≈ 1 − x²/2 = {approx}, far closer to "
        "1 than to {printed}: the source truncated instead of rounding. Rounded correctly, the "
        "entry shows the point of the example: in the slow dimensions the cosine stays "
        "almost exactly 1 for the first positions, and only the fast dimensions tell "
        "neighbouring positions apart.",
        "cos({x}) = {exact}。对很小的角 x，cos x ≈ 1 − x²/2 = {approx}，离 1 比离 {printed} 近得多："
        "原文是截断而不是四舍五入。正确取整后，这一项恰好说明了例子的要点：在慢变化的维度上，"
        "前几个位置的余弦几乎正好是 1，只有快变化的维度才能区分相邻位置。",
        _d4_details,
        practice="ch04-ex-hand"),
]
