"""Chapter 7's checkers: right answers pass, typical mistakes get the right
message, and no learner code can make a checker raise."""

import numpy as np
import torch

from course_lib.chapters.ch07.exercises import (check_bert_embedding_params, check_causal_mask,
                                                check_mlm_masking, check_top_k, reference_mlm_masking,
                                                reference_top_k)
from course_lib.models import mask_tokens
from course_lib.analysis.sizes import build_on_meta
from conftest import raises, returns_none, tolerance_test, wrong_submissions_test, never_raises_test


def _all_mask(ids, s, a, r, m, sp):
    sel = (s < 0.15) & ~np.isin(ids, list(sp))
    return np.where(sel, m, ids), np.where(sel, ids, -100)


def _nan_probs(l, k, T):
    return np.full(np.shape(l), np.nan)


WRONG = {
    "mlm": (check_mlm_masking, [
        (_all_mask, r"every selected token became \[MASK\]: only 80 %"),
        (lambda ids, s, a, r, m, sp: reference_mlm_masking(ids, s, a, r, m, ()),
         r"a special token .* was selected"),
        (lambda ids, s, a, r, m, sp: (reference_mlm_masking(ids, s, a, r, m, sp)[0], ids),
         r"labels must be -100"),
        (lambda ids, s, a, r, m, sp: reference_mlm_masking(ids, s, a, r, m, sp)[0],
         r"expected a tuple of 2 results"),
        (lambda ids, s, a, r, m, sp: tuple(x[..., :-1] for x in reference_mlm_masking(ids, s, a, r, m, sp)),
         r"wrong shape"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
    ]),
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
    "hand": (lambda fn: check_bert_embedding_params(fn()), [
        (lambda: 30522 * 768, r"only the token embeddings"),
        (lambda: (30522 + 512 + 2) * 768, r"2 × 768 are missing"),
        (lambda: (30522 + 2 + 2) * 768, r"left out the position embeddings"),
        (lambda: [1, 2], r"wrong shape"),
        (lambda: float("nan"), r"NaN"),
        (lambda: None, r"returned None"),
        (lambda: ..., r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_right_answers_pass():
    assert check_mlm_masking(reference_mlm_masking).ok
    assert check_top_k(reference_top_k).ok
    assert check_causal_mask(lambda L: np.tril(np.ones((L, L), dtype=bool))).ok
    m = build_on_meta("BERT-base")
    n = sum(p.numel() for name, p in m.named_parameters()
            if name.split(".")[0] in ("tok_emb", "pos_emb", "seg_emb", "emb_norm"))
    assert check_bert_embedding_params(n).ok
    assert "expected" not in repr(check_bert_embedding_params(n + 1))   # the number stays hidden


def test_reference_masking_is_the_library_rule():
    """mask_tokens draws select_u, action_u and random ids in this order; with the
    same draws the reference gives the same corruption."""
    ids = torch.randint(5, 50, (4, 12), generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    inputs, labels = mask_tokens(ids, 4, 50, range(5), generator=g)
    g = torch.Generator().manual_seed(1)
    sel, act = torch.rand(ids.shape, generator=g), torch.rand(ids.shape, generator=g)
    rnd = torch.randint(50, ids.shape, generator=g, dtype=ids.dtype)
    ref = reference_mlm_masking(ids.numpy(), sel.numpy(), act.numpy(), rnd.numpy(), 4, range(5))
    np.testing.assert_array_equal(inputs.numpy(), ref[0])
    np.testing.assert_array_equal(labels.numpy(), ref[1])


def test_reference_top_k_matches_gpt_generate_filtering():
    logits = torch.randn(3, 9, generator=torch.Generator().manual_seed(2))
    kth = torch.topk(logits / 0.7, 4).values[:, -1:]
    filtered = (logits / 0.7).masked_fill(logits / 0.7 < kth, float("-inf"))
    np.testing.assert_allclose(reference_top_k(logits.numpy(), 4, 0.7),
                               torch.softmax(filtered, -1).numpy(), atol=1e-6)


test_no_checker_ever_raises = never_raises_test(coding=(check_mlm_masking, check_top_k, check_causal_mask,), by_hand=(check_bert_embedding_params,))


# --- near misses, live right answers, the tolerance pinned from both sides --------------------------

V, P, S, D = 30522, 512, 2, 768
BERT_EMB = (V + P + S) * D + 2 * D


def _mlm_by_formula(ids, s, a, r, m, sp, *, specials=None, swap_random_keep=False, mask_id=None, label_kept=True):
    """BERT's rule written out, with knobs for the near misses: the special ids, the 'random' and 'keep'
    branches swapped (random when action_u >= 0.9), the [MASK] id, whether the kept tokens get a label."""
    special = np.isin(ids, list(sp if specials is None else specials))
    picked = (s < 0.15) & ~special
    to_mask = picked & (a < 0.8)
    to_random = picked & ((a >= 0.9) if swap_random_keep else (a >= 0.8) & (a < 0.9))
    inputs = np.where(to_mask, m if mask_id is None else mask_id, np.where(to_random, r, ids))
    labelled = picked if label_kept else picked & (inputs != ids)
    return inputs, np.where(labelled, ids, -100)


def _top_k_torch(logits, k, T):
    z = torch.tensor(np.asarray(logits, dtype=float)) / T
    kth = torch.topk(z, min(k, z.shape[-1]), dim=-1).values[..., -1:]
    return torch.softmax(z.masked_fill(z < kth, float("-inf")), dim=-1).numpy()


def _top_k_partition(logits, k, T):
    """The k-th largest logit by np.partition: right while k <= V."""
    z = np.asarray(logits, dtype=float) / T
    kth = np.partition(z, -k, axis=-1)[..., -k:-k + 1 or None]
    e = np.where(z >= kth, np.exp(z - z.max(axis=-1, keepdims=True)), 0.0)
    return e / e.sum(axis=-1, keepdims=True)


def _top_k_smallest(logits, k, T):
    """np.argsort ascending, its first k taken: the k smallest logits."""
    z = np.asarray(logits, dtype=float) / T
    keep = np.zeros(z.shape, bool)
    np.put_along_axis(keep, np.argsort(z, axis=-1)[..., :k], True, axis=-1)
    e = np.where(keep, np.exp(z - z.max(axis=-1, keepdims=True)), 0.0)
    return e / e.sum(axis=-1, keepdims=True)


NEAR_MISSES = {
    "mlm": (check_mlm_masking, [
        (lambda *args: _mlm_by_formula(*args, specials=(2, 3)),
         r"\[a padded batch \(B, L\)\] a special token .* was selected"),      # <cls>, <sep> only: <pad> forgotten
        (lambda *args: _mlm_by_formula(*args, swap_random_keep=True), r"\[every branch of the rule\] wrong value"),
        (lambda *args: _mlm_by_formula(*args, mask_id=103), r"\[every branch of the rule\] wrong value"),   # BERT's id
        (lambda *args: _mlm_by_formula(*args, label_kept=False), r"the inputs are right but the labels are not"),
        (lambda ids, s, a, r, m, sp: _mlm_by_formula(ids, s, a, np.roll(r, 1, axis=-1), m, sp),
         r"\[every branch of the rule\] wrong value"),                          # random ids one position off
    ]),
    "top_k": (check_top_k, [
        (_top_k_partition, r"\[k ≥ V keeps every token\] raised ValueError"),
        (_top_k_smallest, r"\[one row, k = 2, T = 1\] wrong value"),
        (lambda l, k, T: reference_top_k(l, max(k - 1, 1), T), r"\[one row, k = 2, T = 1\] wrong value"),
        (lambda l, k, T: reference_top_k(l, k, 1 / T), r"\[a batch, k = 3, T = 0.5\] wrong value"),   # × T
        (lambda l, k, T: np.where(reference_top_k(l, k, T) > 0, reference_top_k(l, V, T), 0.0),
         r"\[one row, k = 2, T = 1\] the probabilities do not sum to 1"),       # not renormalised
    ]),
    "causal": (check_causal_mask, [
        (lambda L: np.tril(np.ones((L, L), bool), 1), r"\[L = 3\] wrong value at position \(0, 1\)"),
    ]),
    "hand": (check_bert_embedding_params, [
        ((30000 + P + S) * D + 2 * D, r"wrong value at position \(\)"),       # "a 30k vocabulary"
        ((V + 514 + S) * D + 2 * D, r"wrong value at position \(\)"),         # RoBERTa's 514 positions
        (BERT_EMB + 1, r"wrong value at position \(\)"),                      # right ± 2 × tolerance
        (BERT_EMB - 1, r"wrong value at position \(\)"),
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_live_right_answers_pass():
    assert check_mlm_masking(_mlm_by_formula).ok
    assert check_top_k(_top_k_torch).ok
    assert check_top_k(lambda l, k, T: (lambda p: p / p.sum(-1, keepdims=True))(_top_k_torch(l, k, 1.0) ** (1 / T))).ok
    assert check_causal_mask(lambda L: np.arange(L)[None, :] <= np.arange(L)[:, None]).ok
    assert check_bert_embedding_params(BERT_EMB).ok


test_the_tolerance_is_pinned = tolerance_test({
    "top_k": (check_top_k, _top_k_torch, 1e-6),
    "hand": (check_bert_embedding_params, BERT_EMB, 0.5),
})
