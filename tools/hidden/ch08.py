"""Hidden cases for chapter 8's exercises: the grader runs them, the student notebook never shows them.

`make assignments` packs this file into the chapter's autograder (``files/course_hidden_ch08.py``);
each entry of ``HIDDEN`` takes the student's answer and returns a ``Verdict`` on inputs the
chapter's own checkers do not use: other vocabularies, batches and temperatures, longer masks,
other schedules. The by-hand count (``ch08-ex-kv-count``) has nothing more to try.
"""

import numpy as np

from course_lib.chapters._check import Case, run_checker
from course_lib.chapters.ch08.exercises import reference_learning_rate, reference_top_k
from course_lib.scratch.masks import causal_mask


def _top_k(fn):
    rng = np.random.default_rng(12)
    big = rng.normal(size=(3, 50)) * 5
    ties = np.array([1.0, 3.0, 3.0, 0.0, 3.0])
    cases = [Case("a batch of 50 logits, k = 5, T = 0.7", "一批 50 个 logits，k = 5，T = 0.7", (big, 5, 0.7),
                  reference_top_k(big, 5, 0.7)),
             Case("large logits, k = 2, T = 3", "很大的 logits，k = 2，T = 3", (big * 100, 2, 3.0),
                  reference_top_k(big * 100, 2, 3.0)),
             Case("a tie at the k-th value is kept", "并列第 k 大的值都保留", (ties, 2, 1.0), reference_top_k(ties, 2, 1.0))]
    return run_checker("top-k sampling (hidden cases)", fn, cases)


def _causal(fn):
    return run_checker("causal mask (hidden cases)", fn, [
        Case(f"L = {L}", f"L = {L}", (L,), causal_mask(L).astype(float)) for L in (1, 2, 11)])


_SCHEDULES = [(0, 1.0, 1, 10, 0.0), (5, 2e-3, 10, 100, 0.5), (55, 2e-3, 10, 100, 0.5), (100, 2e-3, 10, 100, 0.5),
              (10, 1e-3, 10, 20, 0.1), (19, 1e-3, 10, 20, 0.1), (10**6, 5e-4, 200, 4000, 0.05)]


def _schedule(fn):
    expected = np.array([reference_learning_rate(*c) for c in _SCHEDULES])

    def all_cases(*_):
        return np.array([float(fn(*c)) for c in _SCHEDULES])
    return run_checker("the learning-rate schedule (hidden cases)", all_cases, [
        Case("one-step warm-up, other floors, the end of the warm-up, a late step",
             "一步预热、其他下限、预热的最后一步、很靠后的一步", (), expected, atol=1e-12)])


HIDDEN = {
    "ch08-ex-topk": _top_k,
    "ch08-ex-causal": _causal,
    "ch08-ex-schedule": _schedule,
}
