"""Chapter 7's longer Chinese GPT (``course_lib.labs.language_model_long_zh``), trained with Muon, with
AdamW, and with Muon and an average of the weights: their registration as long recipes, their corpus (the
small Chinese model's), their schedule, the stored metrics recomputed from the checkpoints (the bigram
counted here by hand), and bad inputs."""

import math

import pytest
import torch
from torch.nn import functional as F

from course_lib import repro
from course_lib.labs import language_model as lm
from course_lib.labs import language_model_long as lm_long
from course_lib.labs import language_model_long_zh as zh_long

SMALL = lm.RECIPE_NAMES[("zh", "char")]
RUNS = pytest.mark.parametrize("name, cfg", [(zh_long.ZH_LONG_NAME, zh_long.ZH_LONG_TRAIN),
                                             (zh_long.ZH_ADAMW_NAME, zh_long.ZH_ADAMW_TRAIN),
                                             (zh_long.ZH_EMA_NAME, zh_long.ZH_EMA_TRAIN)])


@RUNS
def test_registered_as_a_long_recipe_with_its_prefix_settings(name, cfg):
    rec = repro.RECIPES[name]
    assert rec.chapter == "ch07"
    assert (zh_long.ZH_LONG_NAME, zh_long.ZH_ADAMW_NAME, zh_long.ZH_EMA_NAME) == (
        "ch07-gpt-peoples-daily-long", "ch07-gpt-peoples-daily-long-adamw", "ch07-gpt-peoples-daily-long-ema")
    assert (rec.check_prefix, rec.curve_tolerance) == (zh_long.ZH_CHECK_PREFIX, zh_long.ZH_CURVE_TOLERANCE)
    assert rec.rescore is {zh_long.ZH_LONG_NAME: zh_long.rescore_zh_long,
                           zh_long.ZH_ADAMW_NAME: zh_long.rescore_zh_adamw,
                           zh_long.ZH_EMA_NAME: zh_long.rescore_zh_ema}[name]
    # the prefix ends on a logged point of the curve, inside the run, and the stored JSON says the same
    assert zh_long.ZH_CHECK_PREFIX % zh_long.ZH_LONG_LOG_EVERY == 0
    assert zh_long.ZH_CHECK_PREFIX < cfg["steps"]
    meta = repro.checkpoint_meta(name)
    assert meta["check_prefix"] == {"steps": zh_long.ZH_CHECK_PREFIX, "curve_tolerance": zh_long.ZH_CURVE_TOLERANCE}
    assert set(meta["tolerance"]) == set(meta["metrics"]) == {"val_loss", "bits_per_char", "fewer_bits_than_bigram"}


@RUNS
def test_same_tokens_vocabulary_and_split_as_the_small_chinese_model(name, cfg):
    small = repro.checkpoint_meta(SMALL)["config"]
    long_ = repro.checkpoint_meta(name)["config"]
    assert (long_["split"], long_["vocab_size"], long_["tokens"], long_["language"]) == \
        (small["split"], small["vocab_size"], small["tokens"], small["language"]) == \
        ("People's Daily, January 1998: the last 200 paragraphs held out, the rest trains", 2244, "char", "zh")
    a, b = zh_long.zh_long_corpus(), lm.corpus_for("zh")
    assert torch.equal(a.train_ids, b.train_ids) and torch.equal(a.val_ids, b.val_ids)
    assert a.vocab_size == b.vocab_size == 2244 and a.val_chars == b.val_chars
    assert [a.codec.decode([i]) for i in range(a.vocab_size)] == [b.codec.decode([i]) for i in range(b.vocab_size)]


def test_the_two_runs_differ_only_in_the_optimizer():
    muon, adamw = dict(zh_long.ZH_LONG_TRAIN), dict(zh_long.ZH_ADAMW_TRAIN)
    assert (muon.pop("optimizer"), muon.pop("muon_ratio"), adamw.pop("optimizer")) == ("muon", 2.0, "adamw")
    assert muon == adamw


def test_the_averaged_run_is_the_muon_run_with_an_average():
    ema = dict(zh_long.ZH_EMA_TRAIN)
    average = ema.pop("average")
    assert ema == zh_long.ZH_LONG_TRAIN
    # the average starts after the prefix --check retrains (so the prefix is the Muon run's), inside the run,
    # on a held-out point (where chapter 7's figure starts both curves at the same value)
    assert sorted(average) == ["decay", "start"]
    assert zh_long.ZH_CHECK_PREFIX < average["start"] < ema["steps"]
    assert average["start"] % zh_long.ZH_HELD_OUT_EVERY == 0


@RUNS
def test_schedule_and_the_stored_run(name, cfg):
    lr, warm, steps = (cfg[k] for k in ("lr", "warmup", "steps"))
    assert zh_long.zh_long_learning_rate(0) == pytest.approx(lr / warm, rel=1e-15)
    assert zh_long.zh_long_learning_rate(warm) == pytest.approx(lr, rel=1e-15)
    assert zh_long.zh_long_learning_rate(steps) == pytest.approx(lr / 10, rel=1e-15)
    mid = warm + (steps - warm) // 2
    assert zh_long.zh_long_learning_rate(mid) == pytest.approx(
        lr * (0.1 + 0.45 * (1 + math.cos(math.pi * (mid - warm) / (steps - warm)))), rel=1e-15)
    meta = repro.checkpoint_meta(name)
    c = meta["config"]
    assert c["train"] == cfg and {k: c[k] for k in zh_long.ZH_LONG_SIZE} == zh_long.ZH_LONG_SIZE
    assert (c["ctx"], c["batch_size"], c["tokens_seen"]) == (zh_long.ZH_LONG_CTX, zh_long.ZH_LONG_BATCH,
                                                              steps * zh_long.ZH_LONG_BATCH * zh_long.ZH_LONG_CTX)
    logged = list(range(zh_long.ZH_LONG_LOG_EVERY, steps + 1, zh_long.ZH_LONG_LOG_EVERY))
    assert [int(k) for k in meta["curve"]] == logged == [int(k) for k in meta["lr"]]
    assert all(meta["lr"][str(k)] == zh_long.zh_long_learning_rate(k - 1) for k in logged)
    assert [int(k) for k in meta["held_out"]] == list(range(zh_long.ZH_HELD_OUT_EVERY, steps + 1,
                                                            zh_long.ZH_HELD_OUT_EVERY))
    # the last held-out point was scored in float32, the metric in float64: the same model (the average,
    # when the run keeps one: then its points run from the average's start, and the weights' last point differs)
    if "average" not in cfg:
        assert "held_out_average" not in meta
        assert meta["held_out"][str(steps)] == pytest.approx(meta["metrics"]["val_loss"], abs=1e-4)
    else:
        start = cfg["average"]["start"]
        assert [int(k) for k in meta["held_out_average"]] == list(range(start, steps + 1, zh_long.ZH_HELD_OUT_EVERY))
        assert meta["held_out_average"][str(start)] == meta["held_out"][str(start)]     # the average starts at W
        assert meta["held_out_average"][str(steps)] == pytest.approx(meta["metrics"]["val_loss"], abs=1e-4)
        assert abs(meta["held_out"][str(steps)] - meta["metrics"]["val_loss"]) > 1e-3


def _bigram_bits_by_hand(corpus):
    """Add-one bigram on the training ids, scored on every held-out target, in bits per character."""
    V, train, val = corpus.vocab_size, corpus.train_ids, corpus.val_ids
    pairs = torch.zeros(V, V, dtype=torch.float64)
    pairs.index_put_((train[:-1], train[1:]), torch.ones(len(train) - 1, dtype=torch.float64), accumulate=True)
    p = (pairs + 1) / (pairs.sum(1, keepdim=True) + V)                 # (V, V): row = previous character
    nats = -torch.log(p[val[:-1], val[1:]]).sum().item()
    return nats / math.log(2) / corpus.val_chars


@RUNS
def test_stored_metrics_recomputed_from_the_checkpoint(name, cfg):
    meta = repro.checkpoint_meta(name)
    r = repro.RECIPES[name].rescore()
    for metric in ("val_loss", "bits_per_char", "fewer_bits_than_bigram"):
        assert r[metric] == pytest.approx(meta["metrics"][metric], abs=1e-9)
    corpus = zh_long.zh_long_corpus()
    # nats per character to bits: the characters are the tokens here, so bits = nats / ln 2 · tokens / chars
    assert r["bits_per_char"] == pytest.approx(r["val_loss"] / math.log(2) * (len(corpus.val_ids) - 1)
                                               / corpus.val_chars, rel=1e-12)
    bigram = _bigram_bits_by_hand(corpus)
    assert r["fewer_bits_than_bigram"] == pytest.approx(1 - r["bits_per_char"] / bigram, abs=1e-9)
    # chapter 7 says the AdamW run saves more than twice the small model's share and falls short of 20 %,
    # and the Muon run saves more than the AdamW run but falls short too
    small = 1 - repro.checkpoint_meta(SMALL)["metrics"]["bits_per_char"] / bigram
    adamw = 1 - repro.checkpoint_meta(zh_long.ZH_ADAMW_NAME)["metrics"]["bits_per_char"] / bigram
    assert 2 * small < adamw < zh_long.ZH_GOAL == 0.20
    muon = 1 - repro.checkpoint_meta(zh_long.ZH_LONG_NAME)["metrics"]["bits_per_char"] / bigram
    if name == zh_long.ZH_LONG_NAME:
        assert adamw < r["fewer_bits_than_bigram"] < zh_long.ZH_GOAL
    # and the averaged Muon run reaches the goal
    if name == zh_long.ZH_EMA_NAME:
        assert r["fewer_bits_than_bigram"] >= zh_long.ZH_GOAL > muon


def test_flat_cross_entropy_is_the_chapters_loss():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=g, dtype=torch.float64)            # (B, T, V)
    y = torch.randint(7, (3, 5), generator=g)
    by_hand = -torch.log_softmax(logits, -1).gather(-1, y[..., None]).mean()
    assert zh_long.flat_cross_entropy(logits, y).item() == pytest.approx(by_hand.item(), rel=1e-14)
    assert zh_long.flat_cross_entropy(logits, y).item() == pytest.approx(
        F.cross_entropy(logits.transpose(1, 2), y).item(), rel=1e-14)
    assert zh_long.flat_cross_entropy(torch.zeros(2, 4, 9), torch.zeros(2, 4, dtype=torch.long)).item() == \
        pytest.approx(math.log(9), rel=1e-6)                                    # uniform: ln V
    with pytest.raises(ValueError, match="logits"):
        zh_long.flat_cross_entropy(logits[0], y[0])                              # (T, V): no batch axis
    with pytest.raises(ValueError, match="y"):
        zh_long.flat_cross_entropy(logits, y[:, :4])                             # one target short
    with pytest.raises(ValueError, match="y"):
        zh_long.flat_cross_entropy(logits, y.tolist())


def test_fewer_bits_and_its_bad_inputs():
    assert zh_long.fewer_bits(6.0, 7.5) == pytest.approx(0.2, rel=1e-15)
    assert zh_long.fewer_bits(9.0, 7.5) == pytest.approx(-0.2, rel=1e-15)       # worse than the baseline
    for bits, base, name in ((0.0, 7.5, "bits"), (-1.0, 7.5, "bits"), (6.0, 0.0, "baseline_bits"),
                             (float("nan"), 7.5, "bits"), (6.0, float("inf"), "baseline_bits")):
        with pytest.raises(ValueError, match=name):
            zh_long.fewer_bits(bits, base)
    with pytest.raises(TypeError, match="bits"):
        zh_long.fewer_bits("6", 7.5)


def test_training_rejects_bad_input():
    corpus = zh_long.zh_long_corpus()
    with pytest.raises(ValueError, match="steps"):
        zh_long.train_zh_long(corpus, steps=zh_long.ZH_LONG_TRAIN["steps"] + 1)
    with pytest.raises(ValueError, match="steps"):
        zh_long.train_zh_long(corpus, steps=0)
    with pytest.raises(TypeError, match="corpus"):
        zh_long.train_zh_long(lm_long.long_corpus(), steps=1)                    # Shakespeare, not the news
    with pytest.raises(TypeError, match="corpus"):
        zh_long.train_zh_long("人民日报", steps=1)
    with pytest.raises(ValueError, match="vocab_size"):
        zh_long.build_zh_long_gpt(0)
    with pytest.raises(ValueError, match="train_cfg must be ZH_LONG_TRAIN, ZH_ADAMW_TRAIN or ZH_EMA_TRAIN"):
        zh_long.train_zh_long(corpus, steps=1, train_cfg={**zh_long.ZH_ADAMW_TRAIN, "lr": 1e-3})


def test_a_prefix_follows_the_full_runs_schedule_and_logs():
    """Two steps of the recipe: the schedule is the full run's (not a two-step one), the curve logs one
    mean, and the held-out text is not scored before step ZH_HELD_OUT_EVERY."""
    run = zh_long.train_zh_long(zh_long.zh_long_corpus(), steps=2)
    assert run["lr"] == {2: zh_long.zh_long_learning_rate(1)} and list(run["curve"]) == [2]
    assert run["lr"][2] == pytest.approx(2 * zh_long.ZH_LONG_TRAIN["lr"] / zh_long.ZH_LONG_TRAIN["warmup"], rel=1e-15)
    assert run["held_out"] == {}
    assert run["curve"][2] == pytest.approx(sum(run["losses"]) / 2, rel=1e-12)


def test_run_long_rejects_bad_input():
    corpus = zh_long.zh_long_corpus()
    model = zh_long.build_zh_long_gpt(corpus.vocab_size)
    kw = dict(ctx=zh_long.ZH_LONG_CTX, batch=2, train_cfg=zh_long.ZH_LONG_TRAIN, log_every=None,
              held_out_every=zh_long.ZH_HELD_OUT_EVERY, curve_every=zh_long.ZH_LONG_LOG_EVERY)
    with pytest.raises(ValueError, match="steps"):
        lm_long.run_long(model, corpus, steps=zh_long.ZH_LONG_TRAIN["steps"] + 1, **kw)
    with pytest.raises(TypeError, match="corpus"):
        lm_long.run_long(model, corpus.split, steps=1, **kw)
    with pytest.raises(TypeError, match="model"):
        lm_long.run_long(model.state_dict(), corpus, steps=1, **kw)
    with pytest.raises(ValueError, match="batch"):
        lm_long.run_long(model, corpus, steps=1, **{**kw, "batch": 0})
    with pytest.raises(ValueError, match="curve_every"):
        lm_long.run_long(model, corpus, steps=1, **{**kw, "curve_every": 0})
