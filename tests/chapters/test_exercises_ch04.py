"""Chapter 4's exercise checkers judge correctly: right answers pass, typical
mistakes get their own message, and no learner code can make a checker raise."""

import numpy as np

from course_lib.chapters.ch04 import exercises as ex
from course_lib.analysis.positional import shift_matrix
from course_lib.scratch import sinusoidal_positional_encoding
from conftest import (never_raises_test, raises, returns_none, right_answers_test, stub, tolerance_test,
                      wrong_submissions_test)


def _pe(max_len, d_model, positions=None, power=None, swap=False):
    pos = np.arange(max_len) if positions is None else positions(max_len)
    j = np.arange(d_model)
    power = j // 2 * 2 if power is None else power(j)
    angle = pos[:, None] / 10000.0 ** (power / d_model)
    even = (j % 2 == 0) != swap
    return np.where(even, np.sin(angle), np.cos(angle))


def _halves(max_len, d_model):
    angle = np.arange(max_len)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def _rotation(theta):
    R = np.zeros((2 * len(theta), 2 * len(theta)))
    for i, t in enumerate(theta):
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]]
    return R


def _shift(k, d_model):
    return _rotation(k * 10000.0 ** (-np.arange(0, d_model, 2) / d_model))


HAND = sinusoidal_positional_encoding(ex.PE_POS + 1, ex.PE_D_MODEL)[ex.PE_POS]


def _hand_variant(**kw):
    return _pe(ex.PE_POS + 1, ex.PE_D_MODEL, **kw)[ex.PE_POS].round(3)


RIGHT = {
    "hand": (ex.check_pe_by_hand, HAND.round(3)),
    "hand (list of floats)": (ex.check_pe_by_hand, [float(v) for v in HAND.round(3)]),
    "pe": (ex.check_positional_encoding, _pe),
    "pe (library)": (ex.check_positional_encoding, sinusoidal_positional_encoding),
    "pe (exp-log recipe)": (ex.check_positional_encoding,
                            lambda n, d: np.where(np.arange(d) % 2 == 0,
                                                  np.sin(np.arange(n)[:, None] * np.exp(
                                                      (np.arange(d) // 2 * 2) * (-np.log(10000.0) / d))),
                                                  np.cos(np.arange(n)[:, None] * np.exp(
                                                      (np.arange(d) // 2 * 2) * (-np.log(10000.0) / d))))),
    "shift": (ex.check_shift_matrix, _shift),
    "shift (library)": (ex.check_shift_matrix, shift_matrix),
}


test_right_answers_pass = right_answers_test(RIGHT)


WRONG = {
    "hand": (ex.check_pe_by_hand, [
        (np.where(np.arange(6) % 2 == 0,
                  np.sin(np.deg2rad(ex.PE_POS / 10000.0 ** (np.arange(6) // 2 * 2 / 6))),
                  np.cos(np.deg2rad(ex.PE_POS / 10000.0 ** (np.arange(6) // 2 * 2 / 6)))).round(3),
         r"angles in degrees: set your calculator to radians"),
        (_hand_variant(swap=True), r"sine and cosine are swapped"),
        (_hand_variant(power=lambda j: j), r"the exponent uses the column index j"),
        (_hand_variant(power=lambda j: j // 2), r"the factor 2 is missing from the exponent"),
        (HAND.round(3)[:-1], r"wrong shape: got \(5,\), expected \(6,\)"),
        (HAND.round(3) + np.eye(6)[2] * 0.01, r"wrong value at position \(2\): got"),
        (np.full(6, np.nan), r"NaN at position \(0\)"),
        (None, r"returned None"),
        (..., r"not implemented yet"),
    ]),
    "pe": (ex.check_positional_encoding, [
        (lambda n, d: _pe(n, d, positions=lambda m: np.arange(1, m + 1)),
         r"\[3 positions, d_model = 4\] the positions start at 1"),
        (lambda n, d: _pe(n, d, swap=True), r"\[a single position\] sine and cosine are swapped"),
        (lambda n, d: _pe(n, d, power=lambda j: j), r"\[3 positions, d_model = 4\] the exponent uses the column index j"),
        (lambda n, d: _pe(n, d, power=lambda j: j // 2),
         r"\[the chapter's table: 10 positions, d_model = 8\] the factor 2 is missing"),
        (_halves, r"all the sines are in the first half"),
        (lambda n, d: _pe(n, d).T, r"\[3 positions, d_model = 4\] wrong shape: got \(4, 3\), expected \(3, 4\)"),
        (lambda n, d: _pe(n + 1, d), r"wrong shape: got \(4, 4\), expected \(3, 4\)"),
        (lambda n, d: _pe(n, d) / (np.arange(n)[:, None] > 0), r"infinite value at position|NaN at position"),
        (lambda n, d: _pe(n, d) * np.nan, r"NaN at position \(0, 0\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "shift": (ex.check_shift_matrix, [
        (lambda k, d: _shift(k, d).T, r"\[k = 1, d_model = 4\] this matrix moves k places back"),
        (lambda k, d: _rotation(np.full(d // 2, float(k))), r"every pair is turned by k radians"),
        (lambda k, d: _rotation(k * 10000.0 ** (-np.arange(d // 2) / d)), r"the factor 2 is missing"),
        (lambda k, d: _shift(k, d)[:-1], r"wrong shape: got \(3, 4\), expected \(4, 4\)"),
        (lambda k, d: _shift(k + 1, d), r"\[k = 1, d_model = 4\] wrong value at position \(0, 0\)"),
        (lambda k, d: np.full((d, d), np.nan), r"NaN at position \(0, 0\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_k_zero_accepts_every_rotation_slip():
    """For k = 0 every slip gives the identity, which is right: that case must pass."""
    verdict = ex.check_shift_matrix(lambda k, d: _shift(k, d).T)
    assert "[k = 0 (no shift)]" not in repr(verdict) and verdict.passed == 1


def test_hand_answer_is_not_given_away():
    verdict = ex.check_pe_by_hand([0.0] * ex.PE_D_MODEL)
    assert not verdict.ok and "expected" not in repr(verdict) and "应为" not in repr(verdict)
    assert f"{HAND[0]:.4g}" not in repr(verdict)


test_no_checker_ever_raises = never_raises_test(coding=(ex.check_positional_encoding, ex.check_shift_matrix,), by_hand=(ex.check_pe_by_hand,))


def test_passing_the_result_instead_of_the_function():
    assert "pass the function itself" in repr(ex.check_positional_encoding(np.ones((3, 4))))


# --- near misses: almost-right answers a loosened tolerance or a weakened check would accept ---------

def _shift_by_steps(k, d_model):
    """R_1 multiplied k times: right for k >= 0, the identity for a shift back."""
    R = np.eye(d_model)
    for _ in range(k):
        R = R @ _shift(1, d_model)
    return R


NEAR_MISSES = {
    "hand": (ex.check_pe_by_hand, [
        (HAND.round(2), r"wrong value at position \(0\): got -0.76"),          # two decimals, three are asked
        (HAND.round(3) + np.eye(6)[5] * 0.003, r"wrong value at position \(5\)"),   # right ± 2 × tolerance
        (np.concatenate([HAND[0::2], HAND[1::2]]).round(3), r"wrong value at position \(1\)"),  # sines first
        (_hand_variant(swap=True) + 0.001, r"sine and cosine are swapped"),   # a slip, a little off: still named
    ]),
    "pe": (ex.check_positional_encoding, [
        (lambda n, d: np.squeeze(_pe(n, d)), r"\[a single position\] wrong shape: got \(6,\), expected \(1, 6\)"),
        (lambda n, d: _pe(n, d, power=lambda j: (j + 1) // 2 * 2),
         r"\[3 positions, d_model = 4\] wrong value at position \(1, 1\)"),       # pairs (1, 2), (3, 4), …
        (lambda n, d: _pe(n, d, power=lambda j: 2 * j), r"\[3 positions, d_model = 4\] wrong value"),
        (lambda n, d: _pe(n, d).round(4), r"\[3 positions, d_model = 4\] wrong value"),
    ]),
    "shift": (ex.check_shift_matrix, [
        (_shift_by_steps, r"\[k = −2 \(a shift back\)\] wrong value"),
        (lambda k, d: _rotation(k * 10000.0 ** (-np.arange(2, d + 2, 2) / d)),
         r"\[k = 1, d_model = 4\] wrong value at position \(0, 0\)"),             # ω_(i+1): pairs off by one
        (lambda k, d: _shift(k, d) + np.eye(d, k=2), r"\[k = 1, d_model = 4\] wrong value at position \(0, 2\)"),
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_the_steps_answer_fails_only_the_shift_back():
    verdict = ex.check_shift_matrix(_shift_by_steps)
    assert verdict.passed == verdict.total - 1 and "[k = −2 (a shift back)]" in repr(verdict)


test_the_tolerance_is_pinned = tolerance_test({
    "hand": (ex.check_pe_by_hand, HAND, 0.0015),
    "pe": (ex.check_positional_encoding, _pe, 1e-6),
    "shift": (ex.check_shift_matrix, _shift, 1e-6),
})
