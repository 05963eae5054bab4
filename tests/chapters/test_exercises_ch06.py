"""Chapter 6's exercise checkers: right answers pass, typical mistakes get the
right message, and no learner code can make a checker raise."""

import numpy as np
import torch

from course_lib.chapters.ch06.exercises import (HAND_CONFIG, check_hand_count, check_patchify,
                                                check_pos_embedding_shape)
from course_lib.models.vit import patchify
from conftest import raises, returns_none, stub, tolerance_test, wrong_submissions_test, never_raises_test


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


# --- near misses, live right answers, the tolerance pinned from both sides --------------------------

def _square_only(images, P):
    """Patchify that assumes a square image: W / P taken as H / P."""
    B, C, H, W = images.shape
    n = H // P
    return images.reshape(B, C, n, P, n, P).transpose(0, 2, 4, 3, 5, 1).reshape(B, n * n, P * P * C)


def _columns_within_patch(images, P):
    """Each patch flattened column by column: (column, row, channel)."""
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // P, P, W // P, P).transpose(0, 2, 4, 5, 3, 1)
    return x.reshape(B, -1, P * P * C)


NEAR_MISSES = {
    "patchify": (check_patchify, [
        (_square_only, r"\[a 4 × 8 image \(not square\), P = 2\] raised ValueError"),
        (_columns_within_patch, r"\[one 4 × 4 greyscale image, P = 2\] wrong value at position \(0, 0, 1\)"),
    ]),
    "count": (check_hand_count, [
        ([196, 197, PROJ], r"wrong value at position \(0\)"),          # the 224 × 224 image of ViT-B/16
        ([N, N + 2, PROJ], r"wrong value at position \(1\)"),          # one extra token
        ([N, N + 1, PROJ + 1], r"wrong value at position \(2\)"),      # right ± 2 × tolerance
        ([N, N + 1, PROJ - 1], r"wrong value at position \(2\)"),
    ]),
    "pos": (check_pos_embedding_shape, [
        (lambda s, p, d: (s // p ** 2 + 1, d), r"\[image 224, patch 16, d_model 768\] wrong value"),   # precedence
        (lambda s, p, d: ((s // p) ** 2 + 2, d), r"wrong value at position \(0\)"),
        (lambda s, p, d: ((s // p) ** 2 + 1, d + 1), r"wrong value at position \(1\)"),
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_live_right_answers_pass():
    from course_lib.models.vit import PatchEmbedding
    c = HAND_CONFIG
    embed = PatchEmbedding(c["image_size"], c["patch_size"], c["in_channels"], c["d_model"])
    live = [embed.num_patches, embed.num_patches + 1, sum(p.numel() for p in embed.parameters())]
    assert check_hand_count(live).ok
    assert check_patchify(lambda im, P: np.asarray(_patchify_loop(im, P))).ok
    assert check_pos_embedding_shape(lambda s, p, d: torch.zeros((s // p) ** 2 + 1, d).shape).ok


def _patchify_loop(images, P):
    """Patches by explicit loops: raster order, each patch row by row with a pixel's channels together."""
    B, C, H, W = images.shape
    return [[images[b, :, r:r + P, c:c + P].transpose(1, 2, 0).ravel()
             for r in range(0, H, P) for c in range(0, W, P)] for b in range(B)]


test_the_tolerance_is_pinned = tolerance_test({
    "patchify": (check_patchify, _right_patchify, 1e-6),
    "count": (check_hand_count, [N, N + 1, PROJ], 0.5),
})


# --- images and words (CLIP): the symmetric InfoNCE loss and retrieval recall@1 by hand -------------

import pytest  # noqa: E402

from course_lib.chapters.ch06.exercises import RETRIEVAL, check_clip_loss, check_retrieval_by_hand  # noqa: E402


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _ce(S):
    """Mean of -log softmax(row)[i] over the rows i, written with scipy's logsumexp."""
    from scipy.special import logsumexp
    return float(np.mean(logsumexp(S, axis=1) - np.diag(S)))


def _right_clip(u, v, tau):
    S = _unit(u) @ _unit(v).T / tau
    return 0.5 * (_ce(S) + _ce(S.T))


def _torch_clip(u, v, tau):
    from course_lib.models.clip import clip_loss
    return clip_loss(torch.tensor(u), torch.tensor(v), tau).item()


# by construction, from RETRIEVAL's numbers: rows 0 and 1 find their digit, row 2 finds "一";
# columns "seven", "一", "七" find their digit, column "one" finds image 2 (a 7)
RIGHT_RETRIEVAL = [2 / 3, 3 / 4]

CLIP_WRONG = {
    "clip_loss": (check_clip_loss, [
        (lambda u, v, t: _ce(_unit(u) @ _unit(v).T / t), r"\[four pairs.*only the image → text direction"),
        (lambda u, v, t: _ce((_unit(u) @ _unit(v).T / t).T), r"\[four pairs.*only the text → image direction"),
        (lambda u, v, t: 2 * _right_clip(u, v, t), r"added, not averaged"),
        (lambda u, v, t: 0.5 * (_ce(u @ v.T / t) + _ce((u @ v.T / t).T)), r"\[four pairs.*not normalised"),
        (lambda u, v, t: _right_clip(u, v, 1 / t), r"multiplied by τ"),
        (lambda u, v, t: len(u) * _right_clip(u, v, t), r"\[four pairs.*summed: take their mean"),
        (lambda u, v, t: np.array([_right_clip(u, v, t)]), r"wrong shape"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "retrieval": (lambda f: check_retrieval_by_hand(f()), [
        (lambda: RIGHT_RETRIEVAL[::-1], r"directions are swapped"),
        (lambda: [1 / 3, 3 / 4], r"names the image's digit"),
        (lambda: [2 / 3, 0.0], r"each column's largest similarity"),
        (lambda: [2 / 3, 1.0], r"wrong value at position \(1\): got 1 Hint"),
        (lambda: [2 / 3], r"wrong shape"),
        (lambda: ..., r"not implemented yet"),
    ]),
}
test_clip_wrong_submissions_get_the_right_message = wrong_submissions_test(CLIP_WRONG)

CLIP_NEAR_MISSES = {
    "clip_loss": (check_clip_loss, [
        # each embedding dimension normalised over the batch (axis 0) instead of each vector (axis 1)
        (lambda u, v, t: _right_clip(u / np.linalg.norm(u, axis=0), v / np.linalg.norm(v, axis=0), t),
         r"\[four pairs, not normalised, τ = 0.1\] wrong value"),
        (lambda u, v, t: _right_clip(u, v, t) + 1e-4, r"wrong value at position \(\)"),
    ]),
    "retrieval": (check_retrieval_by_hand, [
        ([0.66, 0.75], r"wrong value at position \(0\)"),          # rounded too far (tolerance 0.005)
        ([2 / 3, 0.5], r"wrong value at position \(1\)"),
    ]),
}
test_clip_near_misses_are_rejected = wrong_submissions_test(CLIP_NEAR_MISSES)


def test_clip_right_answers_pass():
    assert check_clip_loss(_right_clip).ok
    assert check_clip_loss(_torch_clip).ok                      # course_lib's loss is a right answer
    assert check_retrieval_by_hand(RIGHT_RETRIEVAL).ok
    assert check_retrieval_by_hand([0.667, 0.75]).ok            # three decimals are enough
    assert "expected" not in repr(check_retrieval_by_hand([0.1, 0.2]))


def test_retrieval_exercise_matches_course_lib():
    from course_lib.models.clip import recall_at_1
    got = recall_at_1(torch.tensor(RETRIEVAL["similarity"]), torch.tensor(RETRIEVAL["image_digits"]),
                      torch.tensor(RETRIEVAL["prompt_digits"]))
    assert got == (pytest.approx(RIGHT_RETRIEVAL[0]), pytest.approx(RIGHT_RETRIEVAL[1]))


test_clip_checkers_never_raise = never_raises_test(coding=(check_clip_loss,), by_hand=(check_retrieval_by_hand,))

test_clip_tolerance_is_pinned = tolerance_test({
    "clip_loss": (check_clip_loss, _right_clip, 1e-6),
    "retrieval": (check_retrieval_by_hand, RIGHT_RETRIEVAL, 0.005),
})
