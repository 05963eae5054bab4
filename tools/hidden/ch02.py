"""Hidden cases for chapter 2's exercises: the grader runs them, the student notebook never shows them.

`make assignments` packs this file into the chapter's autograder (``files/course_hidden_ch02.py``);
each entry of ``HIDDEN`` takes the student's answer and returns a ``Verdict``, like the chapter's
own checkers, on inputs those checkers do not use: other shapes, other sizes, rows of very
different magnitudes, more masks. Where the answer is a number computed by hand (``ch02-ex-hand``)
there is nothing more to try, so there is no entry.
"""

import numpy as np

from course_lib.chapters._check import Case, run_checker
from course_lib.scratch.attention import masked_softmax, scaled_dot_product_attention, softmax


def _softmax(fn):
    rng = np.random.default_rng(1202)
    x4 = rng.normal(size=(2, 2, 3, 5))
    apart = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]])   # each row its own max
    return run_checker("softmax (hidden cases)", fn, [
        Case("one element", "一个元素", (np.array([3.0]),), np.array([1.0])),
        Case("a 4-D batch", "四维批量", (x4,), softmax(x4)),
        Case("rows far apart", "数值相差悬殊的行", (apart,), softmax(apart)),
        Case("equal logits", "相等的 logits", (np.full((2, 4), 7.0),), np.full((2, 4), 0.25)),
    ])


def _masked(fn):
    rng = np.random.default_rng(1203)
    x = rng.normal(size=(4, 6)) * 3
    mask = rng.random((4, 6)) < 0.6
    mask[2] = False
    mask[0, 0] = True
    big = np.array([[1000.0, 0.0, 999.0], [5.0, -1000.0, 4.0]])
    big_mask = np.array([[False, True, True], [True, False, True]])
    return run_checker("masked softmax (hidden cases)", fn, [
        Case("a random 4×6 mask", "随机的 4×6 掩码", (x, mask), masked_softmax(x, mask)),
        Case("large scores, masked", "很大的分数被遮挡", (big, big_mask), masked_softmax(big, big_mask)),
        Case("everything masked", "全部被遮挡", (x, np.zeros((4, 6), dtype=bool)), np.zeros((4, 6))),
        Case("one row, one key", "一行一个键", (np.array([[2.0]]), np.array([[True]])), np.array([[1.0]])),
    ])


def _attention(fn):
    rng = np.random.default_rng(1204)
    Q, K, V = rng.normal(size=(3, 8)), rng.normal(size=(7, 8)), rng.normal(size=(7, 2))
    q1, k1, v1 = rng.normal(size=(1, 5)), rng.normal(size=(1, 5)), rng.normal(size=(1, 4))
    K_same = np.tile(rng.normal(size=(1, 3)), (4, 1))
    Q_same, V_same = rng.normal(size=(2, 3)), rng.normal(size=(4, 3))
    return run_checker("scaled dot-product attention (hidden cases)", fn, [
        Case("d_k = 8, L_k = 7", "d_k = 8，L_k = 7", (Q, K, V), scaled_dot_product_attention(Q, K, V)),
        Case("one query, one key", "一个查询、一个键", (q1, k1, v1), scaled_dot_product_attention(q1, k1, v1)),
        Case("identical keys", "相同的键", (Q_same, K_same, V_same),
             scaled_dot_product_attention(Q_same, K_same, V_same)),
    ])


HIDDEN = {
    "ch02-ex-softmax": _softmax,
    "ch02-ex-masked": _masked,
    "ch02-ex-attention": _attention,
}
