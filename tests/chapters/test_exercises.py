"""The exercise checkers judge correctly: right answers pass, typical mistakes
get the right message, and no learner code can make a checker raise."""

import re

import numpy as np
import pytest

from course_lib.chapters.ch02 import exercises as ex

import nbformat
from solutions import gated_cells
from toc import ROOT, notebooks, pages
from conftest import raises, returns_none, stub, wrong_submissions_test, never_raises_test

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
