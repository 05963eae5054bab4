"""Every Python listing of the source documents run verbatim, and the Rust/Haskell ports.

The registry ``course_lib.chapters.listings_data`` cites these tests as the evidence of
its verdicts; expected values come from ``course_lib.scratch`` or from arithmetic
written out here, never from the listing itself.
"""

import math
import re

import numpy as np
import pytest
import torch

from course_lib import chapters
from course_lib.chapters import listings as L
from course_lib.chapters import listings_evidence as E
from course_lib.chapters import listings_ports as P
from course_lib.scratch.attention import scaled_dot_product_attention, softmax
from course_lib.scratch.layers import encoder_layer
from course_lib.scratch.multihead import multi_head_attention
from course_lib.scratch.positional import sinusoidal_positional_encoding


def _ok(run):
    assert run.error is None, repr(run.error)
    return run.namespace


# ---- multirep: Rust and Haskell through the ports ----

def _code_lines(src: str, comment: str) -> list[str]:
    """The listing's statements that compute something (assignments, loops, returns)."""
    keep = []
    for line in src.splitlines():
        s = line.strip()
        if not s or s.startswith(comment) or s in ("}", "{", ")", "];"):
            continue
        if re.search(r"(^let |^for |=|^&)", s) and not s.startswith(("pub ", "#", "Self", "use ")):
            keep.append(" ".join(s.split()))
    return keep


@pytest.mark.parametrize("index,comment,skip", [
    (0, "//", set()),
    # record fields set from same-named arguments become dict keys in the port
    (1, "--", {"dModel = dModel,", "dK = dK,", "numHeads = numHeads,"}),
])
def test_port_maps_every_computing_line(index, comment, skip):
    port = " ".join(open(P.__file__, encoding="utf-8").read().split())
    missing = [s for s in _code_lines(L.text("multirep", index), comment)
               if s not in port and s not in skip]
    assert missing == []


def test_rust_port_softmax_by_column():
    x, mha, out = P.rust_main(seed=0)
    w = mha.attention_heads[0].last_weights
    np.testing.assert_allclose(w.sum(axis=0), np.ones(w.shape[1]), rtol=1e-12)
    assert np.abs(w.sum(axis=1) - 1).max() > 0.1
    # With the softmax taken by row, the port is exactly course_lib's multi-head attention.
    class RowSoftmax(P.RustSelfAttention):
        def softmax(self, s):
            return softmax(s, axis=-1)
    for h in mha.attention_heads:
        h.__class__ = RowSoftmax
    W = {n: np.hstack([getattr(h, n) for h in mha.attention_heads]) for n in ("w_q", "w_k", "w_v")}
    ref, _ = multi_head_attention(x, x, W["w_q"], W["w_k"], W["w_v"], mha.w_o, mha.num_heads)
    np.testing.assert_allclose(mha.forward(x), ref, rtol=1e-10)


def test_haskell_port_example():
    v = [1.0, 2.0, 3.0]
    twice = [math.exp(math.exp(a - 3.0)) / sum(math.exp(b - 3.0) for b in v) for a in v]
    np.testing.assert_allclose(P.hs_softmax(v), twice, rtol=1e-12)
    x, mha, out = P.hs_example()
    # x = 0.1 everywhere, every weight 0.1: V entries 64·0.1·0.1 = 0.64, all ten scores equal,
    # so each doubly-exponentiated weight is e/10 and a head outputs 10·(e/10)·0.64; only the
    # first head's 8 columns meet 8 rows of W_O (0.1 each).
    np.testing.assert_allclose(out, np.full((10, 64), 8 * 0.1 * 10 * (math.e / 10) * 0.64), rtol=1e-12)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(P.hs_multiply(a, b), a @ b)
    np.testing.assert_array_equal(P.hs_transpose(a), a.T)


def test_haskell_names_found_in_the_listing():
    text = E.haskell_names()
    assert "'dModel' declared in SelfAttention" in text and "MultiHeadAttention" in text
    assert "'transpose' defined" in text


# ---- multirep: Python ----

def test_multirep_attention_matches_scratch():
    ns = _ok(L.run("multirep", 2))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 16))
    sa = ns["SelfAttention"](16, 4)
    out, w = sa.forward(x)
    ref, ref_w = scaled_dot_product_attention(x @ sa.w_q, x @ sa.w_k, x @ sa.w_v)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12)
    mha = ns["MultiHeadAttention"](4, 16)
    W = {n: np.hstack([getattr(h, n) for h in mha.attention_heads]) for n in ("w_q", "w_k", "w_v")}
    ref, _ = multi_head_attention(x, x, W["w_q"], W["w_k"], W["w_v"], mha.w_o, 4)
    np.testing.assert_allclose(mha.forward(x)[0], ref, rtol=1e-12)


def test_multirep_block_gradient_misses_attention():
    ns = _ok(L.run("multirep", 2))
    blk = ns["TransformerBlock"](16, 4, 32)
    blk.dropout_layer.eval()
    g = torch.Generator().manual_seed(0)
    x, c = torch.randn(5, 16, generator=g), torch.randn(5, 16, generator=g)
    xr = x.clone().requires_grad_(True)
    (blk.forward(xr) * c).sum().backward()
    # The same block with the attention output frozen as a constant: autograd's gradient is that one.
    a = torch.tensor(blk.multi_head_attn.forward(x.numpy())[0], dtype=torch.float32)
    xc = x.clone().requires_grad_(True)
    h = blk.norm1(xc + a)
    (blk.norm2(h + blk.feed_forward(h)) * c).sum().backward()
    torch.testing.assert_close(xr.grad, xc.grad)
    assert not isinstance(blk, torch.nn.Module)
    details = E.block_autograd_details()
    assert details["auto"] != details["fd"]


def test_multirep_encoder_alone_raises_after_mha_matches_scratch():
    alone = L.run("multirep", 6)
    assert isinstance(alone.error, NameError) and "MultiHeadAttention" in str(alone.error)
    ns = _ok(L.run("multirep", [2, 6]))
    layer = ns["TransformerEncoderLayer"](16, 4, 32, 0.1)
    mha, ff = layer.multi_head_attn, layer.feed_forward
    W = {n: np.hstack([getattr(h, n) for h in mha.attention_heads]) for n in ("w_q", "w_k", "w_v")}
    ones, zeros = np.ones(16), np.zeros(16)
    params = {"num_heads": 4, "activation": "relu", "eps": 1e-6,
              "self_attn": {"W_Q": W["w_q"], "W_K": W["w_k"], "W_V": W["w_v"], "W_O": mha.w_o},
              "ffn": {"W1": ff.w1, "b1": ff.b1, "W2": ff.w2, "b2": ff.b2},
              "norm1": {"gamma": ones, "beta": zeros}, "norm2": {"gamma": ones, "beta": zeros}}
    x = np.random.default_rng(2).standard_normal((7, 16))
    np.testing.assert_allclose(layer.forward(x), encoder_layer(x, params), rtol=1e-10, atol=1e-12)
    pe = ns["PositionalEncoding"](16, max_len=50)
    np.testing.assert_allclose(pe.pe, sinusoidal_positional_encoding(50, 16), atol=1e-12)


# ---- ch24 ----

CH24 = [1, 3, 5, 7, 8]


def test_ch24_attention_matches_scratch():
    ns = _ok(L.run("ch24", [1, 3]))
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((3, 4, 8))
    out, w = ns["scaled_dot_product_attention"](Q, K, V)
    ref, ref_w = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    sa = ns["SelfAttention"](8)
    out, _ = sa.forward(Q)
    ref, _ = scaled_dot_product_attention(Q @ sa.W_q, Q @ sa.W_k, Q @ sa.W_v)
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_ch24_multi_head_matches_scratch():
    assert isinstance(L.run("ch24", 5).error, NameError)       # no import of its own
    ns = _ok(L.run("ch24", [3, 5]))
    mha = ns["MultiHeadAttention"](16, 4)
    x = np.random.default_rng(4).standard_normal((6, 16))
    out, w = mha.forward(x)
    ref, ref_w = multi_head_attention(x, x, mha.W_q, mha.W_k, mha.W_v, mha.W_o, 4)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12)


def test_ch24_positional_encoding_matches_scratch():
    ns = _ok(L.run("ch24", 7))
    pe = ns["PositionalEncoding"](32, max_seq_len=100)
    np.testing.assert_allclose(pe.pe, sinusoidal_positional_encoding(100, 32), atol=1e-12)


def test_ch24_encoder_matches_scratch():
    ns = _ok(L.run("ch24", CH24))
    layer = ns["TransformerEncoderLayer"](16, 4, 32)
    a, ff = layer.self_attention, layer.feed_forward
    ones, zeros = np.ones(16), np.zeros(16)
    params = {"num_heads": 4, "activation": "relu", "eps": 1e-6,
              "self_attn": {"W_Q": a.W_q, "W_K": a.W_k, "W_V": a.W_v, "W_O": a.W_o},
              "ffn": {"W1": ff.W1, "b1": ff.b1, "W2": ff.W2, "b2": ff.b2},
              "norm1": {"gamma": ones, "beta": zeros}, "norm2": {"gamma": ones, "beta": zeros}}
    x = np.random.default_rng(5).standard_normal((7, 16))
    np.testing.assert_allclose(layer.forward(x), encoder_layer(x, params), rtol=1e-10, atol=1e-12)


def test_ch24_platform_runs_as_printed():
    run = L.run("ch24", CH24 + [10])
    ns = _ok(run)
    assert "词汇表大小: 4\n" in run.stdout          # only the four special tokens (ch07-tokenizer)
    probs = re.findall(r"概率分布: (.*)", run.stdout)
    assert len(probs) == 2 and probs[0] == probs[1]   # one input for every text (ch08-untrained)
    proc = ns["TextProcessor"]()
    assert proc.tokenize("这部电影真的很棒，我非常喜欢！") == ["这部电影真的很棒我非常喜欢"]
    for key in ("ch07-tokenizer", "ch08-untrained"):
        assert chapters.show(key)


def test_ch24_optimizer_and_deployment_run():
    ns = _ok(L.run("ch24", CH24 + [10, 11]))
    proc = ns["TextProcessor"]()
    proc.build_vocab(["a b", "a b", "c"])
    model = ns["TransformerTextClassifier"](proc.vocab_size, d_model=16, num_heads=4, num_layers=1)
    opt = ns["ModelOptimizer"](model)
    opt.quantization(bits=8)
    assert model.embedding.dtype == np.float32 and model.classifier.dtype == np.float32
    assert len(np.unique(model.embedding)) <= 2 ** 8
    opt.prune_model(0.5)
    assert (model.embedding == 0).mean() >= 0.5
    api = ns["ModelDeployment"](model, proc).create_api_interface()
    result = api("a b c")
    assert result["status"] == "success" and sum(result["probabilities"]) == pytest.approx(1)
    assert api(None)["status"] == "error"          # the API turns any exception into a message


def test_ch24_skills_dict():
    ns = _ok(L.run("ch24", 13))
    assert list(ns["new_skills"]) == ["注意力机制", "Transformer架构", "NLP应用", "模型优化", "部署技术"]


# ---- the errata this file's runs found ----

KEYS = ["ch02-rust-softmax-axis", "ch02-haskell-softmax-exp", "ch02-haskell-compile",
        "ch03-haskell-one-head", "ch05-multirep-block-autograd", "ch05-multirep-encoder-standalone"]


@pytest.mark.parametrize("key", KEYS)
def test_listing_errata_are_live_and_cited(key):
    e = chapters._find(key)
    assert e.is_live() and e.chapter == "book/appendix/listings"
    assert any(key in entry.errata for entry in L.registry().values())


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"\(source, index\) must name a block"):
        L.run("multirep", 99)
    with pytest.raises(ValueError, match="verdict must be one of"):
        L.Listing("multirep", 0, "fine")
    with pytest.raises(ValueError, match="source must be one of"):
        L.Listing("nope", 0, "ok")
    with pytest.raises(TypeError, match="indices must be a block index or a list"):
        L.run("ch24", "13")
    with pytest.raises(TypeError, match="s must be a str"):
        L.shorten_floats(0.5)


def test_run_reports_the_listings_exception():
    run = L.run("attention", 2)                        # a fragment: nn is not imported
    assert isinstance(run.error, NameError) and "raised NameError" in repr(run)


def test_shorten_floats():
    assert L.shorten_floats("{'a': np.float64(0.123456789), 'b': 2.5}") == "{'a': 0.1235, 'b': 2.5}"
