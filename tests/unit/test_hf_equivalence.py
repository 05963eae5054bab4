"""The book's ViT and BERT compute what ``transformers`` computes (the GPT: ``test_gpt_cache.py``).

Each test builds a small Hugging Face model with random weights (no download),
copies it with ``from_hf`` and compares outputs in float32 within 1e-5.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

import transformers  # pinned in requirements.txt: a broken install fails, never skips

transformers.logging.set_verbosity_error()

from course_lib.models.bert import BERT, BertClassifier, BertForMLM  # noqa: E402
from course_lib.models.vit import ViT, patchify  # noqa: E402
from hf_models import ATOL, SMALL, assert_close, make  # noqa: E402


# --------------------------------------------------------------------- BERT

def bert_config(**extra):
    return transformers.BertConfig(vocab_size=60, max_position_embeddings=20,
                                   attn_implementation="eager", **SMALL, **extra)


@pytest.fixture
def padded_batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 60, (3, 9), generator=g)
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:] = 0
    mask[2, 3:] = 0
    ids[mask == 0] = 0
    types = torch.zeros_like(ids)
    types[:, 4:] = 1
    return ids, types, mask


@pytest.mark.parametrize("use_mask", [False, True])
def test_bert_hidden_states_and_weights(padded_batch, use_mask):
    ids, types, mask = padded_batch
    hf = make(transformers.BertModel, bert_config())
    ours = BERT.from_hf(hf)
    m = mask if use_mask else None
    with torch.no_grad():
        out = hf(ids, attention_mask=m, token_type_ids=types, output_attentions=True)
        h, weights = ours(ids, types, m, need_weights=True)
    assert_close(h, out.last_hidden_state)
    for w, w_hf in zip(weights, out.attentions, strict=True):
        torch.testing.assert_close(w, w_hf, atol=ATOL, rtol=0)
    if use_mask:   # no attention flows to padding
        assert weights[0][1, :, :, 6:].abs().max() == 0


def test_bert_mlm_and_classifier_heads(padded_batch):
    ids, types, mask = padded_batch
    mlm = make(transformers.BertForMaskedLM, bert_config())
    clf = make(transformers.BertForSequenceClassification, bert_config(num_labels=3))
    with torch.no_grad():
        assert_close(BertForMLM.from_hf(mlm)(ids, types, mask),
                     mlm(ids, attention_mask=mask, token_type_ids=types).logits)
        assert_close(BertClassifier.from_hf(clf)(ids, types, mask),
                     clf(ids, attention_mask=mask, token_type_ids=types).logits)


def test_bert_mlm_head_is_tied_to_token_embeddings():
    model = BertForMLM.from_hf(make(transformers.BertForMaskedLM, bert_config()))
    assert model.decoder.weight is model.bert.tok_emb.weight


# ---------------------------------------------------------------------- ViT

def vit_config(**extra):
    return transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3,
                                  attn_implementation="eager", **SMALL, **extra)


@pytest.fixture
def images():
    return torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(5))


def test_vit_logits_and_attention_maps(images):
    hf = make(transformers.ViTForImageClassification, vit_config(num_labels=5))
    ours = ViT.from_hf(hf)
    with torch.no_grad():
        out = hf(pixel_values=images, output_attentions=True)
        logits, weights = ours(images, need_weights=True)
    assert_close(logits, out.logits)
    assert len(weights) == 2 and weights[0].shape == (2, 4, 17, 17)
    for w, w_hf in zip(weights, out.attentions, strict=True):
        torch.testing.assert_close(w, w_hf, atol=ATOL, rtol=0)


def test_vit_from_bare_model_gives_all_tokens(images):
    hf = make(transformers.ViTModel, vit_config())
    ours = ViT.from_hf(hf)
    assert ours.num_classes == 0
    with torch.no_grad():
        z, _ = ours.encode(images)
        assert_close(z, hf(pixel_values=images).last_hidden_state)
        assert_close(ours(images), z[:, 0])


def test_patch_embedding_is_flatten_then_linear(images):
    """Chapter 6: the stride-P convolution equals patchify, then one matrix."""
    torch.manual_seed(0)
    embed = ViT(image_size=32, patch_size=8, in_channels=3, num_classes=5, d_model=32, num_heads=4,
                num_layers=1, d_ff=64).patch_embed
    x = patchify(images, 8)
    assert x.shape == (2, 16, 8 * 8 * 3)
    # patch (row 1, column 2) is pixels [8:16, 16:24], flattened row by row, channels last
    patch = images[:, :, 8:16, 16:24].permute(0, 2, 3, 1).reshape(2, -1)
    torch.testing.assert_close(x[:, 1 * 4 + 2], patch)
    with torch.no_grad():
        torch.testing.assert_close(x @ embed.linear_weight().T + embed.proj.bias, embed(images),
                                   atol=ATOL, rtol=0)
