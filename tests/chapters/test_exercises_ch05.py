"""Chapter 5's exercise checkers: right answers pass, typical mistakes get the
right message, and no learner code can make a checker raise."""

import numpy as np
import pytest

from course_lib.chapters.ch05.exercises import (MEMORY_QUESTION, check_attention_memory, check_causal_mask,
                                                check_noam_lr, check_padding_mask)
from conftest import raises, returns_none, stub, tolerance_test, wrong_submissions_test, never_raises_test


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
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (lambda L: np.full((L, L), np.nan), r"NaN at position \(0, 0\)"),
        (stub, r"not implemented yet"),
    ]),
    "padding": (check_padding_mask, [
        (lambda ids, pad: np.asarray(ids) == pad, r"inverted: True must mark the real tokens"),
        (lambda ids, pad: np.asarray(ids) != 0, r"\[pad_id = 9, padding anywhere\] wrong value.*use the pad_id"),
        (lambda ids, pad: (np.asarray(ids) != pad)[:, None, None, :], r"return \(B, L\)"),
        (lambda ids, pad: (np.asarray(ids) != pad).T, r"wrong shape"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
    "warmup": (check_noam_lr, [
        (lambda s, d, w: min(s ** -0.5, s * w ** -1.5), r"missing the factor d_model\^-0.5"),
        (lambda s, d, w: d ** -0.5 * max(s ** -0.5, s * w ** -1.5), r"use min\(…\), not max\(…\)"),
        (lambda s, d, w: _lr(s + 1, d, w), r"wrong value at position \(0\)"),
        (lambda s, d, w: float("nan"), r"NaN at position \(0\)"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None|NoneType|could not judge|raised TypeError"),
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
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_hand_answer_is_not_given_away():
    assert "1024" not in repr(check_attention_memory(1000))


test_no_checker_ever_raises = never_raises_test(coding=(check_causal_mask, check_padding_mask, check_noam_lr,), by_hand=(check_attention_memory,))


# --- near misses, live right answers, the tolerance pinned from both sides --------------------------

MEMORY = MEMORY_QUESTION
MIB = MEMORY["batch"] * MEMORY["num_heads"] * MEMORY["n"] ** 2 * MEMORY["bytes_per_number"] / 2 ** 20


def _mask_from_lengths(ids, pad):
    """Every token before the first <pad> is real: right while padding sits only at the end."""
    return np.cumprod(np.asarray(ids) != pad, axis=1).astype(bool)


NEAR_MISSES = {
    "causal": (check_causal_mask, [
        (lambda L: np.tril(np.ones((L, L), dtype=bool), k=1), r"\[L = 3\] wrong value at position \(0, 1\)"),
        (lambda L: np.ones((L, L), dtype=bool), r"\[L = 3\] wrong value"),        # right only for L = 1
    ]),
    "padding": (check_padding_mask, [
        (_mask_from_lengths, r"\[pad_id = 9, padding anywhere\] wrong value"),
        (lambda ids, pad: np.asarray(ids) > 0, r"\[pad_id = 9, padding anywhere\] wrong value"),
    ]),
    "warmup": (check_noam_lr, [
        (lambda s, d, w: _lr(max(s - 1, 1), d, w), r"wrong value at position \(1\)"),     # steps from 0
        (lambda s, d, w: float(f"{_lr(s, d, w):.3g}"), r"wrong value at position"),         # 3 significant digits
        (lambda s, d, w: _lr(s, d, w + 1), r"wrong value at position \(1\)"),      # warm-up one step off
    ]),
    "memory": (check_attention_memory, [
        (MIB * 2 ** 20 / 1e6, r"wrong value at position \(\)"),      # MB (10^6 bytes), not MiB
        (MIB / 1024, r"wrong value at position \(\)"),               # GiB
        (MIB + 1, r"wrong value at position \(\)"),                  # right ± 2 × tolerance
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_live_right_answers_pass():
    from course_lib.scratch.masks import causal_mask, padding_mask_from_ids
    assert check_causal_mask(causal_mask).ok
    assert check_causal_mask(lambda L: np.tril(np.ones((L, L)))).ok                      # 0/1 floats
    assert check_padding_mask(lambda ids, pad: padding_mask_from_ids(ids, pad)[:, 0, 0]).ok
    assert check_noam_lr(lambda s, d, w: float(np.float32(_lr(s, d, w)))).ok            # float32 is fine
    assert check_attention_memory(MIB).ok and check_attention_memory(round(MIB)).ok


test_the_tolerance_is_pinned = tolerance_test({
    "warmup": (check_noam_lr, _lr, 1e-9),
    "memory": (check_attention_memory, MIB, 0.5),
})
