"""The exercise checkers judge correctly: right answers pass, typical mistakes
get the right message, and no learner code can make a checker raise."""

import re

import numpy as np
import pytest

from course_lib.chapters.ch02 import exercises as ex

import nbformat
from solutions import gated_cells
from toc import ROOT, notebooks, pages
from conftest import (never_raises_test, raises, returns_none, right_answers_test, stub, tolerance_test,
                      wrong_submissions_test)

# The stored outputs are what nbval re-computes and compares on every run, so
# checking them here checks the live verdicts too. `make solutions` re-runs them.
GATED = [(nb.stem, kind, label, cell) for nb in notebooks()
         for kind, label, cell in gated_cells(nbformat.read(nb, as_version=4))]


def _verdict_text(cell) -> str:
    return "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs
                   if o.output_type == "execute_result")


def test_the_book_has_exercises():
    assert sum(kind == "solution" for _, kind, _, _ in GATED) >= 4


@pytest.mark.parametrize("chapter,kind,label,cell", GATED,
                         ids=[f"{c}-{k}-{lab}" for c, k, lab, _ in GATED])
def test_solutions_pass_and_stubs_wait(chapter, kind, label, cell):
    text = _verdict_text(cell)
    assert text, f"{label}: the {kind} cell must end with a checker call"
    if kind == "solution":
        assert text.startswith("✓"), f"{label}: the reference solution fails: {text}"
    else:
        assert text.startswith("…") and "not implemented yet" in text, (
            f"{label}: the exercise cell must hold the stub: {text}")


def _stable_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _masked_ok(x, mask):
    from course_lib.scratch import masked_softmax
    return masked_softmax(x, mask)


def _attention_ok(Q, K, V):
    w = _stable_softmax(Q @ K.T / np.sqrt(K.shape[-1]))
    return w @ V, w


WRONG = {
    "softmax": (ex.check_softmax, [
        (lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True), r"\[large logits\] NaN.*subtract the row maximum"),
        (lambda x: _stable_softmax(x)[..., :-1], r"wrong shape"),
        (lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(), r"\[rows of a matrix\] wrong value at position \(0, 0\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "masked": (ex.check_masked_softmax, [
        (lambda x, m: _stable_softmax(np.where(m, x, -np.inf)), r"\[a fully masked row\] NaN at position \(1, 0\)"),
        (lambda x, m: _stable_softmax(x), r"\[some keys masked\] wrong value"),
        (lambda x, m: _masked_ok(x, ~m), r"wrong value"),
        (lambda x, m: _masked_ok(x, m).T, r"transposed"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
    "attention": (ex.check_attention, [
        (lambda Q, K, V: (lambda w: (w @ V, w))(_stable_softmax(Q @ K.T)), r"not scaled: divide the scores by √d_k"),
        (lambda Q, K, V: _attention_ok(Q, K, V)[0], r"expected a tuple of 2 results"),
        (lambda Q, K, V: (_attention_ok(Q, K, V)[0].T, _attention_ok(Q, K, V)[1]), r"wrong shape"),
        (lambda Q, K, V: (_attention_ok(Q, K, V)[0] + 1, _attention_ok(Q, K, V)[1]), r"wrong value at position \(0, 0\)"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
    "hand": (lambda answer_fn: ex.check_hand_weights(answer_fn()), [
        (lambda: [0.21, 0.21, 0.58], r"without dividing by √d_k"),
        (lambda: [0.25, 0.25], r"wrong shape"),
        (lambda: [0.5, 0.25, 0.25], r"wrong value at position \(0\): got 0.5$|got 0.5 Hint"),
        (lambda: None, r"returned None"),
        (lambda: [float("nan")] * 3, r"NaN at position \(0\)"),
        (lambda: ..., r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_hand_answers_are_not_given_away():
    assert "expected" not in repr(ex.check_hand_weights([0.5, 0.25, 0.25]))
    assert "expected" in repr(ex.check_softmax(lambda x: x))  # coding exercises do show it


def test_a_slow_function_is_stopped(monkeypatch):
    monkeypatch.setattr("course_lib.chapters._check.TIMEOUT_S", 0.2)
    from course_lib.chapters._check import Case, run_checker

    def forever(x):
        while True:
            pass
    verdict = run_checker("loop", forever, [Case("a", "甲", (1,), np.array(1.0))], timeout=0.2)
    assert not verdict.ok and "stopped after 0.2 s" in repr(verdict)


def test_passing_the_result_instead_of_the_function():
    assert "pass the function itself" in repr(ex.check_softmax(np.ones(3)))


def test_verdict_markdown_is_bilingual():
    md = ex.check_softmax(returns_none)._repr_markdown_()
    assert "returned None" in md and "返回了 None" in md


test_no_checker_ever_raises = never_raises_test(coding=(ex.check_softmax, ex.check_masked_softmax, ex.check_attention,), by_hand=(ex.check_hand_weights,))


def _exercise_labels():
    labels = []
    for page in pages():
        text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
        labels += re.findall(r"^```\{exercise(?:-start)?\}.*\n:label: (\S+)", text, re.M)
    return labels


def test_every_exercise_has_a_label_and_is_in_the_index():
    labels = _exercise_labels()
    assert len(labels) >= 4 and len(labels) == len(set(labels))
    index = (ROOT / "book" / "appendix" / "exercises.md").read_text(encoding="utf-8")
    missing = [lab for lab in labels if f"{{ref}}`{lab}`" not in index]
    assert not missing, f"book/appendix/exercises.md does not list {missing}"
    from course_lib import chapters
    unknown = [e.practice for e in chapters.ERRATA if e.practice and e.practice not in labels]
    assert not unknown, f"errata point at exercises that do not exist: {unknown}"


# --- chapter 2: live right answers, near misses, the tolerance pinned from both sides ----------------

HAND_SCORES = ex.HAND_K @ ex.HAND_Q                       # q·k_i, before the 1/√d_k
HAND_WEIGHTS = _stable_softmax(HAND_SCORES / np.sqrt(2.0))


def _masked_by_formula(x, mask):
    """exp over the allowed keys only, normalised; a row with no allowed key stays 0."""
    e = np.where(mask, np.exp(x - np.where(mask, x, -np.inf).max(axis=-1, keepdims=True)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


RIGHT = {
    "hand": (ex.check_hand_weights, HAND_WEIGHTS),
    "hand (two decimals, as asked)": (ex.check_hand_weights, HAND_WEIGHTS.round(2).tolist()),
    "hand (√2 taken as 1.41)": (ex.check_hand_weights, _stable_softmax(HAND_SCORES / 1.41).round(2)),
    "softmax": (ex.check_softmax, _stable_softmax),
    "softmax (float32)": (ex.check_softmax, lambda x: _stable_softmax(x.astype(np.float32))),
    "masked": (ex.check_masked_softmax, _masked_by_formula),
    "masked (library)": (ex.check_masked_softmax, _masked_ok),
    "attention": (ex.check_attention, _attention_ok),
}
test_right_answers_pass = right_answers_test(RIGHT)


def _scaled_by(size):
    """Attention whose scores are divided by √size(Q, K, V) instead of √d_k."""
    def attention(Q, K, V):
        w = _stable_softmax(Q @ K.T / np.sqrt(size(Q, K, V)))
        return w @ V, w
    return attention


NEAR_MISSES = {
    "hand": (ex.check_hand_weights, [
        ([0.29, 0.21, 0.54], r"wrong value at position \(0\): got 0.29"),        # issue #10: passed at atol 0.05
        (HAND_WEIGHTS.round(1), r"wrong value at position \(0\): got 0.2"),       # one decimal, two are asked
        (_stable_softmax(HAND_SCORES / 2).round(2), r"wrong value at position \(0\)"),   # ÷ d_k, not √d_k
        (_stable_softmax(HAND_SCORES).round(2), r"without dividing by √d_k"),     # d_k = 2: a small miss, named
        (HAND_WEIGHTS + [0.01, -0.01, 0.0], r"wrong value at position \(0\)"),    # right ± 2 × tolerance
    ]),
    "softmax": (ex.check_softmax, [
        (lambda x: _stable_softmax(np.swapaxes(x, 0, -1)).swapaxes(0, -1) if x.ndim > 1 else _stable_softmax(x),
         r"\[rows of a matrix\] wrong value"),                                    # over the wrong axis
        (lambda x: np.exp(x - x.max(axis=-1)) / np.exp(x - x.max(axis=-1)).sum(axis=-1, keepdims=True),
         r"\[rows of a matrix\] wrong value"),                                    # keepdims forgotten
        (lambda x: _stable_softmax(x).T if x.ndim == 2 else _stable_softmax(x),
         r"\[rows of a matrix\] the result is transposed"),                      # 2 × 2, asymmetric
    ]),
    "masked": (ex.check_masked_softmax, [
        (lambda x, m: _stable_softmax(np.where(m, x, -1e9)),
         r"\[a fully masked row\] wrong value at position \(1, 0\).*must be all zeros"),   # uniform, not 0
        (lambda x, m: _stable_softmax(x) * m, r"\[some keys masked\] wrong value"),       # not renormalised
        (lambda x, m: _masked_ok(x, m.T), r"\[some keys masked\] wrong value"),
        (lambda x, m: _masked_ok(x.T, m.T).T, r"\[no mask \(all True\)\] wrong value"),    # over the queries
    ]),
    "attention": (ex.check_attention, [
        (_scaled_by(lambda Q, K, V: V.shape[-1]), r"\[L_q ≠ L_k and d_v ≠ d_k\] wrong value"),   # √d_v
        (_scaled_by(lambda Q, K, V: K.shape[0]), r"\[chapter 2's single query\] wrong value"),   # √L_k
        (_scaled_by(lambda Q, K, V: K.shape[-1] ** 2), r"\[chapter 2's single query\] wrong value"),  # ÷ d_k
        (lambda Q, K, V: (lambda w: (w @ V, w))(_stable_softmax((Q @ K.T / np.sqrt(K.shape[-1])).T).T),
         r"\[chapter 2's single query\] wrong value"),                            # softmax over the queries
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_the_planted_bug_of_issue_10_is_caught():
    """check_hand_weights once had atol = 0.05 and accepted these answers: they are wrong."""
    for wrong in ([0.29, 0.21, 0.54], [0.2, 0.2, 0.5], HAND_WEIGHTS + [0.0, 0.0, 0.04]):
        assert not ex.check_hand_weights(wrong).ok, wrong


test_the_tolerance_is_pinned = tolerance_test({
    "hand": (ex.check_hand_weights, HAND_WEIGHTS, 0.005),
    "softmax": (ex.check_softmax, _stable_softmax, 1e-6),
    "masked": (ex.check_masked_softmax, _masked_by_formula, 1e-6),
    "attention": (ex.check_attention, _attention_ok, 1e-6),
})


def test_count_slips_names_only_an_exact_integer_slip():
    from course_lib.chapters._check import count_slips
    diagnose = count_slips({12: ("biases missing", "少了偏置"), 7: ("W_O missing", "少了 W_O")})
    assert diagnose(12) == ("biases missing", "少了偏置") and diagnose(np.float64(7.0)) == ("W_O missing", "少了 W_O")
    assert diagnose(12.5) is None and diagnose(13) is None and diagnose("twelve") is None and diagnose(None) is None
