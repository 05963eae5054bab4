"""Chapter 6's exercise checkers: right answers pass, typical mistakes get the
right message, and no learner code can make a checker raise."""

import numpy as np
import torch

from course_lib.chapters.ch06.exercises import (HAND_CONFIG, check_hand_count, check_patchify,
                                                check_pos_embedding_shape)
from course_lib.models.vit import patchify
from conftest import raises, returns_none, stub, wrong_submissions_test, never_raises_test


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
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_right_answers_pass():
    assert check_patchify(_right_patchify).ok
    assert check_hand_count([N, N + 1, PROJ]).ok
    assert check_pos_embedding_shape(lambda s, p, d: ((s // p) ** 2 + 1, d)).ok


def test_hand_answers_are_not_given_away():
    assert "expected" not in repr(check_hand_count([1, 2, 3]))


test_no_checker_ever_raises = never_raises_test(coding=(check_patchify, check_pos_embedding_shape,), by_hand=(check_hand_count,))
