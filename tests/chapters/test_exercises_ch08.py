"""Chapter 8's checkers: right answers pass, typical mistakes get the right
message, and no learner code can make a checker raise."""

import math

import numpy as np
import torch

from course_lib.chapters.ch08.exercises import (KV_NEW, KV_PROMPT, check_causal_mask, check_kv_positions,
                                                check_learning_rate, check_top_k, reference_learning_rate,
                                                reference_top_k)
from course_lib.labs import language_model as lm
from course_lib.labs.language_model_eval import positions_processed
from conftest import raises, returns_none, tolerance_test, wrong_submissions_test, never_raises_test


def _nan_probs(l, k, T):
    return np.full(np.shape(l), np.nan)


def _lr_off_by_one(step, lr, warmup, decay_steps, ratio):
    return lr * step / warmup if step < warmup else reference_learning_rate(step, lr, warmup, decay_steps, ratio)


def _lr_to_zero(step, lr, warmup, decay_steps, ratio):
    return reference_learning_rate(step, lr, warmup, decay_steps, 0.0)


def _lr_no_clip(step, lr, warmup, decay_steps, ratio):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = (step - warmup) / (decay_steps - warmup)
    return lr * (ratio + (1 - ratio) * 0.5 * (1 + math.cos(math.pi * p)))


def _lr_cosine_from_zero(step, lr, warmup, decay_steps, ratio):
    if step < warmup:
        return lr * (step + 1) / warmup
    p = min(1.0, (step - warmup) / decay_steps)
    return lr * (ratio + (1 - ratio) * 0.5 * (1 + math.cos(math.pi * p)))


WRONG = {
    "top_k": (check_top_k, [
        (lambda l, k, T: reference_top_k(l, k + 1, T), r"you kept 3 tokens: keep exactly the k = 2"),
        (lambda l, k, T: reference_top_k(l, k, 1.0), r"temperature was not applied"),
        (lambda l, k, T: np.exp(l) * 0 + 0.1, r"do not sum to 1|wrong value"),
        (lambda l, k, T: reference_top_k(l, k, T)[..., :-1], r"wrong shape"),
        (_nan_probs, r"NaN at position"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
    "causal": (check_causal_mask, [
        (lambda L: np.triu(np.ones((L, L), bool)), r"the mask is transposed"),
        (lambda L: np.tril(np.ones((L, L), bool), -1), r"off by one: the diagonal must be True"),
        (lambda L: ~np.tril(np.ones((L, L), bool)), r"your mask is inverted"),
        (lambda L: np.tril(np.ones((L, L + 1), bool)), r"wrong shape"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
    "schedule": (check_learning_rate, [
        (_lr_off_by_one, r"\[the first step\] off by one in the warm-up"),
        (_lr_to_zero, r"\[half way down\] the cosine falls to 0"),
        (_lr_no_clip, r"\[past the end\] past decay_steps the rate stays"),
        (_lr_cosine_from_zero, r"\[half way down\] the cosine runs over decay_steps - warmup steps"),
        (lambda *a: [reference_learning_rate(*a)] * 2, r"wrong shape"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
    "kv": (lambda fn: check_kv_positions(fn()), [
        (lambda: KV_PROMPT + KV_NEW - 1, r"that is the count with the cache"),
        (lambda: KV_NEW * KV_PROMPT, r"the text grows by one token every step"),
        (lambda: KV_NEW * (KV_PROMPT + KV_NEW), r"not every step reads the final length"),
        (lambda: sum(KV_PROMPT + i for i in range(1, KV_NEW + 1)), r"the first step reads the prompt alone"),
        (lambda: 391, r"wrong value at position \(\)"),
        (lambda: None, r"returned None"),
        (lambda: ..., r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def _top_k_torch(logits, k, T):
    z = torch.tensor(np.asarray(logits, dtype=float)) / T
    kth = torch.topk(z, min(k, z.shape[-1]), dim=-1).values[..., -1:]
    return torch.softmax(z.masked_fill(z < kth, float("-inf")), dim=-1).numpy()


def test_right_answers_pass():
    assert check_top_k(reference_top_k).ok
    assert check_top_k(_top_k_torch).ok
    assert check_causal_mask(lambda L: np.tril(np.ones((L, L), dtype=bool))).ok
    assert check_learning_rate(reference_learning_rate).ok
    assert check_kv_positions(positions_processed(KV_PROMPT, KV_NEW, False)).ok
    assert "expected" not in repr(check_kv_positions(positions_processed(KV_PROMPT, KV_NEW, False) + 1))


def test_reference_top_k_matches_gpt_generate_filtering():
    logits = torch.randn(3, 9, generator=torch.Generator().manual_seed(2))
    kth = torch.topk(logits / 0.7, 4).values[:, -1:]
    filtered = (logits / 0.7).masked_fill(logits / 0.7 < kth, float("-inf"))
    np.testing.assert_allclose(reference_top_k(logits.numpy(), 4, 0.7),
                               torch.softmax(filtered, -1).numpy(), atol=1e-6)


def test_reference_schedule_is_the_recipes():
    """The checker's schedule is the one the chapter's recipes train with (lm.learning_rate, a floor of lr / 10)."""
    cfg = lm.GPT_TRAIN
    assert all(reference_learning_rate(s, cfg["lr"], cfg["warmup"], cfg["steps"], 0.1)
               == lm.learning_rate(s) for s in range(cfg["steps"] + 50))


test_no_checker_ever_raises = never_raises_test(coding=(check_top_k, check_causal_mask, check_learning_rate),
                                                by_hand=(check_kv_positions,))

test_the_tolerance_is_pinned = tolerance_test({
    "top_k": (check_top_k, _top_k_torch, 1e-6),
    "kv": (check_kv_positions, positions_processed(KV_PROMPT, KV_NEW, False), 0.5),
})
