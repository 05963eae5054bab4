"""Chapter 12: why four-digit strings fail (alignment, errors by position), CTC and joint decoding, the long run."""

import numpy as np
import pytest
import torch

from course_lib import repro
from course_lib.analysis.edit import alignment, levenshtein
from course_lib.labs import speech as S
from course_lib.labs import speech_decode as D
from course_lib.labs import speech_errors as E
from course_lib.labs import speech_long as SL

# ----------------------------------------------------------------------------- alignment, worked by hand


@pytest.mark.parametrize("ref,hyp,script", [
    ("314", "314", [("=", 0, 0), ("=", 1, 1), ("=", 2, 2)]),
    ("314", "34", [("=", 0, 0), ("D", 1, None), ("=", 2, 1)]),
    ("314", "3144", [("=", 0, 0), ("=", 1, 1), ("I", None, 2), ("=", 2, 3)]),   # a repeat: its first copy
    ("314", "315", [("=", 0, 0), ("=", 1, 1), ("S", 2, 2)]),
    ("12", "21", [("S", 0, 0), ("S", 1, 1)]),                                  # not a deletion and an insertion
    ("", "12", [("I", None, 0), ("I", None, 1)]),
    ("12", "", [("D", 0, None), ("D", 1, None)]),
])
def test_alignment_by_hand(ref, hyp, script):
    assert alignment(ref, hyp) == script


def test_alignment_costs_the_edit_distance_and_rebuilds_both_strings():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = "".join(map(str, rng.integers(0, 3, rng.integers(0, 6))))
        b = "".join(map(str, rng.integers(0, 3, rng.integers(0, 6))))
        steps = alignment(a, b)
        assert sum(op != "=" for op, _, _ in steps) == levenshtein(a, b)
        assert "".join(a[i] for op, i, _ in steps if op != "I") == a
        assert "".join(b[j] for op, _, j in steps if op != "D") == b
        assert all((a[i] == b[j]) == (op == "=") for op, i, j in steps if op in "=S")


# ----------------------------------------------------------------------------- errors by position


def test_position_errors_by_hand():
    # '341': the 1 at position 2 deleted; '31441': one 4 inserted after two reference digits.
    got = E.position_errors(["3141", "3141", "3141", "27"], ["3141", "341", "31441", "27"], 4)
    assert got["n"] == 3
    assert got["right"].tolist() == [3, 2, 3, 3]
    assert got["sub"].tolist() == [0, 0, 0, 0]
    assert got["del"].tolist() == [0, 1, 0, 0]
    assert got["ins"].tolist() == [0, 0, 1, 0, 0]


def test_compounding_by_hand():
    # positions right 3 of 4 each: independent errors give (3/4)^2 = 0.5625; two of four strings are right.
    got = E.compounding(["12", "12", "12", "12"], ["12", "13", "22", "12"], 2)
    assert got["position_acc"].tolist() == [0.75, 0.75]
    assert got["digit_acc"] == 0.75 and got["independent"] == 0.5625 and got["observed"] == 0.5
    assert got["ratio"] == pytest.approx(0.5 / 0.5625, rel=1e-15)
    # unequal positions: 4/4 and 2/4 multiply to 0.5 (not the mean to the power 2, 0.5625)
    got = E.compounding(["12", "12", "12", "12"], ["12", "13", "13", "12"], 2)
    assert got["position_acc"].tolist() == [1.0, 0.5] and got["independent"] == 0.5 and got["observed"] == 0.5


def test_error_totals_by_hand():
    assert E.error_totals(["314", "27", "5"], ["34", "287", "6"]) == {"sub": 1, "del": 1, "ins": 1, "ref_digits": 6}


@pytest.mark.parametrize("call,match", [
    (lambda: E.position_errors(["12"], ["1", "2"], 2), "refs and hyps must be non-empty and of equal length"),
    (lambda: E.position_errors([], [], 2), "refs and hyps must be non-empty"),
    (lambda: E.position_errors(["1a"], ["1"], 2), "refs must be non-empty digit strings"),
    (lambda: E.position_errors(["12"], ["12"], 3), "no reference has length 3"),
    (lambda: E.compounding(["12"], ["12"], 0), "length must be"),
    (lambda: E.error_totals([""], [""]), "refs must be non-empty digit strings"),
])
def test_bad_error_input_is_named(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ----------------------------------------------------------------------------- CTC and joint decoding


@pytest.mark.parametrize("ids,out", [
    ([0, 8, 8, 0, 6, 0, 0, 9, 9], [8, 6, 9]),       # blanks between, repeats merged
    ([10, 10, 0, 10], [10, 10]),                     # a blank separates a real repeat
    ([0, 0], []),
    ([], []),
])
def test_ctc_collapse_by_hand(ids, out):
    assert D.ctc_collapse(ids) == out


@pytest.fixture(scope="module")
def stored():
    _, test, _ = S.load_speech()
    model = S.build(0)
    repro.load_checkpoint("ch10-speech", model, dtype=torch.float64)
    return model, test


def test_joint_scores_equal_the_two_losses_computed_apart(stored):
    model, test = stored
    index = [0, 1, 2]
    cands = [(str(test.lang[i]), str(test.digits[i])) for i in index]
    att, ctc = D.joint_scores(model, test, index, cands)
    frames, lengths, tgt_in, tgt_out = S.batch(test, index, dtype=torch.float64)   # the same targets
    with torch.no_grad():
        logp = model(frames, lengths, tgt_in).log_softmax(-1)
        memory, mask, _ = model.encode(frames, lengths)
        lp = model.ctc_logits(memory).log_softmax(-1)
    for row, i in enumerate(index):
        n = len(cands[row][1]) + 2                                              # <lang>, digits, <eos>
        want_att = sum(float(logp[row, t, tgt_out[row, t]]) for t in range(n))
        labels = tgt_out[row, :n - 1]                                           # <lang> and the digits
        T = int(mask[row, 0, 0].sum())
        want_ctc = -float(torch.nn.CTCLoss(blank=0, reduction="sum")(lp[row, :T, None], labels[None],
                                                                       torch.tensor([T]), torch.tensor([n - 1])))
        assert att[row] == pytest.approx(want_att, abs=1e-9)
        assert ctc[row] == pytest.approx(want_ctc, abs=1e-9)


def test_joint_with_all_weight_on_one_side_keeps_that_sides_better_candidate(stored):
    model, test = stored
    index = np.arange(40)
    att_h, ctc_h = S.transcribe(model, test, index), D.ctc_transcribe(model, test, index)
    a = [D.joint_scores(model, test, index, h) for h in (att_h, ctc_h)]
    for lam, side in ((0.0, 0), (1.0, 1)):
        got = D.joint_transcribe(model, test, index, ctc_weight=lam)
        want = [x if sx >= sy else y for x, y, sx, sy in zip(att_h, ctc_h, a[0][side], a[1][side])]
        assert got == want
    assert D.joint_transcribe(model, test, index, ctc_weight=1.0) != att_h       # the two sides do differ here


def test_bad_decode_input_is_named(stored):
    model, test = stored
    with pytest.raises(ValueError, match="ctc_weight must lie in"):
        D.joint_transcribe(model, test, [0], ctc_weight=1.5)
    with pytest.raises(ValueError, match="candidates must hold one"):
        D.joint_scores(model, test, [0, 1], [("en", "1")])
    with pytest.raises(ValueError, match="att_hyps and ctc_hyps must hold one transcript per index"):
        D.joint_transcribe(model, test, [0, 1], att_hyps=[("en", "1")], ctc_hyps=[("en", "1"), ("en", "2")])
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        D.ctc_transcribe(model, test, [0], batch_size=0)


# ----------------------------------------------------------------------------- the long recipe


def test_long_schedule_by_hand():
    lr, warm, total = S.TRAINING["lr"], S.TRAINING["warmup"], SL.LONG_STEPS
    assert SL.long_learning_rate(0) == pytest.approx(lr / warm, rel=1e-15)
    assert SL.long_learning_rate(warm) == pytest.approx(lr, rel=1e-15)                 # cos 0 = 1
    assert SL.long_learning_rate((warm + total) // 2) == pytest.approx(lr / 2, rel=1e-3)
    assert SL.long_learning_rate(total) == pytest.approx(0.0, abs=1e-15)


def test_long_run_starts_with_the_short_runs_batches():
    # During warm-up both schedules agree, and the long run's batches begin with the short run's.
    train, _, _ = S.load_speech()
    short = S.build(0)
    a = S.fit(short, train, steps=3, log_every=None)
    b = SL.train_long(train, steps=3, log_every=None)["losses"]
    assert a == b


def test_bad_long_input_is_named():
    train, _, _ = S.load_speech()
    with pytest.raises(ValueError, match="steps must be at most the recipe's"):
        SL.train_long(train, steps=SL.LONG_STEPS + 1)
    with pytest.raises(ValueError, match="step must be an integer >= 0"):
        SL.long_learning_rate(-1)


def test_long_recipe_is_declared_and_its_stored_metrics_rescore():
    rec = repro.RECIPES[SL.LONG_NAME]
    meta = repro.checkpoint_meta(SL.LONG_NAME)
    assert rec.chapter == "ch10" and rec.check_prefix == SL.CHECK_PREFIX and meta["config"]["steps"] == SL.LONG_STEPS
    assert meta["config"]["data_sha256"] == S.DATA_SHA256
    got = SL.rescore_long()
    assert set(got) == set(meta["metrics"])
    for k, v in meta["metrics"].items():
        assert got[k] == pytest.approx(v, abs=1e-9), k


def test_short_checkpoints_errors_add_up_to_its_stored_cer(stored):
    model, test = stored
    refs = [str(d) for d in test.digits]
    hyps = [h for _, h in S.transcribe(model, test)]
    tot = E.error_totals(refs, hyps)
    cer = (tot["sub"] + tot["del"] + tot["ins"]) / tot["ref_digits"]
    assert cer == pytest.approx(repro.checkpoint_meta("ch10-speech")["metrics"]["cer"], abs=1e-12)
    four = E.compounding(refs, hyps, 4)
    assert four["observed"] < four["independent"]          # the chapter's claim: worse than compounding
