"""Checkers for chapter 4's exercises (``ch04_positional_encoding``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
Typical mistakes (sine and cosine swapped, the exponent ``j/d_model`` or
``i/d_model`` instead of ``2i/d_model``, positions counted from 1, a
calculator in degrees, a rotation the wrong way) are recognised and named.
"""

from __future__ import annotations

import numpy as np

from ...analysis.positional import shift_matrix
from ...scratch.positional import sinusoidal_positional_encoding
from .._check import Case, Verdict, check_by_hand, recognise, run_checker

__all__ = ["PE_POS", "PE_D_MODEL", "check_pe_by_hand", "check_positional_encoding",
           "check_shift_matrix"]

#: The by-hand exercise: the position vector PE(PE_POS) for d_model = PE_D_MODEL.
PE_POS = 4
PE_D_MODEL = 6


def _pe_variant(positions, d_model: int, *, exponent: str = "2i", swap: bool = False,
                degrees: bool = False, halves: bool = False) -> np.ndarray:
    """The sinusoidal table, or one of the typical wrong versions of it.

    Args:
        positions: the positions, one per row.
        exponent: ``"2i"`` (right), ``"j"`` (column index) or ``"i"`` (pair index, no factor 2).
        swap: cosines in the even columns and sines in the odd ones.
        degrees: the angle read as degrees (a calculator in DEG mode).
        halves: all sines in the first half of the columns, all cosines in the second.
    """
    j = np.arange(d_model)
    power = {"2i": j // 2 * 2, "j": j, "i": j // 2}[exponent]
    angle = np.asarray(positions, dtype=float)[:, None] / 10000.0 ** (power / d_model)
    if degrees:
        angle = np.deg2rad(angle)
    if halves:
        half = np.asarray(positions, dtype=float)[:, None] / 10000.0 ** (2 * np.arange(d_model // 2) / d_model)
        return np.concatenate([np.sin(half), np.cos(half)], axis=1)
    even = j % 2 == 0
    if swap:
        even = ~even
    return np.where(even, np.sin(angle), np.cos(angle))


_SWAPPED = ("sine and cosine are swapped: column 2i holds the sine, column 2i + 1 the cosine",
            "正弦和余弦弄反了：第 2i 列是正弦，第 2i + 1 列是余弦")
_COLUMN_EXPONENT = ("the exponent uses the column index j: both columns of a pair share the "
                    "frequency, so use 2i/d_model with i = j // 2 (column 2i + 1 uses 2i too)",
                    "指数用了列号 j：同一对的两列共用一个频率，应使用 2i/d_model，其中 i = j // 2"
                    "（第 2i + 1 列也用 2i）")
_MISSING_TWO = ("the factor 2 is missing from the exponent: the denominator is 10000^(2i/d_model), "
                "not 10000^(i/d_model)",
                "指数里少了因子 2：分母是 10000^(2i/d_model)，不是 10000^(i/d_model)")


def check_pe_by_hand(values) -> Verdict:
    """Check ``PE(PE_POS)`` for ``d_model = PE_D_MODEL``, computed by hand (chapter 4).

    Args:
        values: the ``PE_D_MODEL`` numbers ``PE(PE_POS, j)``, ``j = 0 … d_model − 1``,
            to three decimals; ``...`` (Ellipsis) means "not answered yet".
    """
    pos, d = [PE_POS], PE_D_MODEL
    expected = sinusoidal_positional_encoding(PE_POS + 1, d)[PE_POS]
    mistakes = [
        (_pe_variant(pos, d, degrees=True)[0],
         "these are the values for angles in degrees: set your calculator to radians (RAD)",
         "这是把角度当作角度制算出的值：把计算器设成弧度制（RAD）"),
        (_pe_variant(pos, d, swap=True)[0], *_SWAPPED),
        (_pe_variant(pos, d, exponent="j")[0], *_COLUMN_EXPONENT),
        (_pe_variant(pos, d, exponent="i")[0], *_MISSING_TWO),
    ]
    case = Case(f"PE({PE_POS}), d_model = {d}", f"PE({PE_POS})，d_model = {d}", (), expected,
                "angle = pos / 10000^(2i/d_model); sin in column 2i, cos in column 2i + 1",
                "角度 = pos / 10000^(2i/d_model)；第 2i 列取 sin，第 2i + 1 列取 cos",
                diagnose=recognise(expected, mistakes, atol=0.0015), atol=0.0015, reveal=False)

    return check_by_hand("PE by hand · 手算位置编码", values, case)


def check_positional_encoding(fn) -> Verdict:
    """Check a learner's sinusoidal table ``my_pe(max_len, d_model)`` (chapter 4).

    Args:
        fn: ``fn(max_len, d_model)`` returning ``(max_len, d_model)``: row
            ``pos`` (from 0) holds ``sin(pos ω_i)`` in column ``2i`` and
            ``cos(pos ω_i)`` in column ``2i + 1``, ``ω_i = 10000^(−2i/d_model)``.
    """
    inputs = [
        ("3 positions, d_model = 4", "3 个位置，d_model = 4", 3, 4),
        ("the chapter's table: 10 positions, d_model = 8", "本章的表：10 个位置，d_model = 8", 10, 8),
        ("50 positions, d_model = 64", "50 个位置，d_model = 64", 50, 64),
        ("a single position", "只有一个位置", 1, 6),
    ]
    cases = []
    for en, zh, max_len, d in inputs:
        pos = np.arange(max_len)
        expected = sinusoidal_positional_encoding(max_len, d)
        mistakes = [
            (_pe_variant(pos + 1, d),
             "the positions start at 1: the first row is position 0, so PE(0) = [0, 1, 0, 1, …]",
             "位置从 1 开始了：第一行是位置 0，所以 PE(0) = [0, 1, 0, 1, …]"),
            (_pe_variant(pos, d, swap=True), *_SWAPPED),
            (_pe_variant(pos, d, exponent="j"), *_COLUMN_EXPONENT),
            (_pe_variant(pos, d, exponent="i"), *_MISSING_TWO),
            (_pe_variant(pos, d, halves=True),
             "all the sines are in the first half and all the cosines in the second: the book "
             "interleaves them, sine in column 2i and cosine in column 2i + 1",
             "所有正弦放在前一半、所有余弦放在后一半：本书是交错排列的，第 2i 列放正弦，第 2i + 1 列放余弦"),
        ]
        cases.append(Case(en, zh, (max_len, d), expected,
                          "rows are positions 0 … max_len − 1; angle = pos / 10000^(2i/d_model)",
                          "行是位置 0 … max_len − 1；角度 = pos / 10000^(2i/d_model)",
                          diagnose=recognise(expected, mistakes)))
    return run_checker("sinusoidal positional encoding · 正弦位置编码", fn, cases)


def _rotation(theta) -> np.ndarray:
    """The block-diagonal matrix that turns pair ``i`` by ``theta[i]`` radians."""
    R = np.zeros((2 * len(theta), 2 * len(theta)))
    for i, t in enumerate(theta):
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]
    return R


def check_shift_matrix(fn) -> Verdict:
    """Check a learner's ``shift_matrix(k, d_model)``: ``R_k`` with ``PE(pos + k) = R_k PE(pos)``.

    Args:
        fn: ``fn(k, d_model)`` returning the ``(d_model, d_model)`` block-diagonal
            matrix with one block ``[[cos kω_i, sin kω_i], [−sin kω_i, cos kω_i]]``
            per pair of columns (chapter 4).
    """
    inputs = [
        ("k = 1, d_model = 4", "k = 1，d_model = 4", 1, 4),
        ("k = 3, d_model = 8", "k = 3，d_model = 8", 3, 8),
        ("k = 0 (no shift)", "k = 0（不移动）", 0, 6),
        ("k = −2 (a shift back)", "k = −2（往回移）", -2, 8),
        ("k = 10, d_model = 32", "k = 10，d_model = 32", 10, 32),
    ]
    cases = []
    for en, zh, k, d in inputs:
        expected = shift_matrix(k, d)
        pair = np.arange(d // 2)
        mistakes = [
            (shift_matrix(-k, d),
             "this matrix moves k places back (it is R_{−k} = R_kᵀ): the sine above the diagonal "
             "is +sin(kω_i), the one below is −sin(kω_i)",
             "这个矩阵是往回移 k 位（它是 R_{−k} = R_kᵀ）：对角线上方是 +sin(kω_i)，下方是 −sin(kω_i)"),
            (_rotation(np.full(d // 2, float(k))),
             "every pair is turned by k radians: pair i must turn by k·ω_i, ω_i = 10000^(−2i/d_model)",
             "每一对都转了 k 弧度：第 i 对应转 k·ω_i，其中 ω_i = 10000^(−2i/d_model)"),
            (_rotation(k * 10000.0 ** (-pair / d)), *_MISSING_TWO),
        ]
        cases.append(Case(en, zh, (k, d), expected,
                          "one 2 × 2 rotation block per pair of columns, zeros elsewhere",
                          "每对列一个 2 × 2 旋转块，其余为 0",
                          diagnose=recognise(expected, mistakes)))
    return run_checker("the shift matrix R_k · 平移矩阵 R_k", fn, cases)
