"""Chapter 6's exercise checkers: right answers pass, typical mistakes get the
right message, and no learner code can make a checker raise."""

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.exercises._check import Verdict
from course_lib.exercises.ch06 import (HAND_CONFIG, check_hand_count, check_patchify,
                                       check_pos_embedding_shape)
from course_lib.models.vit import patchify


def _right_patchify(images, P):
    return patchify(torch.tensor(images), P).numpy()


def _channel_first(images, P):
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, -1, C * P * P)


def _column_major(images, P):
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 4, 2, 3, 5, 1)
    return x.reshape(B, -1, P * P * C)


def _raises(*args):
    raise ValueError("boom")


def _none(*args):
    return None


def _stub(*args):
    raise NotImplementedError


N = (HAND_CONFIG["image_size"] // HAND_CONFIG["patch_size"]) ** 2
PROJ = 16 * 16 * 3 * 768 + 768

WRONG = {
    "patchify": (check_patchify, [
        (lambda im, P: _right_patchify(im, P).transpose(0, 2, 1), r"last two axes are swapped"),
        (_channel_first, r"\[two RGB 6 × 6 images, P = 3\] each patch is flattened channel first"),
        (_column_major, r"patches are in column order"),
        (lambda im, P: _right_patchify(im, P)[:, :-1], r"wrong shape"),
        (lambda im, P: _right_patchify(im, P) * np.nan, r"NaN at position \(0, 0, 0\)"),
        (_raises, r"raised ValueError: boom"),
        (_none, r"returned None"),
        (_stub, r"not implemented yet"),
    ]),
    "count": (lambda f: check_hand_count(f()), [
        (lambda: [N, N, PROJ], r"also sees the \[CLS\] token"),
        (lambda: [N, N + 1, PROJ - 768], r"also has a bias"),
        (lambda: [24, 25, PROJ], r"number of patches per side"),
        (lambda: [N, N + 1], r"wrong shape"),
        (lambda: [N + 1, N + 2, PROJ], r"wrong value at position \(0\): got 577 Hint"),
        (lambda: None, r"returned None"),
        (lambda: [float("nan")] * 3, r"NaN at position \(0\)"),
        (lambda: ..., r"not implemented yet"),
    ]),
    "pos": (check_pos_embedding_shape, [
        (lambda s, p, d: ((s // p) ** 2, d), r"\[CLS\] token has a position too"),
        (lambda s, p, d: (s // p + 1, d), r"whole grid"),
        (lambda s, p, d: (d, (s // p) ** 2 + 1), r"rows are positions"),
        (lambda s, p, d: ((s // p) ** 2 + 1,), r"wrong shape"),
        (_raises, r"raised ValueError"),
        (_none, r"returned None"),
    ]),
}
CASES = [(name, check, fn, match) for name, (check, subs) in WRONG.items() for fn, match in subs]


@pytest.mark.parametrize("name,check,fn,match", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_wrong_submissions_get_the_right_message(name, check, fn, match):
    verdict = check(fn)
    assert not verdict.ok and verdict.problems
    assert re.search(match, repr(verdict), re.M), f"{name}: {verdict!r} does not say {match!r}"


def test_right_answers_pass():
    assert check_patchify(_right_patchify).ok
    assert check_hand_count([N, N + 1, PROJ]).ok
    assert check_pos_embedding_shape(lambda s, p, d: ((s // p) ** 2 + 1, d)).ok


def test_hand_answers_are_not_given_away():
    assert "expected" not in repr(check_hand_count([1, 2, 3]))


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
    for check in (check_patchify, check_pos_embedding_shape):
        verdict = check(learner)
        assert isinstance(verdict, Verdict) and isinstance(repr(verdict), str)
    assert isinstance(check_hand_count(result), Verdict)
    assert isinstance(repr(check_hand_count(result)), str)
