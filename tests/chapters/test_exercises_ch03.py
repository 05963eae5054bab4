"""Chapter 3's exercise checkers judge correctly: right answers pass, typical
mistakes get their own message, and no learner code can make a checker raise."""

import re

import numpy as np

from course_lib.chapters.ch03 import exercises as ex
from course_lib.scratch import merge_heads, split_heads
from conftest import (never_raises_test, raises, returns_none, right_answers_test, stub, tolerance_test,
                      wrong_submissions_test)

D, H = ex.PARAMS_D_MODEL, ex.PARAMS_NUM_HEADS
VAR_QK = ex.SCORE_D_K * ex.SCORE_Q_STD**2 * ex.SCORE_K_STD**2


def _split(X, h):
    L, d = X.shape
    return X.reshape(L, h, d // h).transpose(1, 0, 2)


def _merge(Hs):
    h, L, d_k = Hs.shape
    return Hs.transpose(1, 0, 2).reshape(L, h * d_k)


def _scores(Q, K, h):
    Qh, Kh = _split(Q, h), _split(K, h)
    return Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(Qh.shape[-1])


def _nan_like(fn):
    return lambda *args: np.full(np.shape(fn(*args)), np.nan)


RIGHT = {
    "params": (lambda a: ex.check_mha_params(a), 4 * D * D + 4 * D),
    "params (int from numpy)": (lambda a: ex.check_mha_params(a), np.int64(4 * D * D + 4 * D)),
    "variance": (lambda a: ex.check_score_variance(a), [VAR_QK, VAR_QK / ex.SCORE_D_K]),
    "variance (rounded)": (lambda a: ex.check_score_variance(a), (round(VAR_QK, 2), round(VAR_QK / ex.SCORE_D_K, 2))),
    "split": (ex.check_split_heads, _split),
    "split (library)": (ex.check_split_heads, split_heads),
    "split (via X.T)": (ex.check_split_heads,
                        lambda X, h: X.T.reshape(h, X.shape[1] // h, X.shape[0]).transpose(0, 2, 1)),
    "merge": (ex.check_merge_heads, _merge),
    "merge (library)": (ex.check_merge_heads, merge_heads),
    "scores": (ex.check_head_scores, _scores),
    "scores (einsum)": (ex.check_head_scores,
                        lambda Q, K, h: np.einsum("hqd,hkd->hqk", _split(Q, h), _split(K, h))
                        / np.sqrt(Q.shape[1] // h)),
}


test_right_answers_pass = right_answers_test(RIGHT)


WRONG = {
    "params": (ex.check_mha_params, [
        (4 * D * D, r"left out the biases"),
        (3 * D * D + 3 * D, r"forgot the output projection W\^O"),
        (3 * D * D, r"forgot the output projection W\^O and the biases"),
        (H * (4 * D * D + 4 * D), r"do not each own a full d_model × d_model layer"),
        (H * 4 * D * D, r"do not each own a full d_model × d_model layer"),
        (4 * D * D + 4 * D + 1, r"wrong value at position \(\): got"),
        ([4 * D * D + 4 * D], r"wrong shape: got \(1,\), expected \(\)"),
        (float("nan"), r"NaN at position \(\)"),
        (None, r"returned None"),
        ("many", r"returned str"),
        (..., r"not implemented yet"),
    ]),
    "variance": (ex.check_score_variance, [
        ([ex.SCORE_D_K, 1.0], r"for components of variance 1"),
        ([VAR_QK, 1.0], r"does not have variance 1 here"),
        ([VAR_QK, VAR_QK / np.sqrt(ex.SCORE_D_K)], r"divides its variance by d_k, not by √d_k"),
        ([ex.SCORE_D_K * ex.SCORE_Q_STD * ex.SCORE_K_STD, ex.SCORE_Q_STD * ex.SCORE_K_STD],
         r"standard deviations where the variances belong"),
        (VAR_QK, r"wrong shape: got \(\), expected \(2,\)"),
        ([VAR_QK, np.nan], r"NaN at position \(1\)"),
        (None, r"returned None"),
        (..., r"not implemented yet"),
    ]),
    "split": (ex.check_split_heads, [
        (lambda X, h: X.reshape(h, X.shape[0], -1), r"\[the chapter's toy, 3 heads\] you reshaped straight to "
                                                    r"\(num_heads, L, d_k\)"),
        (lambda X, h: X.reshape(X.shape[0], h, -1), r"wrong shape: got \(2, 3, 2\) = \(L, num_heads, d_k\); "
                                                    r"transpose"),
        (lambda X, h: X.reshape(X.shape[0], -1, h).transpose(2, 0, 1), r"head i got the features i, i \+ num_heads"),
        (lambda X, h: _split(X, h)[::-1], r"\[the chapter's toy, 3 heads\] every head is right but they are in "
                                          r"reverse order"),
        (lambda X, h: _split(X, h).swapaxes(-1, -2), r"\[L = 5, d_model = 8, 4 heads\] wrong shape: "
                                                     r"got \(4, 2, 5\), expected \(4, 5, 2\)"),
        (lambda X, h: _split(X, h) + 1, r"\[the chapter's toy, 3 heads\] wrong value at position \(0, 0, 0\): "
                                        r"got 1, expected 0"),
        (_nan_like(_split), r"NaN at position \(0, 0, 0\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "merge": (ex.check_merge_heads, [
        (lambda Hs: Hs.reshape(Hs.shape[1], -1), r"reshaped without transposing first"),
        (lambda Hs: Hs.transpose(1, 2, 0).reshape(Hs.shape[1], -1), r"interleaved feature by feature"),
        (lambda Hs: Hs.transpose(1, 0, 2), r"wrong shape: got \(2, 3, 2\), expected \(2, 6\)"),
        (lambda Hs: _merge(Hs)[:, :-1], r"wrong shape"),
        (_nan_like(_merge), r"NaN at position \(0, 0\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
    ]),
    "scores": (ex.check_head_scores, [
        (lambda Q, K, h: _scores(Q, K, h) * np.sqrt(Q.shape[1] // h) / np.sqrt(Q.shape[1]),
         r"\[L_q = 3, L_k = 5, d_model = 12, 3 heads\] you divided by √d_model"),
        (lambda Q, K, h: _scores(Q, K, h) * np.sqrt(Q.shape[1] // h), r"the scores are not scaled"),
        (lambda Q, K, h: _scores(Q, K, h).swapaxes(-1, -2),
         r"\[L_q = L_k = 4, d_model = 16, 4 heads\] each head's scores are transposed"),
        (lambda Q, K, h: Q @ K.T / np.sqrt(Q.shape[1]), r"wrong shape: got \(3, 5\), expected \(3, 3, 5\)"),
        (lambda Q, K, h: _split(Q, h) @ _split(K, h).T, r"raised ValueError: matmul"),
        (_nan_like(_scores), r"NaN at position \(0, 0, 0\)"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_a_right_answer_is_never_mistaken_for_a_slip():
    """With one head, reshaping without a transpose is right: the checker must not complain."""
    verdict = ex.check_split_heads(lambda X, h: X.reshape(h, X.shape[0], -1))
    assert "[one head]" not in repr(verdict)
    assert verdict.passed >= 1


def test_hand_answers_are_not_given_away():
    for verdict in (ex.check_mha_params(12345), ex.check_score_variance([1.0, 2.0])):
        assert not verdict.ok and "expected" not in repr(verdict) and "应为" not in repr(verdict)
    assert str(4 * D * D + 4 * D) not in repr(ex.check_mha_params(12345))


def test_every_message_is_bilingual():
    verdict = ex.check_split_heads(lambda X, h: X.reshape(h, X.shape[0], -1))
    for en, zh in verdict.problems:
        assert re.search(r"[A-Za-z]", en) and re.search(r"[\u4e00-\u9fff]", zh)


test_no_checker_ever_raises = never_raises_test(coding=(ex.check_split_heads, ex.check_merge_heads, ex.check_head_scores,), by_hand=(ex.check_mha_params, ex.check_score_variance,))


def test_passing_the_result_instead_of_the_function():
    assert "pass the function itself" in repr(ex.check_split_heads(np.ones((2, 3))))


# --- near misses: almost-right answers a loosened tolerance or a weakened check would accept ---------

D_K = D // H


def _mha_parameters():
    """The parameters of the library's layer, counted live."""
    from course_lib.models import MultiHeadAttention
    return sum(p.numel() for p in MultiHeadAttention(D, H).parameters())


def _scores_over(size):
    """Every head's scores divided by √size(Q, K, h) instead of √d_k."""
    return lambda Q, K, h: _scores(Q, K, h) * np.sqrt(Q.shape[1] // h) / np.sqrt(size(Q, K, h))


NEAR_MISSES = {
    "params": (ex.check_mha_params, [
        (4 * D * D + 3 * D, r"wrong value at position \(\)"),      # the bias of W^O forgotten
        (4 * D * D + D, r"wrong value at position \(\)"),          # one bias vector in all
        (4 * D * D + 4 * D_K, r"wrong value at position \(\)"),    # a bias of d_k, not d_model
        (4 * D * D + 4 * D + 1, r"wrong value at position \(\)"),  # right ± 2 × tolerance
    ]),
    "variance": (ex.check_score_variance, [
        ([VAR_QK + 0.1, VAR_QK / ex.SCORE_D_K], r"wrong value at position \(0\)"),   # right ± 2 × tolerance
        ([VAR_QK, VAR_QK / ex.SCORE_D_K - 0.1], r"wrong value at position \(1\)"),
        ([VAR_QK - 1.3, VAR_QK / ex.SCORE_D_K - 0.04], r"wrong value at position \(0\)"),   # a simulation's estimate
        ([round(2 * ex.SCORE_D_K, 1) + 0.02, 2.01], r"standard deviations where the variances belong"),
    ]),
    "split": (ex.check_split_heads, [
        (lambda X, h: _split(X, h).swapaxes(-1, -2),
         r"\[L = 4, d_model = 12, 3 heads\] wrong value"),          # (h, d_k, L): square here, L = d_k = 4
        (lambda X, h: np.roll(_split(X, h), 1, axis=0), r"\[the chapter's toy, 3 heads\] wrong value"),
        (lambda X, h: np.squeeze(_split(X, h)), r"\[d_k = 1\] wrong shape: got \(4, 3\), expected \(4, 3, 1\)"),
    ]),
    "merge": (ex.check_merge_heads, [
        (lambda Hs: _merge(Hs[::-1]), r"\[the chapter's toy, 3 heads\] wrong value"),   # heads reversed
        (lambda Hs: _merge(Hs.swapaxes(1, 2).reshape(Hs.shape)), r"wrong value"),
    ]),
    "scores": (ex.check_head_scores, [
        (_scores_over(lambda Q, K, h: (Q.shape[1] // h) ** 2), r"wrong value"),              # ÷ d_k, not √d_k
        (_scores_over(lambda Q, K, h: Q.shape[0]), r"\[L_q = 3, L_k = 5, d_model = 12, 3 heads\] wrong value"),
        (_scores_over(lambda Q, K, h: K.shape[0]), r"\[L_q = 3, L_k = 5, d_model = 12, 3 heads\] wrong value"),
        (lambda Q, K, h: _scores(Q, K, h)[::-1], r"\[L_q = 3, L_k = 5, d_model = 12, 3 heads\] wrong value"),
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_the_count_is_the_library_layer():
    assert ex.check_mha_params(_mha_parameters()).ok


test_the_tolerance_is_pinned = tolerance_test({
    "params": (ex.check_mha_params, 4 * D * D + 4 * D, 0.5),
    "variance": (ex.check_score_variance, [VAR_QK, VAR_QK / ex.SCORE_D_K], 0.05),
    "split": (ex.check_split_heads, _split, 1e-6),
    "merge": (ex.check_merge_heads, _merge, 1e-6),
    "scores": (ex.check_head_scores, _scores, 1e-6),
})
