"""Chapter 6's exercise checkers: right answers pass, typical mistakes get the
right message, and no learner code can make a checker raise."""


import numpy as np
import pytest
import torch
from hypothesis import given, settings

from course_lib.exercises._check import Verdict
from course_lib.exercises.ch06 import (HAND_CONFIG, check_hand_count, check_patchify,
                                       check_pos_embedding_shape)
from course_lib.models.vit import patchify
from checker_kit import ERRORS, anything, assert_says, learner, raises, returns_none, stub, wrong_cases  # noqa: E402


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





N = (HAND_CONFIG["image_size"] // HAND_CONFIG["patch_size"]) ** 2
PROJ = 16 * 16 * 3 * 768 + 768

WRONG = {
    "patchify": (check_patchify, [
        (lambda im, P: _right_patchify(im, P).transpose(0, 2, 1), r"last two axes are swapped"),
        (_channel_first, r"\[two RGB 6 × 6 images, P = 3\] each patch is flattened channel first"),
        (_column_major, r"patches are in column order"),
        (lambda im, P: _right_patchify(im, P)[:, :-1], r"wrong shape"),
        (lambda im, P: _right_patchify(im, P) * np.nan, r"NaN at position \(0, 0, 0\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
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
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
}
CASES = wrong_cases(WRONG)


@pytest.mark.parametrize("name,check,fn,match", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_wrong_submissions_get_the_right_message(name, check, fn, match):
    assert_says(check(fn), match, name)


def test_right_answers_pass():
    assert check_patchify(_right_patchify).ok
    assert check_hand_count([N, N + 1, PROJ]).ok
    assert check_pos_embedding_shape(lambda s, p, d: ((s // p) ** 2 + 1, d)).ok


def test_hand_answers_are_not_given_away():
    assert "expected" not in repr(check_hand_count([1, 2, 3]))




@settings(max_examples=40, deadline=None)
@given(result=anything(), error=ERRORS)
def test_no_checker_ever_raises(result, error):
    fn = learner(result, error)
    for check in (check_patchify, check_pos_embedding_shape):
        verdict = check(fn)
        assert isinstance(verdict, Verdict) and isinstance(repr(verdict), str)
    assert isinstance(check_hand_count(result), Verdict)
    assert isinstance(repr(check_hand_count(result)), str)
