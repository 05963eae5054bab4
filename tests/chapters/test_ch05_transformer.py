"""Chapter 5's tools: the translation task, the warm-up schedule and the cost measurements."""

import math

import numpy as np
import pytest
import torch

from course_lib.analysis import complexity
from course_lib.chapters.ch05 import source
from course_lib.chapters.ch05.errata import padding_changes_outputs
from course_lib.labs import translation as T
from course_lib.scratch import scaled_dot_product_attention


def test_sample_rules_and_the_source_count():
    counts = {rule: len(seqs) for rule, seqs in T.SAMPLE_RULES.items()}
    assert counts["all sequences of length 1–3 · 长度 1–3 的全部序列"] == 5 + 25 + 125
    assert sorted(r for r, n in counts.items() if n == 28) == sorted(
        [T.SOURCE_RULE, "all pairs + runs of 3 · 全部数字对 + 三连串"])
    train = T.training_sequences()
    assert len(train) == 28 and len({tuple(s) for s in train}) == 28
    assert all(s in train for s, _ in source.TRANSLATION["test_cases"])


def test_make_batch_pads_and_shifts():
    src, tgt_in, tgt_out = T.make_batch([[3, 4], [2, 3, 4]])
    assert src.tolist() == [[3, 4, 0], [2, 3, 4]]
    assert tgt_in.tolist() == [[6, 3, 4, 0], [6, 2, 3, 4]]
    assert tgt_out.tolist() == [[3, 4, 7, 0], [2, 3, 4, 7]]


@pytest.mark.parametrize("bad,err,match", [
    ([], TypeError, "non-empty list"), ("34", TypeError, "non-empty list"),
    ([[3, 6]], ValueError, r"seqs\[0\] must be a non-empty sequence of digits 1–5"),
    ([[1], []], ValueError, r"seqs\[1\]"),
])
def test_make_batch_names_bad_input(bad, err, match):
    with pytest.raises(err, match=match):
        T.make_batch(bad)


def test_noam_lr_peaks_at_warmup():
    lrs = [T.noam_lr(s, 512, 4000) for s in range(1, 12001)]
    assert int(np.argmax(lrs)) + 1 == 4000
    assert math.isclose(max(lrs), 1 / math.sqrt(512 * 4000))
    assert math.isclose(T.noam_lr(10, 32, 50, 0.2), 0.2 * 32 ** -0.5 * 10 * 50 ** -1.5)
    with pytest.raises(ValueError, match="step must be an integer >= 1"):
        T.noam_lr(0, 512, 4000)
    with pytest.raises(ValueError, match="factor must be a positive number"):
        T.noam_lr(1, 512, 4000, factor=0)


def test_split_is_stratified_disjoint_and_complete():
    train, held = T.split_sequences((1, 2, 3, 4), held_out=0.2, seed=0)
    assert len(held) == 1 + 5 + 25 + 125 and len(train) + len(held) == 780
    assert not {tuple(s) for s in train} & {tuple(s) for s in held}
    assert T.split_sequences((1, 2, 3, 4), 0.2, 0) == (train, held)
    with pytest.raises(ValueError, match="held_out must be a fraction"):
        T.split_sequences((1, 2), held_out=1.5)
    with pytest.raises(TypeError, match="lengths must be a list of positive integers"):
        T.split_sequences(3, held_out=0.2)


def test_translator_init_training_and_decoding():
    torch.set_num_threads(2)
    model = T.make_translator(16, seed=0)
    assert torch.all(model.src_embed.weight[0] == 0) and torch.all(model.tgt_embed.weight[0] == 0)
    assert abs(model.tgt_embed.weight[1:].std().item() - 16 ** -0.5) < 0.1
    seen = []
    losses = T.train_translator(model, [[1, 2], [3]], steps=3, lr=lambda s: 1e-3, batch_size=2,
                                on_step=lambda step, m: seen.append((step, m.training)))
    assert len(losses) == 3 and all(np.isfinite(losses)) and [s for s, _ in seen] == [1, 2, 3]
    assert not model.training
    out = T.translate(model, [[1, 2], [5]])
    assert all(o[0] == "<SOS>" for o in out)
    assert 0.0 <= T.exact_match(model, [[1, 2], [5]]) <= 1.0
    assert np.isfinite(T.full_loss(model, [[1, 2]]))
    with pytest.raises(TypeError, match="lr must be a function"):
        T.train_translator(model, [[1]], steps=1, lr=0.001)
    assert T.expected_tokens([3, 4]) == ["<SOS>", "C", "D", "<EOS>"]


def test_attention_and_rnn_forward():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 4))
    np.testing.assert_allclose(complexity.attention_forward(X), scaled_dot_product_attention(X, X, X)[0])
    W, U = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    h, H = np.zeros(4), []
    for x in X:
        h = np.tanh(x @ W + h @ U)
        H.append(h)
    np.testing.assert_allclose(complexity.rnn_forward(X, W, U), np.array(H))
    with pytest.raises(ValueError, match=r"U must have shape \(d, d\) = \(4, 4\)"):
        complexity.rnn_forward(X, W, np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"X must be a matrix \(n, d\)"):
        complexity.attention_forward(np.ones(3))


def test_memory_is_the_score_matrix():
    assert complexity.attention_matrix_bytes(4096, num_heads=16) == 2 ** 30
    n = 1024
    X = np.random.default_rng(0).normal(size=(n, 16))
    peak = complexity.peak_bytes(complexity.attention_forward, X)
    assert n * n * 8 <= peak < 1.2 * n * n * 8
    with pytest.raises(TypeError, match="fn must be callable"):
        complexity.peak_bytes(3)


def test_loglog_slope():
    sizes = np.array([1.0, 2.0, 4.0, 8.0])
    assert math.isclose(complexity.loglog_slope(sizes, 3 * sizes ** 2), 2.0)
    with pytest.raises(ValueError, match="must be positive"):
        complexity.loglog_slope([1, 2], [0, 1])
    with pytest.raises(ValueError, match="same length"):
        complexity.loglog_slope([1, 2, 3], [1, 2])


def test_the_source_encoder_layer_is_changed_by_padding():
    assert padding_changes_outputs() > 1e-3


def test_best_seconds_times_a_call():
    t = complexity.best_seconds(complexity.attention_forward, np.ones((8, 4)), repeats=2)
    assert isinstance(t, float) and t > 0
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        complexity.best_seconds(complexity.attention_forward, np.ones((8, 4)), repeats=0)
