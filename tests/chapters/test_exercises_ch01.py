"""Chapter 1's exercise checkers judge correctly: right answers pass, typical
mistakes get their own message, and no learner code can make a checker raise."""

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.chapters.ch01 import exercises as ex
from course_lib.scratch import additive_attention
from conftest import (anything, learner, never_raises_test, raises, returns_none, right_answers_test, stub,
                      tolerance_test, wrong_submissions_test)


def _states(w, x):
    h = [0.0]
    for x_t in x:
        h.append(np.tanh(w * h[-1] + x_t))
    return np.array(h)


H_STATES = _states(ex.GRAD_W, ex.GRAD_X)
FACTORS = ex.GRAD_W * (1 - H_STATES[2:] ** 2)           # ∂h_t/∂h_{t-1}, t = 2 … T
FACTOR = float(np.prod(FACTORS))


def _scores(s, H, W_s, W_h, v):
    return np.tanh(s @ W_s + H @ W_h) @ v


def _softmax(e):
    z = np.exp(e - e.max())
    return z / z.sum()


def _accuracy(pred, target):
    letters = target >= 3
    n = letters.sum(axis=1)
    right = ((pred == target) & letters).sum(axis=1)
    lengths = np.unique(n)
    return lengths, np.array([right[n == L].sum() / (L * (n == L).sum()) for L in lengths])


def _accuracy_loop(pred, target):
    """A plain-Python version: row by row, up to the first <eos>."""
    per_length = {}
    for p_row, t_row in zip(pred.tolist(), target.tolist()):
        L = t_row.index(2)
        right, total = per_length.get(L, (0, 0))
        per_length[L] = (right + sum(p == t for p, t in zip(p_row[:L], t_row[:L])), total + L)
    lengths = sorted(per_length)
    return lengths, [per_length[L][0] / per_length[L][1] for L in lengths]


def _accuracy_scored(pred, target, scored):
    """Accuracy per length over the positions ``scored(target)`` marks (a typical mistake)."""
    n = (target >= 3).sum(axis=1)
    mask = scored(target)
    hit = (pred == target) & mask
    lengths = np.unique(n)
    return lengths, np.array([hit[n == L].sum() / mask[n == L].sum() for L in lengths])


RIGHT = {
    "factor": (ex.check_gradient_factor, FACTOR),
    "factor (three decimals)": (ex.check_gradient_factor, round(FACTOR, 3)),
    "factor (numpy scalar)": (ex.check_gradient_factor, np.float32(FACTOR)),
    "scores": (ex.check_additive_scores, _scores),
    "scores (column vectors)": (ex.check_additive_scores,
                                lambda s, H, W_s, W_h, v: v @ np.tanh(W_s.T @ s[:, None] + W_h.T @ H.T)),
    "scores (loop over j)": (ex.check_additive_scores,
                             lambda s, H, W_s, W_h, v: [float(v @ np.tanh(s @ W_s + h @ W_h)) for h in H]),
    "accuracy": (ex.check_accuracy_by_length, _accuracy),
    "accuracy (lists, a loop)": (ex.check_accuracy_by_length, _accuracy_loop),
}


test_right_answers_pass = right_answers_test(RIGHT)


def test_the_softmax_of_the_scores_is_the_library_attention():
    rng = np.random.default_rng(0)
    s, H = rng.normal(size=4), rng.normal(size=(5, 4))
    W_s, W_h, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=3)
    assert np.allclose(_softmax(_scores(s, H, W_s, W_h, v)), additive_attention(s, H, W_s, W_h, v)[1])


def test_the_small_batch_is_what_the_exercise_says():
    lengths, acc = _accuracy(ex.ACC_PRED, ex.ACC_TARGET)
    assert lengths.tolist() == [2, 3] and np.allclose(acc, [3 / 4, 5 / 6])
    assert ((ex.ACC_TARGET == 2).sum(axis=1) == 1).all()    # one <eos> per row


WRONG = {
    "factor": (ex.check_gradient_factor, [
        (ex.GRAD_W ** (len(ex.GRAD_X) - 1), r"this is w\^\(T−1\)"),
        (float(np.prod(1 - H_STATES[2:] ** 2)), r"you left out w"),
        (FACTOR * ex.GRAD_W * (1 - H_STATES[1] ** 2), r"one factor too many: from h_1 to h_4 there are 3 steps"),
        (float(np.prod(ex.GRAD_W * (1 - H_STATES[1:-1] ** 2))), r"taken at the new state: 1 − h_t², not 1 − h_\(t−1\)²"),
        (float(np.prod(ex.GRAD_W * (1 - H_STATES[2:]))), r"1 − h_t², not 1 − h_t"),
        (float(FACTORS.sum()), r"multiplies the factors of the steps; you added them"),
        (FACTOR + 0.05, r"wrong value at position \(\): got"),
        (FACTORS.tolist(), r"wrong shape: got \(3,\), expected \(\)"),
        (float("nan"), r"NaN at position \(\)"),
        (None, r"returned None"),
        ("many", r"returned str"),
        (..., r"not implemented yet"),
    ]),
    "scores": (ex.check_additive_scores, [
        (lambda s, H, W_s, W_h, v: _softmax(_scores(s, H, W_s, W_h, v)),
         r"\[square weights: d_s = d_h = d_a = 3, L = 4\] these are the weights α = softmax\(e\)"),
        (lambda s, H, W_s, W_h, v: (s @ W_s + H @ W_h) @ v, r"the tanh is missing"),
        (lambda s, H, W_s, W_h, v: np.tanh(H @ W_h) @ v, r"the decoder state s is missing"),
        (lambda s, H, W_s, W_h, v: np.tanh(s @ W_s + H @ W_h).sum(axis=-1), r"weight them with v"),
        (lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H @ W_h) @ v,
         r"\[square weights: d_s = d_h = d_a = 3, L = 4\] W_s is transposed"),
        (lambda s, H, W_s, W_h, v: np.tanh(s @ W_s + H @ W_h.T) @ v,
         r"\[square weights: d_s = d_h = d_a = 3, L = 4\] W_h is transposed"),
        (lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + (W_h @ H.T).T) @ v, r"both weight matrices are transposed"),
        (lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H @ W_h) @ v,
         r"\[the chapter's example: d_s = d_h = 4, d_a = 3, L = 5\] raised ValueError"),
        (lambda s, H, W_s, W_h, v: np.tanh(s @ W_s + H @ W_h),
         r"wrong shape: got \(4, 3\) = \(L, d_a\)"),
        (lambda s, H, W_s, W_h, v: _scores(s, H, W_s, W_h, v)[:-1], r"wrong shape: got \(3,\), expected \(4,\)"),
        (lambda s, H, W_s, W_h, v: _scores(s, H, W_s, W_h, v) + 1,
         r"wrong value at position \(0\): got .*, expected"),
        (lambda s, H, W_s, W_h, v: np.full(len(H), np.nan), r"NaN at position \(0\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "accuracy": (ex.check_accuracy_by_length, [
        (lambda p, t: _accuracy_scored(p, t, lambda t: np.ones_like(t, dtype=bool)),
         r"\[the batch printed above\] you scored every position, <pad> and <eos> included"),
        (lambda p, t: _accuracy_scored(p, t, lambda t: t != 2), r"you counted the <pad> positions"),
        (lambda p, t: _accuracy_scored(p, t, lambda t: t != 0), r"you scored <eos> too"),
        (lambda p, t: (_accuracy(p, t)[0],
                       np.array([(((p == t) & (t >= 3))[(t >= 3).sum(1) == L]).sum() / (((t >= 3).sum(1) == L).sum()
                                                                                         * t.shape[1])
                                 for L in _accuracy(p, t)[0]])),
         r"divided by the padded width T"),
        (lambda p, t: _accuracy_scored(p, t, lambda t: (t >= 3) & (np.arange(t.shape[1]) < (t >= 3).sum(1,
                                                                  keepdims=True) - 1)),
         r"off by one: you scored only the first L − 1 letters"),
        (lambda p, t: (_accuracy(p, t)[0] + 1, _accuracy(p, t)[1]), r"the lengths are one too long"),
        (lambda p, t: (_accuracy(p, t)[0] - 1, _accuracy(p, t)[1]), r"the lengths are one too short"),
        (lambda p, t: (_accuracy(p, t)[0], 100 * _accuracy(p, t)[1]), r"these are percentages"),
        (lambda p, t: _accuracy(p, t)[::-1], r"the two results are swapped"),
        (lambda p, t: _accuracy(p, t)[1], r"expected a tuple of 2 results"),
        (lambda p, t: dict(zip(*_accuracy(p, t))), r"expected a tuple of 2 results, got dict"),
        (lambda p, t: (_accuracy(p, t)[0], np.append(_accuracy(p, t)[1], 1.0)), r"wrong shape"),
        (lambda p, t: (_accuracy(p, t)[0], _accuracy(p, t)[1] * np.nan), r"NaN at position \(0\)"),
        (lambda p, t: (_accuracy(p, t)[0], _accuracy(p, t)[1] + 0.1),
         r"\[the batch printed above\] wrong value at position \(0\): got 0.85, expected 0.75"),
        (lambda p, t: (_accuracy(p, t)[0], [int(n) / 0 for n in _accuracy(p, t)[0]]),
         r"raised ZeroDivisionError: division by zero"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_a_right_answer_is_never_mistaken_for_a_slip():
    """With one encoder state the weights are [1]; without padding <pad> cannot be counted.

    A right answer must pass those cases, however close a typical mistake comes there.
    """
    scores = ex.check_additive_scores(_scores)
    assert scores.ok and "[one encoder state" not in repr(scores)
    acc = ex.check_accuracy_by_length(_accuracy)
    assert acc.ok and "[a single row" not in repr(acc)


def test_the_loop_mistakes_are_named_case_by_case():
    """A transposed W_s is only computable, and named, where the weights are square."""
    verdict = ex.check_additive_scores(lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H @ W_h) @ v)
    text = repr(verdict)
    assert "[square weights: d_s = d_h = d_a = 3, L = 4] W_s is transposed" in text
    assert "[the chapter's example: d_s = d_h = 4, d_a = 3, L = 5] raised ValueError" in text
    assert verdict.passed == 0


def test_hand_answers_are_not_given_away():
    verdict = ex.check_gradient_factor(0.5)
    assert not verdict.ok and "expected" not in repr(verdict) and "应为" not in repr(verdict)
    assert f"{FACTOR:.3f}" not in repr(verdict) and f"{FACTOR:.4g}" not in repr(verdict)
    assert "expected" in repr(ex.check_additive_scores(lambda *a: _scores(*a) + 1))  # coding exercises do show it


def test_every_message_is_bilingual():
    for verdict in (ex.check_gradient_factor(ex.GRAD_W ** 3),
                    ex.check_additive_scores(lambda s, H, W_s, W_h, v: (s @ W_s + H @ W_h) @ v),
                    ex.check_accuracy_by_length(lambda p, t: (_accuracy(p, t)[0] + 1, _accuracy(p, t)[1]))):
        assert verdict.problems
        for en, zh in verdict.problems:
            assert re.search(r"[A-Za-z]", en) and re.search(r"[\u4e00-\u9fff]", zh)


def test_a_slow_function_is_stopped():
    from course_lib.chapters._check import Case, run_checker

    def forever(pred, target):
        while True:
            pass
    verdict = run_checker("loop", forever, [Case("a", "甲", (ex.ACC_PRED, ex.ACC_TARGET), np.array(1.0))],
                          timeout=0.2)
    assert not verdict.ok and "stopped after 0.2 s" in repr(verdict)


def _anything():
    """Anything a learner might return, and near-misses of this chapter's answers: pairs, shapes (L, d_a)."""
    arrays = st.integers(0, 3).flatmap(lambda n: st.lists(st.integers(1, 5), min_size=n, max_size=n)).map(
        lambda shape: np.full(shape, 0.5))
    return st.one_of(anything(), arrays, st.tuples(st.lists(st.integers(), max_size=3), arrays),
                     st.tuples(st.text(max_size=3), st.none()), st.tuples(arrays, arrays, arrays),
                     st.just(np.zeros((2, 2), dtype=complex)), st.just(np.array(["a", "b"])),
                     st.just((np.array([2, 3]), np.array([0.75, 0.8]))),
                     st.just((np.array([2, 3]), np.array([0.75, 0.8]), None)))


test_no_checker_ever_raises = never_raises_test(coding=(ex.check_additive_scores, ex.check_accuracy_by_length,), by_hand=(ex.check_gradient_factor,), results=_anything())


@settings(max_examples=25, deadline=None)
@given(shift=st.integers(-2, 2), scale=st.sampled_from([0.0, 0.5, 1.0, 100.0]),
       swap=st.booleans(), as_list=st.booleans())
def test_the_accuracy_checker_survives_any_reshuffle(shift, scale, swap, as_list):
    """Near-miss answers (lengths shifted, accuracies rescaled, swapped, lists) get a verdict, never an exception."""
    def learner(pred, target):
        lengths, acc = _accuracy(pred, target)
        out = (lengths + shift, acc * scale)
        out = out[::-1] if swap else out
        return [x.tolist() for x in out] if as_list else out
    verdict = ex.check_accuracy_by_length(learner)
    assert isinstance(verdict, ex.Verdict)
    assert verdict.ok == (shift == 0 and scale == 1.0 and not swap)


def test_passing_the_result_instead_of_the_function():
    assert "pass the function itself" in repr(ex.check_additive_scores(np.ones(3)))
    assert "pass the function itself" in repr(ex.check_accuracy_by_length((np.array([2]), np.array([1.0]))))


# --- near misses: almost-right answers a loosened tolerance or a weakened check would accept ---------

def _rounded_states_factor(decimals):
    """The factor by hand, each state h_t rounded to ``decimals`` before use (a careful hand computation)."""
    h = _states(ex.GRAD_W, ex.GRAD_X).round(decimals)
    return float(np.prod(ex.GRAD_W * (1 - h[2:] ** 2)))


def _accuracy_by_appearance(pred, target):
    """Lengths in the order they first appear (a dict, unsorted), not increasing."""
    lengths, acc = _accuracy(pred, target)
    n = (target >= 3).sum(axis=1)
    order = [int(L) for L in dict.fromkeys(n.tolist())]
    return np.array(order), np.array([acc[list(lengths).index(L)] for L in order])


def _accuracy_length_from_pad(pred, target):
    """A row's length read as 'first <pad> − 1': right while every row is padded."""
    n = np.argmax(target == 0, axis=1) - 1
    letters = np.arange(target.shape[1])[None, :] < n[:, None]
    hit = (pred == target) & letters
    lengths = np.unique(n)
    return lengths, np.array([hit[n == L].sum() / max(letters[n == L].sum(), 1) for L in lengths])


def _accuracy_pred_letters(pred, target):
    """The scored positions taken from the prediction's letters instead of the target's."""
    n = (target >= 3).sum(axis=1)
    scored = pred >= 3
    hit = (pred == target) & scored
    lengths = np.unique(n)
    return lengths, np.array([hit[n == L].sum() / scored[n == L].sum() for L in lengths])


NEAR_MISSES = {
    "factor": (ex.check_gradient_factor, [
        (float(np.prod(FACTORS[1:])), r"wrong value at position \(\)"),       # one factor too few, t = 3 … T
        (round(FACTOR, 1), r"wrong value at position \(\)"),                  # one decimal, three are asked
        (round(FACTOR + 0.01, 3), r"wrong value at position \(\)"),           # right ± 2 × tolerance
        (round(FACTOR - 0.01, 3), r"wrong value at position \(\)"),
        (round(FACTOR * ex.GRAD_W * (1 - H_STATES[1] ** 2), 3), r"one factor too many"),   # a slip, rounded
        (round(float(np.prod(ex.GRAD_W * (1 - H_STATES[1:-1] ** 2))), 3), r"taken at the new state"),
    ]),
    "scores": (ex.check_additive_scores, [
        (lambda s, H, W_s, W_h, v: np.squeeze(_scores(s, H, W_s, W_h, v)),
         r"\[one encoder state, L = 1\] wrong shape: got \(\), expected \(1,\)"),
        (lambda s, H, W_s, W_h, v: np.tanh(s @ W_s + H @ W_h) @ v[:, None], r"wrong shape: got \(4, 1\)"),
        (lambda s, H, W_s, W_h, v: (np.tanh(s @ W_s) + np.tanh(H @ W_h)) @ v, r"wrong value at position \(0\)"),
    ]),
    "accuracy": (ex.check_accuracy_by_length, [
        (_accuracy_by_appearance, r"\[the batch printed above\] wrong value at position \(0\): got 3, expected 2"),
        (_accuracy_length_from_pad, r"\[a single row, no padding\]"),
        (_accuracy_pred_letters, r"\[the batch printed above\] wrong value"),
        (lambda p, t: (_accuracy(p, t)[0], _accuracy(p, t)[1].round(2)), r"wrong value at position \(1\)"),
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_a_careful_hand_computation_passes():
    """States rounded to three decimals on the way still give the factor within the tolerance."""
    assert ex.check_gradient_factor(round(_rounded_states_factor(3), 3)).ok


test_the_tolerance_is_pinned = tolerance_test({
    "factor": (ex.check_gradient_factor, FACTOR, 0.005),
    "scores": (ex.check_additive_scores, _scores, 1e-6),
    "accuracy": (ex.check_accuracy_by_length, _accuracy, 1e-6),
})

