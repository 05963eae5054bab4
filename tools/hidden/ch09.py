"""Hidden cases for chapter 9's exercises: the grader runs them, the student notebook never shows them.

`make assignments` packs this file into the chapter's autograder (``files/course_hidden_ch09.py``);
each entry of ``HIDDEN`` takes the student's answer and returns a ``Verdict`` on inputs the
chapter's own checkers do not use: other shapes, betas and step counts. The by-hand answers
(``ch09-ex-flops``, ``ch09-ex-sliding``) have nothing more to try.
"""

import numpy as np

from course_lib.chapters._check import Case, run_checker
from course_lib.chapters.ch09.exercises import reference_ema, reference_newton_schulz


def _ema(fn):
    rng = np.random.default_rng(13)
    cases = []
    for name_en, name_zh, weights, beta in (
            ("one weight, beta = 0", "一个权重，beta = 0", np.array([[3.0], [1.0], [2.0]]), 0.0),
            ("two rows, beta = 0.5", "两行，beta = 0.5", np.array([[0.0, 4.0], [2.0, 0.0]]), 0.5),
            ("a long run of 10 weights, beta = 0.99", "10 个权重的长训练，beta = 0.99", rng.normal(size=(500, 10)), 0.99)):
        cases.append(Case(name_en, name_zh, (weights, beta), reference_ema(weights, beta), atol=1e-9))
    return run_checker("exponential moving average (hidden cases)", fn, cases)


def _newton_schulz(fn):
    rng = np.random.default_rng(14)
    cases = []
    for name_en, name_zh, D, steps in (
            ("a 1 × 4 row, five steps", "1 × 4 的行，五步", rng.normal(size=(1, 4)), 5),
            ("a tall 9 × 3, zero steps", "9 × 3 的高矩阵，零步", rng.normal(size=(9, 3)), 0),
            ("a wide 5 × 8 of very different scales, five steps", "5 × 8 的宽矩阵，尺度相差悬殊，五步",
             rng.normal(size=(5, 8)) * np.array([1e-3, 1, 1e3, 1, 1e-2, 1, 1, 1]), 5)):
        cases.append(Case(name_en, name_zh, (D, steps), reference_newton_schulz(D, steps), atol=1e-9))
    return run_checker("Newton–Schulz steps (hidden cases)", fn, cases)


HIDDEN = {
    "ch09-ex-ema": _ema,
    "ch09-ex-newton-schulz": _newton_schulz,
}
