"""Chapter 5's exercise checkers: right answers pass, typical mistakes get the
right message, and no learner code can make a checker raise."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.exercises._check import Verdict
from course_lib.exercises.ch05 import (check_attention_memory, check_causal_mask, check_noam_lr,
                                       check_padding_mask)


def _raises(*args):
    raise ValueError("boom")


def _none(*args):
    return None


def _stub(*args):
    raise NotImplementedError


def _lr(step, d, w):
    return d ** -0.5 * min(step ** -0.5, step * w ** -1.5)


RIGHT = [
    (check_causal_mask, lambda L: np.tril(np.ones((L, L), dtype=bool))),
    (check_padding_mask, lambda ids, pad: np.asarray(ids) != pad),
    (check_noam_lr, _lr),
    (lambda answer: check_attention_memory(answer()), lambda: 1024),
]


@pytest.mark.parametrize("check,fn", RIGHT)
def test_right_answers_pass(check, fn):
    verdict = check(fn)
    assert verdict.ok, repr(verdict)
    assert repr(verdict).startswith("✓")


WRONG = {
    "causal": (check_causal_mask, [
        (lambda L: np.triu(np.ones((L, L), dtype=bool)), r"\[L = 3\] the mask is transposed"),
        (lambda L: np.tril(np.ones((L, L), dtype=bool), k=-1), r"off by one: the diagonal must be True"),
        (lambda L: ~np.tril(np.ones((L, L), dtype=bool)), r"your mask is inverted"),
        (lambda L: np.ones((L, L + 1), dtype=bool), r"wrong shape: got \(1, 2\), expected \(1, 1\)"),
        (_raises, r"raised ValueError: boom"),
        (_none, r"returned None"),
        (lambda L: np.full((L, L), np.nan), r"NaN at position \(0, 0\)"),
        (_stub, r"not implemented yet"),
    ]),
    "padding": (check_padding_mask, [
        (lambda ids, pad: np.asarray(ids) == pad, r"inverted: True must mark the real tokens"),
        (lambda ids, pad: np.asarray(ids) != 0, r"\[pad_id = 9, padding anywhere\] wrong value.*use the pad_id"),
        (lambda ids, pad: (np.asarray(ids) != pad)[:, None, None, :], r"return \(B, L\)"),
        (lambda ids, pad: (np.asarray(ids) != pad).T, r"wrong shape"),
        (_raises, r"raised ValueError"),
        (_none, r"returned None"),
    ]),
    "warmup": (check_noam_lr, [
        (lambda s, d, w: min(s ** -0.5, s * w ** -1.5), r"missing the factor d_model\^-0.5"),
        (lambda s, d, w: d ** -0.5 * max(s ** -0.5, s * w ** -1.5), r"use min\(…\), not max\(…\)"),
        (lambda s, d, w: _lr(s + 1, d, w), r"wrong value at position \(0\)"),
        (lambda s, d, w: float("nan"), r"NaN at position \(0\)"),
        (_raises, r"raised ValueError"),
        (_none, r"returned None|NoneType|could not judge|raised TypeError"),
    ]),
    "memory": (lambda answer: check_attention_memory(answer()), [
        (lambda: 1024 * 2 ** 20, r"that is in bytes; divide by 2\^20"),
        (lambda: 64, r"every head has its own n × n matrix"),
        (lambda: 2048, r"float32 takes 4 bytes, not 8"),
        (lambda: 1000, r"wrong value at position \(\): got 1000$|got 1000 Hint"),
        (lambda: None, r"returned None"),
        (lambda: float("nan"), r"NaN"),
        (lambda: [1024, 1024], r"wrong shape"),
        (lambda: ..., r"not implemented yet"),
    ]),
}
WRONG_CASES = [(name, check, fn, match) for name, (check, subs) in WRONG.items() for fn, match in subs]


@pytest.mark.parametrize("name,check,fn,match", WRONG_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(WRONG_CASES)])
def test_wrong_submissions_get_the_right_message(name, check, fn, match):
    verdict = check(fn)
    assert not verdict.ok
    assert verdict.problems
    assert re.search(match, repr(verdict), re.M), f"{name}: {verdict!r} does not say {match!r}"


def test_hand_answer_is_not_given_away():
    assert "1024" not in repr(check_attention_memory(1000))


def _anything():
    arrays = st.integers(0, 3).flatmap(lambda n: st.lists(st.integers(1, 3), min_size=n, max_size=n)).map(
        lambda shape: np.full(shape, 0.5))
    return st.one_of(st.none(), st.text(max_size=5), st.integers(), st.floats(), arrays,
                     st.just(np.array([np.nan, np.inf])), st.just(object()), st.lists(st.floats(), max_size=4),
                     st.tuples(arrays, arrays), st.just({"a": 1}), st.just(...))


@settings(max_examples=40, deadline=None)
@given(result=_anything(), error=st.sampled_from([None, ValueError, ZeroDivisionError, SystemExit, RecursionError]))
def test_no_checker_ever_raises(result, error):
    def learner(*args):
        if error is not None:
            raise error("learner code failed")
        return result
    for check in (check_causal_mask, check_padding_mask, check_noam_lr):
        verdict = check(learner)
        assert isinstance(verdict, Verdict) and isinstance(repr(verdict), str)
    assert isinstance(check_attention_memory(result), Verdict)
