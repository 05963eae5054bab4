"""Chapter 4: positional-encoding analysis, the source's logs, and the extrapolation probe."""

import math

import numpy as np
import pytest
import torch

from course_lib import chapters
from course_lib.chapters.ch04 import source
from course_lib.chapters.ch04 import worked as pe_examples
from course_lib.labs.extrapolation import PositionProbe, accuracy_by_position, previous_token_batch, train_probe
from course_lib.analysis.positional import (cosine_similarity, euclidean_distance, frequencies,
                                            shift_matrix, sinusoidal_float32)
from course_lib.scratch import sinusoidal_positional_encoding


def test_d4_by_hand():
    # The formula written out with math, one entry at a time.
    for pos in range(3):
        for j in range(4):
            angle = pos / 10000 ** ((j // 2 * 2) / 4)
            want = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert pe_examples.pe_d4_steps()["values3"][pos, j] == pytest.approx(want, abs=1e-15)


def test_float32_recipe_matches_torch_within_one_step():
    d_model = 64
    position = torch.arange(0, 20, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe = torch.zeros(20, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)
    ours = sinusoidal_float32(20, d_model)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, pe.numpy(), atol=2e-6)
    np.testing.assert_allclose(ours, sinusoidal_positional_encoding(20, d_model), atol=5e-6)


def test_shift_matrix_moves_every_position():
    PE = sinusoidal_positional_encoding(60, 16)
    for k in (-4, 0, 1, 7):
        R = shift_matrix(k, 16)
        lo, hi = max(0, -k), 60 - max(0, k)
        np.testing.assert_allclose(PE[lo:hi] @ R.T, PE[lo + k:hi + k], atol=1e-12)
        np.testing.assert_allclose(R.T @ R, np.eye(16), atol=1e-12)
    np.testing.assert_allclose(shift_matrix(-3, 16), shift_matrix(3, 16).T, atol=1e-15)


def test_similarities_depend_only_on_the_distance():
    PE = sinusoidal_positional_encoding(40, 32)
    C, D = cosine_similarity(PE), euclidean_distance(PE)
    for k in range(1, 10):
        assert np.ptp(np.diagonal(C, k)) < 1e-12 and np.ptp(np.diagonal(D, k)) < 1e-12
    np.testing.assert_allclose(np.diag(C), 1.0)
    np.testing.assert_allclose(frequencies(8), [1, 0.1, 0.01, 0.001])


def test_search_finds_one_width_for_each_table():
    assert pe_examples.ref10_d_model() == 64
    claims = {"dims": source.PE_TEST["claims"]["dims"]}
    assert pe_examples.matching_d_models(pe_examples.pe_test_dims, claims, range(12, 1025, 2)) == [512]


def test_chapter4_examples_are_registered_and_errata_cover_them():
    for name in ("pe_test", "pe_demo", "pe_ref10", "pe_d4"):
        assert name in chapters.EXAMPLES
    wrong = {(ex, st) for ex in ("pe_test", "pe_demo", "pe_ref10", "pe_d4")
             for st in chapters.EXAMPLES[ex][1]["claims"] if chapters.mismatches(ex, st)}
    # pos5_error matches: PyTorch's float32 recipe prints the source's column (a ✓ note, issue 15)
    assert wrong == {("pe_test", "length_changed"), ("pe_d4", "values")}
    kinds = {e.key: e.kind for e in chapters.ERRATA}
    assert kinds["ch04-pos5-error"] == "note" and kinds["ch04-length"] == "claim"


def test_compare_grid_lays_out_the_source_table():
    t = chapters.compare_grid("pe_d4", "values", ["pos 0", "pos 1"], ["0", "1", "2", "3"])
    assert t.rows[1][4] == "0.999 ✗ 1.000" and t.rows[0][1] == "0 ✓"
    with pytest.raises(ValueError, match="row_names × col_names must cover the 8"):
        chapters.compare_grid("pe_d4", "values", ["pos 0"], ["0", "1"])


def test_probe_trains_and_learned_rows_beyond_training_stay_untouched(monkeypatch):
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = PositionProbe("learned", max_len=24)
    before = model.pe.embedding.weight.detach().clone()
    losses = train_probe(model, L=8, steps=5)
    after = model.pe.embedding.weight.detach()
    assert len(losses) == 5 and all(np.isfinite(losses))
    assert not torch.equal(after[:8], before[:8]) and torch.equal(after[8:], before[8:])
    # Score the trained probe by hand: record its inputs and answers, count with a loop.
    seen, forward = [], model.forward

    def recording(ids):
        logits = forward(ids)
        seen.append((ids, logits.argmax(-1)))
        return logits

    monkeypatch.setattr(model, "forward", recording)
    acc = accuracy_by_position(model, 24, n=10)
    (ids, pred), = seen
    assert ids.shape == (10, 24) and acc.shape == (24,) and np.isnan(acc[0])
    right = [sum(int(pred[b, i]) == int(ids[b, i - 1]) for b in range(10)) for i in range(1, 24)]
    assert acc[1:].tolist() == pytest.approx([r / 10 for r in right], rel=1e-12, abs=0)
    ids, targets = previous_token_batch(3, 5, 7, torch.Generator().manual_seed(0))
    assert torch.equal(targets[:, 1:], ids[:, :-1])


def test_accuracy_by_position_of_a_probe_known_by_construction(monkeypatch):
    """A probe forced to answer the previous token for rows ``b < i % 11`` at position ``i``, and a
    wrong token for the others, scores ``(i % 11) / 10`` on 10 sequences."""
    model = PositionProbe("sinusoidal", vocab_size=16, max_len=30)

    def scripted(ids):
        B, L = ids.shape
        right = torch.roll(ids, 1, dims=1)                                  # ids[b, i - 1] (i >= 1)
        rows, pos = torch.arange(B)[:, None], torch.arange(L)[None, :]
        pred = torch.where(rows < pos % 11, right, (right + 1) % 16)
        return torch.nn.functional.one_hot(pred, 16).float()

    monkeypatch.setattr(model, "forward", scripted)
    acc = accuracy_by_position(model, 30, n=10)
    assert np.isnan(acc[0])
    assert acc[1:].tolist() == pytest.approx([(i % 11) / 10 for i in range(1, 30)], rel=1e-12, abs=0)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: shift_matrix(1.5, 8), TypeError, r"k must be an integer shift"),
    (lambda: shift_matrix(1, 7), ValueError, r"d_model must be even"),
    (lambda: frequencies(8, base=1), ValueError, r"base must be a number > 1"),
    (lambda: sinusoidal_float32(0, 8), ValueError, r"max_len must be an integer >= 1"),
    (lambda: cosine_similarity(np.ones(3)), ValueError, r"A must be a matrix \(n, d\)"),
    (lambda: cosine_similarity(np.ones((2, 3)), np.ones((2, 4))), ValueError, r"must have the same d"),
    (lambda: cosine_similarity(np.zeros((2, 3))), ValueError, r"must not contain zero rows"),
    (lambda: euclidean_distance("abc"), TypeError, r"A must be an array of real numbers"),
    (lambda: PositionProbe("rotary"), ValueError, r"positional must be one of"),
    (lambda: train_probe("model", L=8), TypeError, r"model must be a PositionProbe"),
    (lambda: previous_token_batch(2, 1, 5, torch.Generator()), ValueError, r"L must be an integer >= 2"),
    (lambda: previous_token_batch(2, 4, 5, None), TypeError, r"generator must be a torch.Generator"),
    (lambda: pe_examples.pe_ref10_steps(64, max_len=10), ValueError, r"max_len must be an integer >= 20"),
    (lambda: pe_examples.pe_test_dims(8), ValueError, r"d_model must be an integer >= 12"),
])
def test_bad_input_is_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_probe_recipe_pieces():
    from course_lib import repro
    from course_lib.labs import extrapolation as probe

    a, b = probe.probe_model("learned"), probe.probe_model("learned")
    assert torch.equal(a.pe.embedding.weight, b.pe.embedding.weight)
    assert a.head.out_features == probe.PROBE["vocab_size"] and a.pe.max_len == probe.PROBE["max_len"]
    acc = np.full(64, 0.5)
    acc[0], acc[16], acc[40] = np.nan, 1.0, 0.0
    spans = probe.span_accuracy(acc)
    assert list(spans) == list(probe.SPANS) and spans["16"] == 1.0 and spans["1–15"] == 0.5
    assert spans["32–63"] == pytest.approx(0.5 - 0.5 / 32)
    for kind in ("sinusoidal", "learned"):
        rec = repro.RECIPES[f"ch04-probe-{kind}"]
        assert rec.chapter == "ch04"
        assert set(rec.tolerance) == {f"acc_{n.replace('–', '_')}" for n in probe.SPANS}
    with pytest.raises(ValueError, match="acc must be a 1-D array of at least 64"):
        probe.span_accuracy(np.zeros(20))
    with pytest.raises(TypeError, match="unexpected keyword"):
        probe.train_probe(a, L=8, steps=1, verbose=True)
