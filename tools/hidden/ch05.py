"""Hidden cases for chapter 5's exercises: the grader runs them, the student notebook never shows them.

`make assignments` packs this file into the chapter's autograder (``files/course_hidden_ch05.py``);
each entry of ``HIDDEN`` takes the student's answer and returns a ``Verdict`` on inputs the
chapter's own checkers do not use: other lengths, other padding ids and shapes, other model
sizes and warm-ups. The by-hand memory question (``ch05-ex-memory``) has nothing more to try.
"""

import numpy as np

from course_lib.chapters._check import Case, run_checker
from course_lib.labs.translation import noam_lr
from course_lib.scratch.masks import causal_mask


def _causal(fn):
    return run_checker("causal mask (hidden cases)", fn, [
        Case(f"L = {L}", f"L = {L}", (L,), causal_mask(L).astype(float)) for L in (2, 8, 13)])


def _padding(fn):
    one = np.array([[4, 4, 1, 4]])
    ends = np.array([[0, 0, 0], [1, 2, 3], [0, 5, 0], [6, 0, 7]])
    return run_checker("padding mask (hidden cases)", fn, [
        Case("one sentence, pad_id = 4", "一个句子，pad_id = 4", (one, 4), (one != 4).astype(float)),
        Case("a row of padding only", "一整行都是填充", (ends, 0), (ends != 0).astype(float)),
        Case("no padding at all", "完全没有填充", (ends + 10, 0), np.ones((4, 3))),
        Case("pad_id = -1", "pad_id = -1", (ends - 1, -1), (ends - 1 != -1).astype(float)),
    ])


_LR = [(1, 64, 10), (10, 64, 10), (11, 64, 10), (250, 1024, 400), (400, 1024, 400), (10**6, 512, 4000)]


def _lr(fn):
    expected = np.array([noam_lr(*c) for c in _LR])

    def all_cases(*_):
        return np.array([float(fn(*c)) for c in _LR])
    return run_checker("warm-up schedule (hidden cases)", all_cases, [
        Case("other d_model and warm-ups, the peak, a late step", "其他 d_model 与预热步数、峰值、很靠后的一步",
             (), expected, atol=1e-12)])


HIDDEN = {
    "ch05-ex-causal": _causal,
    "ch05-ex-padding": _padding,
    "ch05-ex-warmup": _lr,
}
