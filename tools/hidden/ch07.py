"""Hidden cases for chapter 7's exercises: the grader runs them, the student notebook never shows them.

`make assignments` packs this file into the chapter's autograder (``files/course_hidden_ch07.py``);
each entry of ``HIDDEN`` takes the student's answer and returns a ``Verdict`` on inputs the
chapter's own checker does not use. The two by-hand counts (``ch07-ex-embeddings``,
``ch07-ex-layer-params``) have nothing more to try.
"""

import numpy as np

from course_lib.chapters._check import Case, run_checker
from course_lib.chapters.ch07.exercises import reference_mlm_masking


def _mlm(fn):
    rng = np.random.default_rng(11)
    cases = []
    one = np.array([5, 6, 7])                                  # one sentence, no special token at all
    args = (one, np.array([0.1, 0.2, 0.05]), np.array([0.85, 0.5, 0.95]), np.array([9, 9, 9]), 1, ())
    cases.append(Case("no special tokens, 1-d", "没有特殊词元，一维", args, reference_mlm_masking(*args)))
    ids = rng.integers(0, 30, size=(4, 16))                   # specials anywhere, another [MASK] id
    args = (ids, rng.random((4, 16)), rng.random((4, 16)), rng.integers(10, 30, size=(4, 16)), 7, (0, 1, 7))
    cases.append(Case("specials inside the sentence, mask_id = 7", "句中有特殊词元，mask_id = 7", args,
                      reference_mlm_masking(*args)))
    args = (ids, np.full((4, 16), 0.15), rng.random((4, 16)), ids, 7, (0,))   # exactly 0.15: not picked
    cases.append(Case("select_u exactly 0.15", "select_u 恰为 0.15", args, reference_mlm_masking(*args)))
    edge = np.array([[0.79999, 0.8, 0.89999, 0.9]])                           # the action thresholds
    args = (np.array([[11, 12, 13, 14]]), np.zeros((1, 4)), edge, np.array([[21, 22, 23, 24]]), 3, ())
    cases.append(Case("action_u at 0.8 and 0.9", "action_u 恰为 0.8 与 0.9", args, reference_mlm_masking(*args)))
    for c in cases:
        c.atol = 0
    return run_checker("MLM masking (hidden cases)", fn, cases)


HIDDEN = {
    "ch07-ex-mlm": _mlm,
}
