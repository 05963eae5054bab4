"""Chapter 5's tools: the translation task, the warm-up schedule and the cost measurements."""

import math

import numpy as np
import pytest
import torch

from course_lib.analysis import complexity
from course_lib.chapters.ch05 import source
from course_lib.chapters.ch05.errata import padding_changes_outputs
from course_lib.labs import translation as T
from course_lib.labs import translation_data as TD
from course_lib.scratch import scaled_dot_product_attention


def test_sample_rules_and_the_source_count():
    counts = {rule: len(seqs) for rule, seqs in TD.SAMPLE_RULES.items()}
    assert counts["all sequences of length 1–3 · 长度 1–3 的全部序列"] == 5 + 25 + 125
    assert sorted(r for r, n in counts.items() if n == 28) == sorted(
        [TD.SOURCE_RULE, "all pairs + runs of 3 · 全部数字对 + 三连串"])
    train = TD.training_sequences()
    assert len(train) == 28 and len({tuple(s) for s in train}) == 28
    assert all(s in train for s, _ in source.TRANSLATION["test_cases"])


def test_make_batch_pads_and_shifts():
    src, tgt_in, tgt_out = TD.make_batch([[3, 4], [2, 3, 4]])
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
        TD.make_batch(bad)


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
    train, held = TD.split_sequences((1, 2, 3, 4), held_out=0.2, seed=0)
    assert len(held) == 1 + 5 + 25 + 125 and len(train) + len(held) == 780
    assert not {tuple(s) for s in train} & {tuple(s) for s in held}
    assert TD.split_sequences((1, 2, 3, 4), 0.2, 0) == (train, held)
    with pytest.raises(ValueError, match="held_out must be a fraction"):
        TD.split_sequences((1, 2), held_out=1.5)
    with pytest.raises(TypeError, match="lengths must be a list of positive integers"):
        TD.split_sequences(3, held_out=0.2)


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
    right, n = _exact_by_hand(model, [[1, 2], [5]])
    assert T.exact_match(model, [[1, 2], [5]]) == right / n
    assert np.isfinite(T.full_loss(model, [[1, 2]]))
    with pytest.raises(TypeError, match="lr must be a function"):
        T.train_translator(model, [[1]], steps=1, lr=0.001)
    assert TD.expected_tokens([3, 4]) == ["<SOS>", "C", "D", "<EOS>"]


def _exact_by_hand(model, seqs, max_len=6):
    """How many of ``seqs`` greedy decoding translates exactly, counted with a loop: the letters
    share the digits' ids (1–5), <PAD> = 0, <SOS> = 6, <EOS> = 7."""
    width = max(len(s) for s in seqs)
    src = torch.tensor([list(s) + [0] * (width - len(s)) for s in seqs])
    out = model.greedy_decode(src, 6, 7, max_len=max_len).tolist()
    right = 0
    for row, s in zip(out, seqs):
        if 7 in row and row[:row.index(7)] == list(s):
            right += 1
    return right, len(seqs)


def _decoding(answers):
    """A stand-in for ``greedy_decode`` that returns fixed rows."""
    return lambda src, sos_id, eos_id, max_len: torch.tensor(answers)


@pytest.mark.parametrize("answers,expected", [
    ([[1, 2, 7], [5, 7, 0]], 1.0),            # both right
    ([[1, 2, 7], [4, 7, 0]], 0.5),            # a wrong letter
    ([[1, 2, 3], [5, 7, 0]], 0.5),            # no <EOS>
    ([[1, 2], [5, 7]], 0.5),                  # the right letters, but ran out before <EOS>
    ([[1, 2, 2], [5, 7, 0]], 0.5),            # a letter too many, no <EOS>
    ([[1, 7, 0], [5, 7, 0]], 0.5),            # a letter missing
    ([[1, 2, 7], [5, 5, 7]], 0.5),            # a letter too many before <EOS>
    ([[2, 1, 7], [7, 0, 0]], 0.0),            # wrong order; nothing before <EOS>
])
def test_exact_match_of_decodings_known_by_construction(monkeypatch, answers, expected):
    model = T.make_translator(16, seed=0)
    monkeypatch.setattr(model, "greedy_decode", _decoding(answers))
    assert T.exact_match(model, [[1, 2], [5]]) == expected


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


# --------------------------------------------------------------------------- the recipes' pieces

def test_the_lab_does_not_import_the_chapter():
    """Imports point one way: chapters may import labs, never the reverse."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(T))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if "chapters" in m]
    assert "src_vocab" not in source.TRANSLATION and "tgt_vocab" not in source.TRANSLATION
    assert TD.SRC_VOCAB[TD.PAD_ID] == TD.TGT_VOCAB[TD.PAD_ID] == "<PAD>"
    assert (TD.TGT_VOCAB[TD.SOS_ID], TD.TGT_VOCAB[TD.EOS_ID]) == ("<SOS>", "<EOS>")
    assert all(TD.SRC_VOCAB[d] == str(d) and TD.TGT_VOCAB[d] == "ABCDE"[d - 1] for d in TD.DIGITS)


def test_the_recipes_are_registered():
    from course_lib import repro

    names = {"ch05-translate-28", "ch05-translate-big", "ch05-noisy-loss"}
    assert names <= set(repro.RECIPES)
    for name in names:
        rec = repro.RECIPES[name]
        assert rec.chapter == "ch05" and rec.data and all(v >= 0 for v in rec.tolerance.values())


def test_unseen_groups_are_the_rest_of_lengths_1_to_3():
    groups = TD.unseen_groups()
    train = {tuple(s) for s in TD.training_sequences()}
    assert groups["repeated_pairs"] == [[d, d] for d in TD.DIGITS]
    assert len(groups["other_len3"]) == 125 - 3
    unseen = {tuple(s) for g in groups.values() for s in g}
    assert not unseen & train and len(unseen) + len(train) == 5 + 25 + 125


def test_evaluations_name_the_recipes_metrics():
    from course_lib import repro

    torch.set_num_threads(2)
    model = T.make_translator(16, seed=0).double().eval()
    m28 = T.evaluate_28(model)
    assert set(repro.RECIPES["ch05-translate-28"].tolerance) <= set(m28)
    groups = TD.unseen_groups()
    for key, seqs in [("exact_train", TD.training_sequences()),
                      ("exact_repeated_pairs", groups["repeated_pairs"]), ("exact_other_len3", groups["other_len3"])]:
        right, n = _exact_by_hand(model, seqs)
        assert m28[key] == right / n, key
    assert m28["loss_unseen"] > 0
    train, held = TD.split_sequences(**T.BIG_SPLIT)
    mbig = T.evaluate_big(model, train[:20], held[:20])
    assert set(repro.RECIPES["ch05-translate-big"].tolerance) <= set(mbig)


def test_evaluate_28_of_a_decoder_known_by_construction(monkeypatch):
    """A decoder that translates a sequence right unless it has 3 digits and does not start with 1.

    The 28 samples are 5 singles, 20 distinct pairs and the runs 123, 234, 345: 26 right. The 5
    repeated pairs: all right. The other 122 length-3 sequences are the 125 minus those runs; 25
    start with 1, one of them (123) a run: 24 right.
    """
    def decode(src, sos_id, eos_id, max_len):
        rows = []
        for row in src.tolist():
            digits = [d for d in row if d != 0]
            if len(digits) == 3 and digits[0] != 1:
                digits[-1] = digits[-1] % 5 + 1                        # a wrong last letter
            rows.append(digits + [eos_id] + [0] * (3 - len(digits)))
        return torch.tensor(rows)

    model = T.make_translator(16, seed=0).double().eval()
    monkeypatch.setattr(model, "greedy_decode", decode)
    m28 = T.evaluate_28(model)
    assert (m28["exact_train"], m28["exact_repeated_pairs"], m28["exact_other_len3"]) == (26 / 28, 5 / 5, 24 / 122)


def test_a_short_run_is_the_start_of_a_long_one():
    """The notebook runs the first steps of a recipe live and bands them against the stored curve."""
    torch.set_num_threads(2)
    seqs = TD.training_sequences()
    runs = []
    for steps in (4, 8):
        model = T.make_translator(16, seed=0, dropout=0.1)
        runs.append(T.train_translator(model, seqs, steps=steps, lr=lambda s: 3e-3, batch_size=4, seed=1))
    assert runs[0] == runs[1][:4]


def test_progress_lines_are_banded_against_a_reference(capsys):
    from course_lib.training import logged_curve

    torch.set_num_threads(2)
    seqs = [[1, 2], [3], [4, 5]]

    def run(**kw):
        model = T.make_translator(16, seed=0)
        return T.train_translator(model, seqs, steps=4, lr=lambda s: 1e-3, log_every=2, log_decimals=3, **kw)

    losses = run()
    capsys.readouterr()
    run(reference=logged_curve(losses, 2), rel=0.01, name="t")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(line.startswith("t · step") and "✓ band [" in line for line in out)
    with pytest.raises(AssertionError, match="outside its band"):
        run(reference={k: 10 * v for k, v in logged_curve(losses, 2).items()}, rel=0.01)


def test_stored_losses_reads_a_per_step_curve(tmp_path, monkeypatch):
    import json

    (tmp_path / "checkpoints").mkdir()
    monkeypatch.setenv("COURSE_DATA", str(tmp_path))
    (tmp_path / "checkpoints" / "good.json").write_text(json.dumps({"curve": {"2": 0.5, "1": 0.75}}))
    (tmp_path / "checkpoints" / "coarse.json").write_text(json.dumps({"curve": {"50": 0.5, "100": 0.25}}))
    assert T.stored_losses("good") == [0.75, 0.5]
    with pytest.raises(ValueError, match="does not store the loss of every step"):
        T.stored_losses("coarse")
