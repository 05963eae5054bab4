"""Chapter 7's BERT lab (course_lib.labs.bert_lab): the bilingual data, and the
BERT layer written out in full, which must be the chapter's code exactly and
compute what the library's layer and transformers' BertLayer compute.
"""

import copy
import inspect
import os
import re

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch

from course_lib.data import data_dir
from course_lib.labs import bert_lab
from course_lib.models.layers import EncoderLayer
from course_lib.models.pretrained import load_minilm

CHAPTER = data_dir().parent / "book" / "ch07_bert.md"


@pytest.fixture(scope="module")
def minilm64():
    return copy.deepcopy(load_minilm()[0]).double()


@pytest.fixture(scope="module")
def batch(minilm64):
    tok = load_minilm()[1]
    enc = tok.encode_batch(["To be, or not to be, that is the question:", "Good night, sweet prince."])
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc]).bool()
    m = minilm64
    with torch.no_grad():
        x = m.emb_norm(m.pos_emb(m.tok_emb(ids) + m.seg_emb(torch.zeros_like(ids))))
    return x, mask


def test_the_data_keep_their_fixed_split():
    data = bert_lab.load_data()
    assert len(data.train) + len(data.test) == 327 and len(data.test) == 67
    assert data.X_train.shape == (len(data.train), bert_lab.MAX_LEN)


def test_the_chapter_prints_exactly_the_library_code():
    source = inspect.getsource(bert_lab.bert_layer.__wrapped__)
    assert source.startswith("def bert_layer(x, mask, layer):")
    assert source in CHAPTER.read_text(encoding="utf-8")
    # every reshape of the attention carries its shape
    for line in source.splitlines():
        if ".view(" in line or ".reshape(" in line or "@" in line:
            assert re.search(r"# \(B, ", line), line


def test_bert_layer_equals_the_library_layer(minilm64, batch):
    x, mask = batch
    for layer in minilm64.layers:
        with torch.no_grad():
            ours = bert_lab.bert_layer(x, mask, layer)
            lib = layer(x, mask=mask[:, None, None, :])[0]
        assert torch.allclose(ours[mask], lib[mask], rtol=0, atol=1e-12)
        x = lib


def test_bert_layer_equals_transformers_bert_layer(minilm64, batch):
    x, mask = batch
    hf = bert_lab.hf_minilm()
    assert next(hf.parameters()).dtype == torch.float64
    with torch.no_grad():
        ours = bert_lab.bert_layer(x, mask, minilm64.layers[3])
    theirs = bert_lab.hf_layer(hf, 3, x, mask)
    assert torch.allclose(ours[mask], theirs[mask], rtol=0, atol=1e-12)
    other = bert_lab.hf_layer(hf, 2, x, mask)
    assert not torch.allclose(ours[mask], other[mask], atol=1e-3)        # a different layer differs


def test_padding_does_not_change_the_real_tokens(minilm64, batch):
    x, mask = batch
    layer = minilm64.layers[0]
    with torch.no_grad():
        padded = bert_lab.bert_layer(x, mask, layer)
        T = int(mask[1].sum())
        alone = bert_lab.bert_layer(x[1:, :T], mask[1:, :T], layer)
    assert torch.allclose(padded[1, :T], alone[0], rtol=0, atol=1e-12)


def test_a_planted_bug_is_caught(minilm64, batch):
    """The comparison is sharp: the layer without 1/sqrt(d_k) differs by far more than the tolerance."""
    x, mask = batch
    layer = copy.deepcopy(minilm64.layers[0])
    with torch.no_grad():
        good = bert_lab.bert_layer(x, mask, layer)
        layer.self_attn.q_proj.weight.mul_(8.0)          # as if 1/sqrt(d_k) = 1/8 were forgotten
        layer.self_attn.q_proj.bias.mul_(8.0)
        bad = bert_lab.bert_layer(x, mask, layer)
    assert (good - bad)[mask].abs().max() > 1e-3


def test_bad_input():
    layer = EncoderLayer(8, 2, 16, activation="gelu").double().eval()
    x = torch.zeros(1, 3, 8, dtype=torch.float64)
    mask = torch.ones(1, 3, dtype=torch.bool)
    with pytest.raises(TypeError, match="layer"):
        bert_lab.bert_layer(x, mask, torch.nn.Linear(8, 8))
    with pytest.raises(ValueError, match="post-LN"):
        bert_lab.bert_layer(x, mask, EncoderLayer(8, 2, 16, activation="gelu", norm_first=True))
    with pytest.raises(ValueError, match="post-LN"):
        bert_lab.bert_layer(x, mask, EncoderLayer(8, 2, 16, activation="relu"))
    with pytest.raises(ValueError, match="x"):
        bert_lab.bert_layer(torch.zeros(1, 3, 4, dtype=torch.float64), mask, layer)
    with pytest.raises(TypeError, match="mask"):
        bert_lab.bert_layer(x, torch.ones(1, 3), layer)
    with pytest.raises(TypeError, match="mask"):
        bert_lab.bert_layer(x, torch.ones(1, 4, dtype=torch.bool), layer)
    with pytest.raises(TypeError, match="dtype"):
        bert_lab.hf_minilm(torch.float16)


def test_hf_layer_bad_input(batch):
    hf = bert_lab.hf_minilm(torch.float32)
    x, mask = batch
    with pytest.raises(ValueError, match="index"):
        bert_lab.hf_layer(hf, 6, x.float(), mask)
    with pytest.raises(TypeError, match="mask"):
        bert_lab.hf_layer(hf, 0, x.float(), mask.long())
