"""Chapter 7's checkers: right answers pass, typical mistakes get the right
message, and no learner code can make a checker raise."""

import numpy as np
import torch

from course_lib.chapters.ch07.exercises import (check_bert_embedding_params, check_layer_params,
                                                check_mlm_masking, reference_mlm_masking)
from course_lib.models import mask_tokens
from course_lib.analysis.sizes import build_on_meta
from conftest import raises, returns_none, tolerance_test, wrong_submissions_test, never_raises_test


def _all_mask(ids, s, a, r, m, sp):
    sel = (s < 0.15) & ~np.isin(ids, list(sp))
    return np.where(sel, m, ids), np.where(sel, ids, -100)


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


test_no_checker_ever_raises = never_raises_test(coding=(check_mlm_masking,), by_hand=(check_bert_embedding_params, check_layer_params))


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
    assert check_bert_embedding_params(BERT_EMB).ok


test_the_tolerance_is_pinned = tolerance_test({
    "hand": (check_bert_embedding_params, BERT_EMB, 0.5),
})


# --- one MiniLM layer by hand ----------------------------------------------------------------------

D_MINI, F_MINI = 384, 1536
LAYER = 4 * (D_MINI * D_MINI + D_MINI) + 2 * D_MINI * F_MINI + F_MINI + D_MINI + 4 * D_MINI

LAYER_WRONG = {
    "layer": (lambda fn: check_layer_params(fn()), [
        (lambda: LAYER - 4 * D_MINI - F_MINI - D_MINI, r"the biases are missing"),
        (lambda: LAYER - 4 * D_MINI, r"the two LayerNorms are missing"),
        (lambda: LAYER - 2 * D_MINI, r"a LayerNorm has two vectors"),
        (lambda: LAYER - D_MINI * D_MINI - D_MINI, r"W_O is missing"),
        (lambda: LAYER + 1, r"wrong value at position \(\)"),
        (lambda: "many", r"returned str, expected an array"),
        (lambda: ..., r"not implemented yet"),
    ]),
}
test_layer_mistakes_get_the_right_message = wrong_submissions_test(LAYER_WRONG)


def test_layer_count_is_minilms():
    """The hand count equals the parameters of the first layer of the real MiniLM in course_lib."""
    from course_lib.models.pretrained import load_minilm
    model, _ = load_minilm()
    assert sum(p.numel() for p in model.layers[0].parameters()) == LAYER
    assert check_layer_params(LAYER).ok
    assert "expected" not in repr(check_layer_params(LAYER + 1))
