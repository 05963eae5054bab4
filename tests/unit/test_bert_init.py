"""BERT's initialisation (course_lib.models.init_bert_weights, chapter 7's in-domain pretraining)."""

import math

import pytest
import torch
from torch import nn

from course_lib.models import BERT, BertForMLM, init_bert_weights


def _mlm(vocab_size=300, d_model=32, seed=0):
    torch.manual_seed(seed)
    bert = BERT(vocab_size=vocab_size, d_model=d_model, num_heads=4, num_layers=2, d_ff=64, max_len=16,
                dropout=0.0)
    return BertForMLM(bert)


def test_weights_drawn_at_bert_scale_biases_zero_norms_one():
    mlm = init_bert_weights(_mlm())
    for name, m in mlm.named_modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            w = m.weight.detach()
            assert w.abs().max() <= 0.04 + 1e-7, name              # cut at two standard deviations
            if w.numel() >= 4096:                                     # large enough to estimate the spread
                # a N(0, 0.02²) cut at ±2σ has a standard deviation of 0.02 · 0.8796 (truncated normal)
                assert w.std().item() == pytest.approx(0.02 * 0.8796, rel=0.05), name
        if isinstance(m, nn.Linear) and m.bias is not None:
            assert torch.count_nonzero(m.bias) == 0, name
        if isinstance(m, nn.LayerNorm):
            assert torch.equal(m.weight, torch.ones_like(m.weight)) and torch.count_nonzero(m.bias) == 0, name


def test_tied_decoder_stays_tied_and_the_padding_row_zero():
    mlm = init_bert_weights(_mlm())
    assert mlm.decoder.weight is mlm.bert.tok_emb.weight
    assert torch.count_nonzero(mlm.bert.tok_emb.weight[mlm.bert.tok_emb.padding_idx]) == 0


def test_first_masked_lm_loss_is_near_ln_v_unlike_pytorch_defaults():
    V = 300
    ids = torch.randint(5, V, (8, 16), generator=torch.Generator().manual_seed(1))
    labels = torch.randint(5, V, (8, 16), generator=torch.Generator().manual_seed(2))

    def first_loss(model):
        model.eval()
        with torch.no_grad():
            return nn.functional.cross_entropy(model(ids).transpose(1, 2), labels).item()

    # small logits: every token about equally likely, so the loss is the uniform guess's ln V
    assert first_loss(init_bert_weights(_mlm(V))) == pytest.approx(math.log(V), abs=0.05)
    # PyTorch's N(0, 1) embeddings, tied to the decoder: logits of spread ~√d_model, a far larger loss
    assert first_loss(_mlm(V)) > math.log(V) + 2


def test_same_seed_same_weights():
    a, b = init_bert_weights(_mlm(seed=3)), init_bert_weights(_mlm(seed=3))
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))


@pytest.mark.parametrize("std", [0, -0.02, float("inf"), float("nan"), True, "0.02"])
def test_bad_std_is_named(std):
    with pytest.raises(ValueError, match="std"):
        init_bert_weights(_mlm(), std=std)


def test_not_a_module_is_named():
    with pytest.raises(TypeError, match="model"):
        init_bert_weights({"weight": torch.zeros(2)})
