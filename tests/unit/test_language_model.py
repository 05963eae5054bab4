"""Chapter 7's GPT lab (course_lib.labs.language_model): the pieces of the recipe
``ch07-gpt-declaration`` and its stored checkpoint.

Retraining is ``tools/train.py --check``; these tests check the corpus and
its split, the windows, the held-out evaluation, and that the checkpoint
fits the lab as it is now.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from course_lib import repro
from course_lib.labs import language_model as lm


@pytest.fixture(scope="module")
def corpus():
    return lm.load_corpus()


def test_the_split_is_the_whole_text_once(corpus):
    ids = torch.cat([corpus.train_ids, corpus.val_ids])
    assert corpus.decode(ids) == corpus.text
    assert len(corpus.train_ids) == int(0.9 * len(corpus.text))
    assert corpus.chars == sorted(set(corpus.text)) and len(corpus.stoi) == len(corpus.chars)
    assert corpus.decode(corpus.encode("He has ")[0]) == "He has "
    with pytest.raises(ValueError, match="not in the text"):
        corpus.encode("He has 中")
    with pytest.raises(ValueError, match="train_share"):
        lm.load_corpus(train_share=1.0)


def test_targets_are_the_next_characters(corpus):
    x, y = lm.windows(corpus.train_ids, torch.tensor([0, 5]))
    assert x.shape == y.shape == (2, lm.CTX)
    assert torch.equal(x[:, 1:], y[:, :-1])
    assert corpus.decode(x[0]) == corpus.text[:lm.CTX] and corpus.decode(y[0]) == corpus.text[1:lm.CTX + 1]


def test_batches_stay_inside_the_training_text(corpus):
    starts = lm.batch_starts(corpus, 50)
    assert [s.tolist() for s in starts] == [s.tolist() for s in lm.batch_starts(corpus, 50)]
    allowed = len(corpus.train_ids) - lm.CTX - 1
    assert all(s.shape == (lm.BATCH_SIZE,) and 0 <= s.min() and s.max() < allowed for s in starts)


def test_held_out_windows_come_from_the_last_tenth_only(corpus):
    x, y = lm.validation_windows(corpus)
    val = corpus.decode(corpus.val_ids)
    assert corpus.decode(x[0]) == val[:lm.CTX] and corpus.decode(y[-1]) in val
    assert len(x) == len(range(0, len(corpus.val_ids) - lm.CTX - 1, lm.VAL_STRIDE))


def test_evaluate_scores_the_next_character(corpus):
    V = len(corpus.chars)
    x_val, y_val = lm.validation_windows(corpus)

    class Oracle(nn.Module):       # knows the held-out text
        def forward(self, ids):
            assert torch.equal(ids, x_val)
            return 40.0 * F.one_hot(y_val, V).double()

    class Copy(nn.Module):         # predicts that the current character repeats
        def forward(self, ids):
            return 40.0 * F.one_hot(ids, V).double()

    model = Oracle()
    model.train()
    r = lm.evaluate(model, corpus)
    assert r["val_accuracy"] == 1.0 and r["val_loss"] < 1e-12 and model.training
    assert lm.evaluate(Copy(), corpus)["val_accuracy"] == pytest.approx((x_val == y_val).double().mean().item())


def test_build_gpt_is_seeded_float64(corpus):
    a, b = lm.build_gpt(len(corpus.chars)), lm.build_gpt(len(corpus.chars))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert all(p.dtype == torch.float64 for p in a.parameters())
    assert a.config.d_model == lm.GPT_SIZE["d_model"] and a.max_len >= lm.CTX


def test_the_recipe_is_registered():
    rec = repro.RECIPES["ch07-gpt-declaration"]
    assert rec.chapter == "ch07" and rec.data and set(rec.tolerance) == {"val_loss", "val_accuracy"}


def test_the_checkpoint_fits_the_lab_as_it_is(corpus):
    """A changed size or hyper-parameter without `make train` fails here."""
    meta = repro.checkpoint_meta("ch07-gpt-declaration")
    c = meta["config"]
    assert c["train"] == lm.GPT_TRAIN and {k: c[k] for k in lm.GPT_SIZE} == lm.GPT_SIZE
    assert (c["vocab_size"], c["ctx"], c["batch_size"]) == (len(corpus.chars), lm.CTX, lm.BATCH_SIZE)
    logged = list(range(lm.LOG_EVERY, lm.GPT_TRAIN["steps"] + 1, lm.LOG_EVERY))
    assert [int(k) for k in meta["curve"]] == logged == [int(k) for k in c["validation_curve"]]
    model = lm.build_gpt(len(corpus.chars))
    repro.load_checkpoint("ch07-gpt-declaration", model, dtype=torch.float64)
    r = lm.evaluate(model, corpus)
    assert r["val_accuracy"] == meta["metrics"]["val_accuracy"]
    assert r["val_loss"] == pytest.approx(meta["metrics"]["val_loss"], abs=1e-6)   # float64: last bits differ between CPUs
    assert c["validation_curve"][str(lm.GPT_TRAIN["steps"])] == meta["metrics"]["val_loss"]
