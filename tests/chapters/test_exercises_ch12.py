"""Chapter 12's exercise checkers judge correctly: right answers pass, near misses (frames
rounded down or counted after one convolution, the mel scale with ln or without its 1 +, a
causal mask turned over, without its diagonal or missing, an edit distance that compares
positions) get their own message, and no learner code can make a checker raise."""

import math

import numpy as np

from course_lib.chapters.ch12 import exercises as ex
from conftest import (never_raises_test, raises, returns_none, right_answers_test, stub, tolerance_test,
                      wrong_submissions_test)

# Written here from the definitions, independently of course_lib.
FRAMES = math.ceil(math.ceil(ex.T_FRAMES / 2) / 2)


def _mel(f):
    return np.array([2595 * math.log10(1 + x / 700) for x in np.ravel(f)])


def _mask(L):
    return np.array([[j <= i for j in range(L)] for i in range(L)])


def _lev(a, b):
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[-1][-1]


RIGHT = {
    "frames": (ex.check_frames_by_hand, FRAMES),
    "frames (float)": (ex.check_frames_by_hand, float(FRAMES)),
    "mel": (ex.check_hz_to_mel, _mel),
    "mel (ln form)": (ex.check_hz_to_mel, lambda f: 2595 / math.log(10) * np.log1p(np.asarray(f) / 700)),
    "mask": (ex.check_causal_mask, _mask),
    "mask (ints)": (ex.check_causal_mask, lambda L: np.tril(np.ones((L, L), dtype=int))),
    "edit": (ex.check_edit_distance, _lev),
}
test_right_answers_pass = right_answers_test(RIGHT)


WRONG = {
    "frames": (ex.check_frames_by_hand, [
        (ex.T_FRAMES // 4, r"rounded down"),
        (math.ceil(ex.T_FRAMES / 2), r"this is after one convolution"),
        (ex.T_FRAMES // 2, r"this is T / 2 rounded down"),
        (ex.T_FRAMES, r"not subsampled at all"),
        (FRAMES + 3, r"wrong value at position \(\): got"),
        ([FRAMES, FRAMES], r"wrong shape"),
        (None, r"returned None"),
        (..., r"not implemented yet"),
    ]),
    "mel": (ex.check_hz_to_mel, [
        (lambda f: 2595 * np.log(1 + np.asarray(f) / 700), r"\[700 Hz\] natural logarithm with the factor 2595"),
        (lambda f: 2595 * np.log10(np.asarray(f) / 700 + 1e-300), r"\[700 Hz\] the 1 \+ is missing"),
        (lambda f: 700 * (10 ** (np.asarray(f) / 2595) - 1), r"this is the inverse"),
        (lambda f: _mel(f) + 0.01, r"wrong value at position \(0\)"),
        (lambda f: _mel(f)[:1], r"\[a few frequencies\] wrong shape"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "mask": (ex.check_causal_mask, [
        (lambda L: np.ones((L, L), dtype=bool), r"\[L = 2\] every entry is True: this is no mask at all"),
        (lambda L: _mask(L).T, r"\[L = 2\] the mask is turned the wrong way"),
        (lambda L: np.tril(np.ones((L, L), dtype=bool), -1), r"\[L = 2\] the diagonal is missing"),
        (lambda L: ~_mask(L), r"\[L = 2\] True and False are swapped"),
        (lambda L: _mask(L + 1), r"wrong shape"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "edit": (ex.check_edit_distance, [
        (lambda a, b: sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b)),
         r"\[one deletion at the front\] this compares position by position"),
        (lambda a, b: abs(len(a) - len(b)), r"\[one substitution\] only the lengths are compared"),
        (lambda a, b: _lev(a, b) + 1, r"\[same\] wrong value at position \(\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_hand_answer_is_not_given_away():
    verdict = ex.check_frames_by_hand(1)
    assert not verdict.ok and "expected" not in repr(verdict) and "应为" not in repr(verdict)
    assert f" {FRAMES}" not in repr(verdict)


def test_passing_the_result_instead_of_the_function():
    assert "pass the function itself" in repr(ex.check_causal_mask(_mask(4)))


test_no_checker_ever_raises = never_raises_test(
    coding=(ex.check_hz_to_mel, ex.check_causal_mask, ex.check_edit_distance),
    by_hand=(ex.check_frames_by_hand,))


test_the_tolerance_is_pinned = tolerance_test({
    "frames": (ex.check_frames_by_hand, float(FRAMES), 0.25),
    "mel": (ex.check_hz_to_mel, _mel, 1e-6),
})
