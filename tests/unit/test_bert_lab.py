"""Chapter 7's BERT lab (course_lib.labs.bert_lab): the pieces of the recipes
``ch07-bert-mlm`` and ``ch07-bert-sentiment``, and their stored checkpoints.

Retraining is ``tools/train.py --check``; these tests check the pieces
(data, batches, losses, held-out evaluation) and that the checkpoints fit
the lab as it is now.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from course_lib import repro
from course_lib.labs import bert_lab
from course_lib.models import BERT, BERTConfig, BertClassifier
from course_lib.text import tokenize


@pytest.fixture(scope="module")
def data():
    return bert_lab.load_data()


def test_data_is_the_fixed_split_with_rare_tokens_unknown(data):
    assert len(data.train) + len(data.test) == 327 and len(data.test) == 67
    assert {r["split"] for r in data.train} == {"train"} and {r["split"] for r in data.test} == {"test"}
    assert data.X_train.shape == (len(data.train), bert_lab.MAX_LEN) == data.M_train.shape
    assert data.X_test.shape == (len(data.test), bert_lab.MAX_LEN)
    assert data.y_test.tolist() == [int(r["label"]) for r in data.test]
    counts = {}
    for r in data.train:
        for t in tokenize(r["text"]):
            counts[t] = counts.get(t, 0) + 1
    once = [t for t, n in counts.items() if n == 1]
    assert once and all(t not in data.vocab.stoi for t in once)        # min_freq 2


def test_mlm_batches_are_seeded_corruptions_of_training_rows(data):
    a, b = bert_lab.mlm_batches(data, 3), bert_lab.mlm_batches(data, 3)
    assert all(torch.equal(x, y) for p, q in zip(a, b) for x, y in zip(p, q))
    assert not torch.equal(a[0][0], bert_lab.mlm_batches(data, 1, seed=1)[0][0])
    inp, lab, mask = a[0]
    assert inp.shape == lab.shape == mask.shape == (bert_lab.BATCH_SIZE, bert_lab.MAX_LEN)
    kept = lab == -100
    picked = ~kept
    assert picked.any() and (picked & (mask == 0)).sum() == 0        # padding is never picked
    # every label is the original token of a training row, and unpicked inputs are untouched
    rows = {tuple(r.tolist()) for r in data.X_train}
    originals = torch.where(kept, inp, lab)
    assert all(tuple(r.tolist()) in rows for r in originals)
    assert (inp[picked] == data.vocab.mask_id).double().mean() > 0.5


def test_mlm_loss_scores_only_the_picked_positions(data):
    inp, lab, mask = bert_lab.mlm_batches(data, 1)[0]
    V = len(data.vocab)

    class Oracle(nn.Module):       # knows the answers: certain of the label wherever there is one
        def forward(self, ids, attention_mask=None):
            target = torch.where(lab == -100, 0, lab)
            return 40.0 * F.one_hot(target, V).double()

    assert bert_lab.mlm_loss(Oracle(), (inp, lab, mask)) < 1e-12
    uniform = lambda ids, attention_mask=None: torch.zeros(*ids.shape, V, dtype=torch.float64)
    assert bert_lab.mlm_loss(uniform, (inp, lab, mask)).item() == pytest.approx(torch.log(torch.tensor(V * 1.0)))


def test_mlm_eval_measures_the_test_sentences(data):
    V = len(data.vocab)

    class Oracle(nn.Module):       # predicts the original test sentence, whatever the corruption
        def forward(self, ids, attention_mask=None):
            assert ids.shape == data.X_test.shape
            return 40.0 * F.one_hot(data.X_test, V).double()

    model = Oracle()
    model.train()
    r = bert_lab.mlm_eval(model, data)
    assert r["test_mlm_accuracy"] == 1.0 and r["test_mlm_loss"] < 1e-12 and model.training
    ordinary = (~torch.isin(data.X_test, torch.tensor(data.vocab.special_ids))).sum().item()
    share = r["predicted"] / (bert_lab.MLM_EVAL_REPEATS * ordinary)
    assert 0.12 < share < 0.18                                        # 15 % of the tokens, 20 times
    assert bert_lab.mlm_eval(model, data) == r                        # the same corruptions every time


def test_build_mlm_is_float64_with_berts_initialisation(data):
    a, b = bert_lab.build_mlm(len(data.vocab)), bert_lab.build_mlm(len(data.vocab))
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert all(p.dtype == torch.float64 for p in a.parameters())
    assert a.decoder.weight is a.bert.tok_emb.weight
    assert a.bert.tok_emb.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert a.bert.config.d_model == bert_lab.BERT_SIZE["d_model"] and a.bert.max_len == bert_lab.MAX_LEN


def test_classifier_pieces(data):
    rows = bert_lab.classifier_batches(data, 4)
    assert [r.tolist() for r in rows] == [r.tolist() for r in bert_lab.classifier_batches(data, 4)]
    assert all(r.shape == (bert_lab.BATCH_SIZE,) and 0 <= r.min() and r.max() < len(data.train) for r in rows)
    clf = bert_lab.build_classifier(bert_lab.build_mlm(len(data.vocab)).bert)
    assert clf.classifier.in_features == bert_lab.BERT_SIZE["d_model"] and clf.classifier.out_features == 2
    loss = bert_lab.classifier_loss(data)(clf, rows[0])
    assert loss.ndim == 0 and loss.dtype == torch.float64


def test_classifier_eval_counts_by_language(data):
    class Oracle(nn.Module):
        def forward(self, ids, attention_mask=None):
            assert torch.equal(ids, data.X_test)
            return 40.0 * F.one_hot(data.y_test, 2).double()

    class Positive(nn.Module):
        def forward(self, ids, attention_mask=None):
            return torch.tensor([[0.0, 1.0]], dtype=torch.float64).expand(len(ids), 2)

    r = bert_lab.classifier_eval(Oracle(), data)
    assert r["test_accuracy"] == r["test_accuracy_en"] == r["test_accuracy_zh"] == 1.0
    assert torch.equal(r["predicted"], data.y_test)
    r = bert_lab.classifier_eval(Positive(), data)
    assert r["test_accuracy"] == pytest.approx(data.y_test.double().mean().item())
    en = [int(row["label"]) for row in data.test if row["lang"] == "en"]
    assert r["test_accuracy_en"] == pytest.approx(sum(en) / len(en))


def test_recipes_are_registered_with_measured_tolerances():
    for name in ("ch07-bert-mlm", "ch07-bert-sentiment"):
        rec = repro.RECIPES[name]
        assert rec.chapter == "ch07" and rec.data
    assert set(repro.RECIPES["ch07-bert-mlm"].tolerance) == {"test_mlm_loss", "test_mlm_accuracy"}
    assert set(repro.RECIPES["ch07-bert-sentiment"].tolerance) == {"test_accuracy", "test_loss"}


@pytest.mark.parametrize("name", ["ch07-bert-mlm", "ch07-bert-sentiment"])
def test_the_checkpoints_fit_the_lab_as_it_is(name, data):
    """A changed size or hyper-parameter without `make train` fails here."""
    meta = repro.checkpoint_meta(name)
    train_kwargs = bert_lab.MLM_TRAIN if name == "ch07-bert-mlm" else bert_lab.FINETUNE_TRAIN
    assert meta["config"]["train"] == train_kwargs
    assert {k: meta["config"][k] for k in bert_lab.BERT_SIZE} == bert_lab.BERT_SIZE
    assert meta["config"]["vocab_size"] == len(data.vocab) and meta["config"]["max_len"] == bert_lab.MAX_LEN
    steps = train_kwargs["steps"]
    assert [int(k) for k in meta["curve"]] == list(range(bert_lab.LOG_EVERY, steps + 1, bert_lab.LOG_EVERY))
    assert set(repro.RECIPES[name].tolerance) <= set(meta["metrics"])
    bert = BERT(BERTConfig(vocab_size=len(data.vocab), max_len=bert_lab.MAX_LEN, **bert_lab.BERT_SIZE))
    model = bert_lab.build_mlm(len(data.vocab)) if name == "ch07-bert-mlm" else BertClassifier(bert, 2)
    repro.load_checkpoint(name, model, dtype=torch.float64)


def test_the_stored_classifier_has_its_stored_metrics(data):
    bert = BERT(BERTConfig(vocab_size=len(data.vocab), max_len=bert_lab.MAX_LEN, **bert_lab.BERT_SIZE))
    clf = BertClassifier(bert, 2)
    meta = repro.load_checkpoint("ch07-bert-sentiment", clf, dtype=torch.float64)
    r = bert_lab.classifier_eval(clf, data)
    for k in ("test_accuracy", "test_accuracy_en", "test_accuracy_zh"):
        assert r[k] == meta["metrics"][k]
    assert r["test_loss"] == pytest.approx(meta["metrics"]["test_loss"], abs=1e-6)   # float64: last bits differ between CPUs
