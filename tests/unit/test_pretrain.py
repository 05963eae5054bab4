"""Chapter 10's pretraining: the masked-LM corpus never holds a held-out review, the GPT's
last-token pooling reads the right position under padding, bad inputs name their argument,
and the stored checkpoints' metrics recompute from their weights."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from course_lib import repro
from course_lib.labs import capstone, gpt_finetune, pretrain
from course_lib.labs.textclf import SplitTexts, evaluate
from course_lib.models import BERT, GPT, BertForMLM, GPTConfig, mask_tokens


# ---------------------------------------------------------------- the masked-LM corpus

@pytest.fixture(scope="module")
def reviews():
    return capstone.load_reviews()


@pytest.fixture(scope="module")
def texts(reviews):
    return pretrain.mlm_texts()


def test_mlm_corpus_holds_every_training_review_and_no_held_out_one(reviews, texts):
    held_out = set(reviews.split.test)
    assert len(held_out) == capstone.TEST_SIZE
    unlabelled = texts["reviews"] + texts["news"]
    assert held_out.isdisjoint(unlabelled)                          # exact texts
    assert texts["reviews"] == list(reviews.split.train)
    assert held_out.isdisjoint(texts["news_held_out"])


def test_mlm_corpus_reads_only_the_training_side():
    # a split whose held-out texts are marked: none of them may reach the corpus
    split = SplitTexts(["好书", "差评"], np.array([1, 0]), ["HELD-OUT 一", "HELD-OUT 二"], np.array([1, 0]), {})
    out = pretrain.mlm_texts(split)
    assert out["reviews"] == ["好书", "差评"]
    assert not any("HELD-OUT" in t for t in out["reviews"] + out["news"])


def test_news_pieces_are_cut_to_the_classifier_reading(texts):
    lengths = [len(t) for t in texts["news"]]
    assert max(lengths) == capstone.MAX_LEN - 2
    assert min(lengths) == pretrain.MIN_PIECE


def test_stored_pretraining_read_the_training_reviews_only(reviews):
    cfg = repro.checkpoint_meta(pretrain.MLM_NAME)["config"]
    assert cfg["review_rows"] == len(reviews.split.train) == reviews.split.info["train"]
    assert cfg["review_rows"] + cfg["news_rows"] == cfg["rows"]


# ---------------------------------------------------------------- the masked-LM loss

def test_mlm_loss_equals_the_full_heads_loss():
    torch.manual_seed(0)
    mlm = BertForMLM(BERT(vocab_size=30, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8, dropout=0.0))
    ids = torch.randint(5, 30, (4, 8))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    ids[1, 5:] = 0
    inputs, labels = mask_tokens(ids, 4, 30, [0, 1, 2, 3, 4], prob=0.4, generator=torch.Generator().manual_seed(1))
    full = F.cross_entropy(mlm(inputs, attention_mask=mask).transpose(1, 2), labels)
    torch.testing.assert_close(pretrain.mlm_loss(mlm, inputs, labels, mask), full, rtol=1e-6, atol=1e-6)


def test_schedule_warms_up_then_decays_to_a_tenth():
    lr = pretrain.PRETRAIN["lr"]
    assert pretrain.pretrain_learning_rate(0) == pytest.approx(lr / 100)
    assert pretrain.pretrain_learning_rate(99) == pytest.approx(lr)
    assert pretrain.pretrain_learning_rate(pretrain.PRETRAIN["steps"]) == pytest.approx(lr / 10)


# ---------------------------------------------------------------- last-token pooling

def test_last_token_pool_reads_the_last_real_position():
    h = torch.arange(3 * 5 * 2, dtype=torch.float32).reshape(3, 5, 2)      # h[b, t] = (10b + 2t, 10b + 2t + 1)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    got = gpt_finetune.last_token_pool(h, mask)
    expected = torch.tensor([[4.0, 5.0], [18.0, 19.0], [20.0, 21.0]])     # positions 2, 4, 0
    torch.testing.assert_close(got, expected)
    off_by_one = torch.tensor([[6.0, 7.0], [18.0, 19.0], [22.0, 23.0]])   # positions 3, (4), 1: the first pad
    assert not torch.equal(got, off_by_one)


def test_gpt_classifier_ignores_what_follows_the_last_real_token():
    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=20, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8, dropout=0.0))
    model = gpt_finetune.GPTClassifier(gpt, 2).eval()
    ids = torch.tensor([[5, 6, 7, 0, 0, 0], [5, 6, 7, 9, 9, 9]])
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0]])
    out = model(ids, attention_mask=mask)
    torch.testing.assert_close(out[0], out[1])          # causal: positions after the last real token are unseen
    longer = model(ids[1:], attention_mask=torch.ones(1, 6, dtype=torch.long))
    assert not torch.allclose(longer[0], out[1])        # reading position 5 instead of 2 changes the answer


# ---------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("h, mask, word", [
    (torch.zeros(2, 3), torch.ones(2, 3), "h"),
    (torch.zeros(2, 3, 4), torch.ones(2, 4, dtype=torch.long), "mask"),
    (torch.zeros(2, 3, 4), torch.tensor([[0, 1, 1], [1, 1, 1]]), "right"),
    (torch.zeros(2, 3, 4), torch.tensor([[0, 0, 0], [1, 1, 1]]), "at least one"),
    (torch.zeros(2, 3, 4), torch.tensor([[1, 2, 0], [1, 1, 1]]), "0 and 1"),
    (torch.zeros(2, 3, 4), torch.ones(2, 3), "mask"),
])
def test_last_token_pool_rejects_bad_input(h, mask, word):
    with pytest.raises((TypeError, ValueError), match=word):
        gpt_finetune.last_token_pool(h, mask)


def test_bad_inputs_name_their_argument():
    with pytest.raises(TypeError, match="gpt"):
        gpt_finetune.GPTClassifier(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="texts"):
        gpt_finetune.encode_gpt(gpt_finetune.gpt_vocab({"config": {"vocab": ["好"]}}), "好")
    with pytest.raises(ValueError, match="meta"):
        gpt_finetune.gpt_vocab({"config": {}})
    with pytest.raises(TypeError, match="split"):
        pretrain.mlm_texts(["a review"])
    with pytest.raises(ValueError, match="steps"):
        pretrain.pretrain(steps=pretrain.PRETRAIN["steps"] + 1)
    mlm = BertForMLM(BERT(vocab_size=10, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=4))
    ids = torch.ones(1, 4, dtype=torch.long)
    with pytest.raises(ValueError, match="labels"):
        pretrain.mlm_loss(mlm, ids, torch.full_like(ids, -100), ids)
    with pytest.raises(TypeError, match="mlm"):
        pretrain.mlm_loss(mlm.bert, ids, ids, ids)


# ---------------------------------------------------------------- the stored checkpoints

def test_pretraining_metrics_recompute_from_the_weights():
    stored = repro.checkpoint_meta(pretrain.MLM_NAME)["metrics"]
    again = pretrain.rescore_mlm()
    for k, v in stored.items():
        assert again[k] == pytest.approx(v, abs=repro.RESCORE_TOLERANCE), k


@pytest.mark.parametrize("name", [pretrain.PRETRAINED_NAME, capstone.checkpoint_name("full")])
def test_bert_classifier_metrics_recompute_from_the_weights(reviews, name):
    model = capstone.build(len(reviews.vocab))
    meta = repro.load_checkpoint(name, model, dtype=torch.float64)
    ev = evaluate(model, reviews)
    for k in ("accuracy", "f1", "macro_f1"):
        assert ev[k] == pytest.approx(meta["metrics"][k], abs=1e-12), k


@pytest.mark.parametrize("name", [gpt_finetune.GPT_NAME, gpt_finetune.GPT_SCRATCH_NAME])
def test_gpt_classifier_metrics_recompute_from_the_weights(name):
    meta = repro.checkpoint_meta(name)
    data = gpt_finetune.gpt_reviews(meta)
    model = gpt_finetune.build_gpt_classifier(len(data.vocab), pretrained=False)
    repro.load_checkpoint(name, model, dtype=torch.float64)
    ev = evaluate(model, data)
    for k in ("accuracy", "f1", "macro_f1"):
        assert ev[k] == pytest.approx(meta["metrics"][k], abs=1e-12), k
    assert meta["config"]["unk_share_test"] == pytest.approx(gpt_finetune.unk_share(data.vocab, data.split.test))
