"""Chapter 5's on-page Transformer, piece by piece, checked without the notebook.

The functions below are the chapter's page code (``book/ch05_transformer.md``,
"Building it piece by piece"), copied: each is checked in float64 against
``course_lib`` and against ``torch.nn.TransformerEncoderLayer`` /
``TransformerDecoderLayer`` with the same weights.
"""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_lib.models import DecoderLayer, EncoderLayer
from course_lib.scratch import sinusoidal_positional_encoding

TOL = 1e-12


# ------------------------------------------------------------------ the page's code

def positional_encoding(L, d_model):
    pos = torch.arange(L, dtype=torch.float64)[:, None]                  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)             # (d_model/2,)
    angle = pos / 10000 ** (two_i / d_model)                             # (L, d_model/2)
    pe = torch.zeros(L, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe                                                            # (L, d_model)


def embed(ids, E, pe):
    return E[ids] * math.sqrt(E.shape[1]) + pe[:ids.shape[1]]           # (B, L, d_model)


def linear(x, layer):
    return x @ layer.weight.T + layer.bias


def feed_forward(x, p):
    return linear(torch.relu(linear(x, p.linear1)), p.linear2)          # max(0, x W1 + b1) W2 + b2


def layer_norm(x, norm):
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return norm.weight * (x - mu) / torch.sqrt(var + norm.eps) + norm.bias


def multi_head(x_q, x_kv, attn, mask=None):
    B, L_q, d_model = x_q.shape
    h = attn.num_heads
    d_k = d_model // h

    def split(x, proj):                                                  # (B, L, d_model) -> (B, h, L, d_k)
        return linear(x, proj).view(B, -1, h, d_k).transpose(1, 2)
    Q, K, V = split(x_q, attn.q_proj), split(x_kv, attn.k_proj), split(x_kv, attn.v_proj)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)                   # (B, h, L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    heads = scores.softmax(-1) @ V                                       # (B, h, L_q, d_k)
    return linear(heads.transpose(1, 2).reshape(B, L_q, d_model), attn.out_proj)


def encoder_layer(x, mask, p):
    x = layer_norm(x + multi_head(x, x, p.self_attn, mask), p.norm1)
    return layer_norm(x + feed_forward(x, p), p.norm2)


def decoder_layer(y, memory, causal, src_mask, p):
    y = layer_norm(y + multi_head(y, y, p.self_attn, causal), p.norm1)
    y = layer_norm(y + multi_head(y, memory, p.cross_attn, src_mask), p.norm2)
    return layer_norm(y + feed_forward(y, p), p.norm3)


def transformer_logits(model, src, tgt_in, pe, pad_id=0):
    src_mask = (src != pad_id)[:, None, None, :]                         # (B, 1, 1, L_s)
    x = embed(src, model.src_embed.weight, pe)
    for layer in model.encoder:
        x = encoder_layer(x, src_mask, layer)
    L_t = tgt_in.shape[1]
    causal = torch.ones(L_t, L_t, dtype=torch.bool).tril()               # (L_t, L_t)
    y = embed(tgt_in, model.tgt_embed.weight, pe)
    for layer in model.decoder:
        y = decoder_layer(y, x, causal, src_mask, layer)
    return linear(y, model.generator)                                    # (B, L_t, tgt_vocab)


def smoothed_loss(logits, target, eps, pad_id=0):
    logp = logits.log_softmax(-1)                                        # (N, V)
    V = logits.shape[-1]
    q = torch.full_like(logp, eps / V)
    q.scatter_(1, target[:, None], 1 - eps + eps / V)                    # (1 - eps) one-hot + eps / V
    keep = target != pad_id
    return -(q * logp).sum(-1)[keep].mean()


# ------------------------------------------------------------------ fixtures

def _torch_layers(seed=0, d_model=16, num_heads=4, d_ff=32):
    torch.manual_seed(seed)
    enc = nn.TransformerEncoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True,
                                     dtype=torch.float64).eval()
    dec = nn.TransformerDecoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True,
                                     dtype=torch.float64).eval()
    return enc, dec


def _close(a, b):
    return torch.allclose(a, b, rtol=0, atol=TOL)


# ------------------------------------------------------------------ tests

def test_positional_encoding_matches_the_numpy_formula():
    pe = positional_encoding(50, 16)
    assert _close(pe, torch.from_numpy(sinusoidal_positional_encoding(50, 16)))
    assert torch.equal(pe[0, 0::2], torch.zeros(8)) and torch.equal(pe[0, 1::2], torch.ones(8).double())


def test_embedding_is_scaled_by_sqrt_d_model():
    from course_lib.labs import tagging

    model = tagging.make_segmenter(20, seed=0, dropout=0.0).double().eval()
    ids = torch.tensor([[5, 6, 7, 0]])
    pe = model.positional.pe[:4]
    assert _close(embed(ids, model.src_embed.weight, pe),
                  model.positional(model.src_embed(ids) * 8.0))        # sqrt(64) = 8
    assert torch.equal(embed(ids, model.src_embed.weight, pe)[0, 3], pe[3])   # <pad> embeds to zero


def test_feed_forward_is_the_formula():
    enc, _ = _torch_layers()
    ours = EncoderLayer.from_torch(enc)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    W1, b1, W2, b2 = enc.linear1.weight.T, enc.linear1.bias, enc.linear2.weight.T, enc.linear2.bias
    by_formula = torch.clamp(x @ W1 + b1, min=0) @ W2 + b2
    assert _close(feed_forward(x, ours), by_formula)
    assert _close(feed_forward(x, ours), ours._feed_forward(x)[0])


def test_encoder_layer_equals_course_lib_and_torch():
    enc, _ = _torch_layers()
    ours = EncoderLayer.from_torch(enc)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    real = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])         # sentence 2 has 2 pads
    page = encoder_layer(x, real[:, None, None, :], ours)
    assert _close(page, ours(x, real[:, None, None, :])[0])
    theirs = enc(x, src_key_padding_mask=~real)
    assert _close(page[real], theirs[real])
    with torch.no_grad():                                                # a planted difference is seen
        ours.norm2.bias[0] += 1e-9
    assert not _close(encoder_layer(x, real[:, None, None, :], ours)[real], theirs[real])


def test_decoder_layer_equals_course_lib_and_torch():
    _, dec = _torch_layers(seed=1)
    ours = DecoderLayer.from_torch(dec)
    y = torch.randn(2, 4, 16, dtype=torch.float64)
    memory = torch.randn(2, 6, 16, dtype=torch.float64)
    real = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    page = decoder_layer(y, memory, causal, real[:, None, None, :], ours)
    assert _close(page, ours(y, memory, causal, real[:, None, None, :])[0])
    theirs = dec(y, memory, tgt_mask=~causal, memory_key_padding_mask=~real)
    assert _close(page, theirs)
    # the causal mask matters: a later target token cannot change an earlier output
    y2 = y.clone()
    y2[:, -1] += 1.0
    assert _close(decoder_layer(y2, memory, causal, real[:, None, None, :], ours)[:, :-1], page[:, :-1])


def test_whole_model_equals_course_lib_transformer():
    from course_lib.labs import tagging

    model = tagging.make_segmenter(30, seed=3, dropout=0.0).double().eval()
    src = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    tgt_in = torch.tensor([[1, 3, 5, 3, 5], [1, 6, 6, 0, 0]])
    with torch.no_grad():
        page = transformer_logits(model, src, tgt_in, model.positional.pe)
        assert _close(page, model(src, tgt_in))


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_label_smoothing_equals_torch(eps):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(12, 7, generator=g, dtype=torch.float64)
    target = torch.tensor([3, 4, 5, 6, 2, 0, 0, 3, 4, 5, 6, 2])
    ours = smoothed_loss(logits, target, eps)
    assert math.isclose(float(ours), float(F.cross_entropy(logits, target, ignore_index=0, label_smoothing=eps)),
                        rel_tol=0, abs_tol=TOL)
    # by hand for one row: -(1 - eps) log p_y - eps/V sum_i log p_i
    logp = logits[:1].log_softmax(-1)
    one = -(1 - eps) * logp[0, 3] - eps / 7 * logp[0].sum()
    assert math.isclose(float(smoothed_loss(logits[:1], target[:1], eps)), float(one), abs_tol=TOL)


def test_label_smoothing_minimum_is_not_the_one_hot():
    """With smoothing, the best prediction is q itself, not a certain one: its loss is q's entropy."""
    eps, V = 0.1, 7
    target = torch.tensor([3])
    q = torch.full((1, V), eps / V, dtype=torch.float64)
    q[0, 3] += 1 - eps
    at_q = float(smoothed_loss(q.log(), target, eps))
    entropy = float(-(q * q.log()).sum())
    assert math.isclose(at_q, entropy, abs_tol=TOL)
    sharp = torch.full((1, V), -20.0, dtype=torch.float64)
    sharp[0, 3] = 20.0
    assert float(smoothed_loss(sharp, target, eps)) > at_q
