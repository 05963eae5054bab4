"""Checkers for chapter 2's exercises (``ch02_worked_qkv``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
"""

from __future__ import annotations

import numpy as np

from . import source
from ...scratch.attention import masked_softmax, scaled_dot_product_attention, softmax
from .._check import Case, Verdict, check_by_hand, run_checker

__all__ = ["HAND_Q", "HAND_K", "check_hand_weights", "check_softmax", "check_masked_softmax",
           "check_attention"]

#: The by-hand exercise: one query and three keys, d_k = 2.
HAND_Q = np.array([1.0, 1.0])
HAND_K = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def check_hand_weights(weights) -> Verdict:
    """Check attention weights computed by hand for ``HAND_Q`` over ``HAND_K``.

    Args:
        weights: three numbers, the softmax of ``q·k_i / sqrt(2)``, to two
            decimals; ``...`` (Ellipsis) means "not answered yet".
    """
    expected = softmax(HAND_K @ HAND_Q / np.sqrt(2.0))

    def unscaled(got):
        if np.allclose(np.asarray(got, dtype=float), softmax(HAND_K @ HAND_Q), atol=0.005):
            return ("these are the weights without dividing by √d_k = √2",
                    "这是没有除以 √d_k = √2 时的权重")
        return None
    case = Case("weights of q over k₁, k₂, k₃", "q 对 k₁、k₂、k₃ 的权重", (),
                expected, "score = q·k / √2, then softmax", "分数 = q·k / √2，再做 softmax",
                diagnose=unscaled, atol=0.005, reveal=False)
    return check_by_hand("weights by hand · 手算权重", weights, case)


def _softmax_cases():
    rng = np.random.default_rng(2)
    x3 = rng.normal(size=(2, 3, 4))
    return [
        Case("a vector", "一个向量", (np.array([1.0, 2.0, 3.0]),), softmax(np.array([1.0, 2.0, 3.0]))),
        Case("rows of a matrix", "矩阵的每一行", (np.array([[1.0, 2.0], [3.0, 3.0]]),),
             softmax(np.array([[1.0, 2.0], [3.0, 3.0]])),
             "normalise along the last axis (axis=-1), one row at a time",
             "沿最后一个轴（axis=-1）逐行归一化"),
        Case("a 3-D batch", "三维批量", (x3,), softmax(x3),
             "keep the input's shape; use keepdims=True", "保持输入形状；使用 keepdims=True"),
        Case("large logits", "很大的 logits", (np.array([1000.0, 999.0, 0.0]),),
             softmax(np.array([1000.0, 999.0, 0.0])),
             "exp(1000) overflows: subtract the row maximum first",
             "exp(1000) 会溢出：先减去每行的最大值"),
    ]


def check_softmax(fn) -> Verdict:
    """Check a learner's ``softmax(x)`` over the last axis (chapter 2).

    Args:
        fn: ``fn(x) -> array`` of the same shape as ``x`` (any number of
            dimensions), each slice along the last axis summing to one.
    """
    return run_checker("softmax", fn, _softmax_cases())


def check_masked_softmax(fn) -> Verdict:
    """Check ``masked_softmax(x, mask)``: True = may attend; a fully masked row is all zeros.

    Args:
        fn: ``fn(x, mask) -> array`` with ``x`` ``(L_q, L_k)`` and a boolean
            ``mask`` of the same shape.
    """
    x = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0], [2.0, 1.0, 0.0]])
    some = np.array([[True, True, False], [True, False, True], [True, True, True]])
    none = some.copy()
    none[1] = False
    causal = np.tril(np.ones((3, 3), dtype=bool))
    cases = [
        Case("no mask (all True)", "无掩码（全为 True）", (x, np.ones((3, 3), dtype=bool)),
             softmax(x)),
        Case("some keys masked", "部分键被遮挡", (x, some), masked_softmax(x, some),
             "masked entries get weight 0; the others are renormalised",
             "被遮挡的位置权重为 0；其余位置重新归一化"),
        Case("causal mask", "因果掩码", (x, causal), masked_softmax(x, causal),
             "True means 'may attend'", "True 表示'可以关注'"),
        Case("a fully masked row", "整行被遮挡", (x, none), masked_softmax(x, none),
             "a row with nothing to attend to must be all zeros, not NaN",
             "无处可关注的行应全为 0，而不是 NaN"),
    ]
    return run_checker("masked softmax · 带掩码的 softmax", fn, cases)


def check_attention(fn) -> Verdict:
    """Check ``attention(Q, K, V) -> (output, weights)``, the formula of chapter 2.

    Args:
        fn: ``fn(Q, K, V)`` with ``Q (L_q, d_k)``, ``K (L_k, d_k)``,
            ``V (L_k, d_v)``, returning ``(output (L_q, d_v), weights (L_q, L_k))``.
    """
    rng = np.random.default_rng(5)
    q, H = source.SINGLE_QUERY["q"][None, :], source.SINGLE_QUERY["H"]
    Q, K, V = rng.normal(size=(2, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))

    def forgot_scaling(Q_, K_, V_):
        def check(got):
            w = softmax(Q_ @ K_.T)
            if np.allclose(np.asarray(got[1], dtype=float), w, atol=1e-6):
                return ("the weights are not scaled: divide the scores by √d_k",
                        "权重没有缩放：分数要除以 √d_k")
            return None
        return check

    cases = [
        Case("chapter 2's single query", "第 2 章的单个查询", (q, H, H),
             scaled_dot_product_attention(q, H, H), diagnose=forgot_scaling(q, H, H)),
        Case("L_q ≠ L_k and d_v ≠ d_k", "L_q ≠ L_k 且 d_v ≠ d_k", (Q, K, V),
             scaled_dot_product_attention(Q, K, V),
             "scores are Q Kᵀ (L_q × L_k); the output is weights · V",
             "分数是 Q Kᵀ（L_q × L_k）；输出是 权重 · V", diagnose=forgot_scaling(Q, K, V)),
    ]
    return run_checker("scaled dot-product attention · 缩放点积注意力", fn, cases)
