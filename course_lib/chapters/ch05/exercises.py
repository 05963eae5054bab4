"""Checkers for chapter 5's exercises (``ch05_transformer``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
"""

from __future__ import annotations

import numpy as np

from ...analysis.complexity import attention_matrix_bytes
from ...scratch.masks import causal_mask
from ...labs.translation import noam_lr
from .._check import Case, Verdict, check_by_hand, run_checker

__all__ = ["MEMORY_QUESTION", "check_causal_mask", "check_padding_mask", "check_noam_lr",
           "check_attention_memory"]

#: The by-hand exercise: one layer's attention weights, float32.
MEMORY_QUESTION = {"n": 4096, "num_heads": 16, "batch": 1, "bytes_per_number": 4}


def _as_float(got):
    return np.asarray(got, dtype=float)


def _mask_diagnosis(L):
    lower = np.tril(np.ones((L, L)))

    def check(got):
        g = _as_float(got)
        if g.shape != (L, L):
            return None
        if np.array_equal(g, 1 - lower):
            return ("True must mean 'may attend': your mask is inverted",
                    "True 应表示“可以关注”：你的掩码正好反了")
        if L > 1 and np.array_equal(g, lower.T):
            return ("the mask is transposed: row i must see columns 0..i (the past), not i..L-1",
                    "掩码被转置了：第 i 行应看到第 0..i 列（过去），而不是 i..L-1 列")
        if np.array_equal(g, np.tril(np.ones((L, L)), k=-1)):
            return ("off by one: the diagonal must be True, a position may attend to itself",
                    "差了一位：对角线应为 True，位置可以关注它自己")
        return None
    return check


def check_causal_mask(fn) -> Verdict:
    """Check ``causal_mask(L)``: boolean ``(L, L)``, ``[i, j]`` True when ``j <= i``.

    Args:
        fn: ``fn(L) -> (L, L)`` boolean array; True = may attend.
    """
    cases = [Case(f"L = {L}", f"L = {L}", (L,), causal_mask(L).astype(float),
                  "row i may attend to columns 0..i: np.tril", "第 i 行可关注第 0..i 列：np.tril",
                  diagnose=_mask_diagnosis(L)) for L in (1, 3, 5)]
    return run_checker("causal mask · 因果掩码", fn, cases)


def check_padding_mask(fn) -> Verdict:
    """Check ``padding_mask(ids, pad_id)``: boolean ``(B, L)``, True on real tokens.

    Args:
        fn: ``fn(ids, pad_id)`` with ``ids`` an integer ``(B, L)`` array.
    """
    def diagnose(ids, pad_id):
        def check(got):
            g = _as_float(got)
            if g.shape == ids.shape and np.array_equal(g, (ids == pad_id).astype(float)):
                return ("inverted: True must mark the real tokens, False the padding",
                        "反了：True 应标出真实词元，False 标出填充")
            if g.shape == (ids.shape[0], 1, 1, ids.shape[1]):
                return ("return (B, L); the model adds the head and query axes itself",
                        "请返回 (B, L)；模型会自己加上头和查询两个轴")
            return None
        return check

    a = np.array([[3, 4, 0], [2, 3, 4], [5, 0, 0]])
    b = np.array([[7, 9, 9, 9], [9, 1, 2, 9]])
    cases = [
        Case("pad_id = 0", "pad_id = 0", (a, 0), (a != 0).astype(float),
             "compare every id with pad_id", "把每个 id 与 pad_id 比较", diagnose=diagnose(a, 0)),
        Case("pad_id = 9, padding anywhere", "pad_id = 9，填充可在任意位置", (b, 9),
             (b != 9).astype(float), "use the pad_id argument, not 0", "使用参数 pad_id，不要写死 0",
             diagnose=diagnose(b, 9)),
    ]
    return run_checker("padding mask · 填充掩码", fn, cases)


_LR_CASES = [(1, 512, 4000), (4000, 512, 4000), (16000, 512, 4000), (100, 32, 50), (50, 32, 50)]


def check_noam_lr(fn) -> Verdict:
    """Check ``lr(step, d_model, warmup)``, the 2017 paper's schedule (steps from 1).

    Args:
        fn: ``fn(step, d_model, warmup) -> float``.
    """
    steps, d, w = (np.array(c) for c in zip(*_LR_CASES))
    expected = np.array([noam_lr(*c) for c in _LR_CASES])

    def all_cases(*_):
        return np.array([float(fn(*c)) for c in _LR_CASES])

    def diagnose(got):
        g = _as_float(got)
        if g.shape != expected.shape:
            return None
        if np.allclose(g, expected * np.sqrt(d), rtol=1e-6):
            return ("missing the factor d_model^-0.5", "缺少因子 d_model^-0.5")
        if np.allclose(g, d ** -0.5 * np.maximum(steps ** -0.5, steps * w ** -1.5), rtol=1e-6):
            return ("use min(…), not max(…): the smaller of the two curves is the schedule",
                    "应取 min(…) 而不是 max(…)：两条曲线中较小的那条才是学习率")
        return None

    case = Case("steps 1, 4000, 16000 (d_model 512); 50, 100 (d_model 32)",
                "步数 1、4000、16000（d_model 512）；50、100（d_model 32）", (), expected,
                "d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)",
                "d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)", diagnose=diagnose, atol=1e-9)
    return run_checker("warm-up schedule · 预热学习率", all_cases, [case])


def check_attention_memory(mib) -> Verdict:
    """Check the by-hand size, in MiB, of one layer's attention weights for ``MEMORY_QUESTION``.

    Args:
        mib: a number (MiB = 2^20 bytes); ``...`` means "not answered yet".
    """
    q = MEMORY_QUESTION
    expected = attention_matrix_bytes(**q) / 2 ** 20

    def diagnose(got):
        g = float(np.asarray(got, dtype=float))
        if np.isclose(g, expected * 2 ** 20):
            return ("that is in bytes; divide by 2^20 for MiB", "这是字节数；除以 2^20 得到 MiB")
        if np.isclose(g, expected / q["num_heads"]):
            return ("every head has its own n × n matrix", "每个头都有自己的 n × n 矩阵")
        if np.isclose(g, expected * 2):
            return ("float32 takes 4 bytes, not 8", "float32 占 4 个字节，不是 8 个")
        return None

    case = Case("attention weights of one layer", "一层的注意力权重", (), np.array(expected),
                "batch × heads × n × n numbers, 4 bytes each", "batch × 头数 × n × n 个数，每个 4 字节",
                diagnose=diagnose, atol=0.5, reveal=False)
    return check_by_hand("attention memory by hand · 手算注意力内存", mib, case)
