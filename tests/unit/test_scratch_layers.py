"""The NumPy layers of ``course_lib.scratch`` against PyTorch and direct loops.

Expected values come from ``torch.nn`` (with weights copied over) or from a
plain per-element loop over the book's formula, never from the code under test.
PyTorch's ``nn.MultiheadAttention`` masks use True = *blocked*, the opposite
of the book's True = may attend, hence the ``~`` below.
"""

import math

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import scratch
from course_lib.models.to_numpy import layer_params

B, L_Q, L_K, D, H, D_FF = 2, 4, 5, 8, 2, 16
ATOL = 1e-5


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def torch_mha_args(m: nn.MultiheadAttention) -> dict:
    """``nn.MultiheadAttention``'s weights in the book's ``x @ W + b`` layout."""
    Ws = [w.T.numpy() for w in m.in_proj_weight.detach().chunk(3)]
    bs = [b.numpy() for b in m.in_proj_bias.detach().chunk(3)]
    return dict(W_Q=Ws[0], W_K=Ws[1], W_V=Ws[2], W_O=m.out_proj.weight.detach().T.numpy(),
                b_q=bs[0], b_k=bs[1], b_v=bs[2], b_o=m.out_proj.bias.detach().numpy())


def torch_attn_mask(mask, L_q, L_k):
    """Our (…, L_q, L_k) mask as ``nn.MultiheadAttention``'s (B*H, L_q, L_k) blocked-mask."""
    return t(~np.broadcast_to(mask, (B, H, L_q, L_k)).reshape(B * H, L_q, L_k))


MASKS = {
    "none": None,
    "padding": scratch.padding_mask([L_K, 3], L_K),                          # (B, 1, 1, L_K)
    "per-query": (np.random.default_rng(1).random((L_Q, L_K)) < 0.6) | np.eye(L_Q, L_K, dtype=bool),
}


@pytest.mark.parametrize("mask_name", MASKS)
def test_multi_head_attention_matches_torch(mask_name):
    torch.manual_seed(0)
    m = nn.MultiheadAttention(D, H, batch_first=True).eval()
    X_q, X_kv = rand(B, L_Q, D, seed=1), rand(B, L_K, D, seed=2)
    mask = MASKS[mask_name]
    with torch.no_grad():
        expected, expected_w = m(t(X_q), t(X_kv), t(X_kv), need_weights=True, average_attn_weights=False,
                                 attn_mask=None if mask is None else torch_attn_mask(mask, L_Q, L_K))
    out, w = scratch.multi_head_attention(X_q, X_kv, num_heads=H, mask=mask, **torch_mha_args(m))
    assert out.shape == (B, L_Q, D) and w.shape == (B, H, L_Q, L_K)
    np.testing.assert_allclose(out, expected.numpy(), atol=ATOL)
    np.testing.assert_allclose(w, expected_w.numpy(), atol=ATOL)


def test_split_and_merge_heads_follow_the_feature_slices():
    X = rand(B, L_Q, D)
    heads = scratch.split_heads(X, H)
    assert heads.shape == (B, H, L_Q, D // H)
    for i in range(H):
        np.testing.assert_array_equal(heads[:, i], X[..., i * (D // H):(i + 1) * (D // H)])
    np.testing.assert_array_equal(scratch.merge_heads(heads), X)


def test_layer_norm_matches_torch():
    norm = nn.LayerNorm(D, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(t(rand(D, seed=3)))
        norm.bias.copy_(t(rand(D, seed=4)))
        x = rand(B, L_Q, D) * 3 + 1
        expected = norm(t(x)).numpy()
    got = scratch.layer_norm(x, norm.weight.detach().numpy(), norm.bias.detach().numpy(), eps=1e-6)
    np.testing.assert_allclose(got, expected, atol=ATOL)


@pytest.mark.parametrize("activation, torch_act", [("relu", nn.ReLU()), ("gelu", nn.GELU()),
                                                   ("gelu_tanh", nn.GELU(approximate="tanh"))])
def test_feed_forward_matches_torch(activation, torch_act):
    torch.manual_seed(0)
    ffn = nn.Sequential(nn.Linear(D, D_FF), torch_act, nn.Linear(D_FF, D))
    x = rand(B, L_Q, D)
    with torch.no_grad():
        expected = ffn(t(x)).numpy()
    weights = [p.detach().numpy() for p in ffn.parameters()]
    got = scratch.feed_forward(x, weights[0].T, weights[1], weights[2].T, weights[3], activation)
    np.testing.assert_allclose(got, expected, atol=ATOL)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, with_mask, activation):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, H, D_FF, dropout=0.0, activation=activation,
                                       batch_first=True, norm_first=norm_first).eval()
    x = rand(B, L_K, D)
    lengths = [L_K, 3]
    kwargs = {}
    if with_mask:  # a causal mask and a padding mask; torch's True = blocked
        kwargs = dict(src_mask=t(~scratch.causal_mask(L_K)),
                      src_key_padding_mask=t(~scratch.padding_mask(lengths, L_K)[:, 0, 0]))
    with torch.no_grad():
        expected = layer(t(x), **kwargs).numpy()
    mask = scratch.padding_mask(lengths, L_K) & scratch.causal_mask(L_K) if with_mask else None
    got = scratch.encoder_layer(x, layer_params(layer), mask=mask, norm_first=norm_first)
    np.testing.assert_allclose(got, expected, atol=ATOL)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_decoder_layer_matches_torch(norm_first, with_mask):
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(D, H, D_FF, dropout=0.0, batch_first=True,
                                       norm_first=norm_first).eval()
    y, memory = rand(B, L_Q, D, seed=1), rand(B, L_K, D, seed=2)
    lengths = [L_K, 2]
    kwargs, self_mask, cross_mask = {}, None, None
    if with_mask:
        self_mask = scratch.causal_mask(L_Q)
        cross_mask = scratch.padding_mask(lengths, L_K)
        kwargs = dict(tgt_mask=t(~self_mask), memory_key_padding_mask=t(~cross_mask[:, 0, 0]))
    with torch.no_grad():
        expected = layer(t(y), t(memory), **kwargs).numpy()
    got = scratch.decoder_layer(y, memory, layer_params(layer), self_mask=self_mask,
                                cross_mask=cross_mask, norm_first=norm_first)
    np.testing.assert_allclose(got, expected, atol=ATOL)


@pytest.mark.parametrize("d_model", [8, 7])
def test_sinusoidal_encoding_matches_the_formula_element_by_element(d_model):
    max_len = 6
    pe = scratch.sinusoidal_positional_encoding(max_len, d_model)
    assert pe.shape == (max_len, d_model)
    for pos in range(max_len):
        for i in range(0, d_model, 2):                 # column 2i = i here
            angle = pos / 10000 ** (i / d_model)
            assert pe[pos, i] == pytest.approx(math.sin(angle), abs=1e-12)
            if i + 1 < d_model:
                assert pe[pos, i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_additive_attention_matches_a_direct_loop():
    d_s, d_h, d_a, L = 3, 4, 5, 6
    s, Hs = rand(B, d_s, seed=1), rand(B, L, d_h, seed=2)
    W_s, W_h, v = rand(d_s, d_a, seed=3), rand(d_h, d_a, seed=4), rand(d_a, seed=5)
    mask = np.ones((B, L), dtype=bool)
    mask[1, 4:] = False
    context, weights = scratch.additive_attention(s, Hs, W_s, W_h, v, mask=mask)
    for b in range(B):
        e = [float(v @ np.tanh(s[b] @ W_s + Hs[b, j] @ W_h)) for j in range(L) if mask[b, j]]
        alpha = np.exp(e) / np.sum(np.exp(e))
        expected_w = np.zeros(L)
        expected_w[:len(alpha)] = alpha
        np.testing.assert_allclose(weights[b], expected_w, atol=ATOL)
        np.testing.assert_allclose(context[b], sum(a * Hs[b, j] for j, a in enumerate(alpha)), atol=ATOL)


def test_masks_follow_their_definitions():
    pad = scratch.padding_mask([3, 1], 4)
    assert pad.shape == (2, 1, 1, 4)
    assert pad[:, 0, 0].tolist() == [[True, True, True, False], [True, False, False, False]]
    ids = np.array([[5, 6, 0, 0], [7, 0, 3, 0]])
    assert scratch.padding_mask_from_ids(ids, 0)[:, 0, 0].tolist() == [[True, True, False, False],
                                                                      [True, False, True, False]]
    causal = scratch.causal_mask(4)
    assert all(causal[i, j] == (j <= i) for i in range(4) for j in range(4))
    after_3 = scratch.causal_mask(2, offset=3)                 # 2 new queries after 3 cached keys
    assert after_3.shape == (2, 5)
    assert all(after_3[i, j] == (j <= 3 + i) for i in range(2) for j in range(5))
