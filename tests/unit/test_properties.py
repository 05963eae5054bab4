"""Properties of attention that the book states and the code must keep.

Chapter 4: self-attention without positions is permutation equivariant.
Chapter 5: a causal mask leaks nothing from the future; padding changes
nothing for real tokens. Chapter 7: KV-cached decoding equals recomputation.
Everywhere: a fully masked row gives zeros, never NaN.

The PyTorch models run in float64 so that tolerances can be tight.
"""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import scratch
from course_lib.models.to_numpy import layer_params
from course_lib.models import EncoderLayer, KVCache, MultiHeadAttention, Transformer

D, H = 8, 2
SETTINGS = settings(max_examples=15, deadline=None)

lengths = st.integers(min_value=1, max_value=6)
seeds = st.integers(min_value=0, max_value=2**16)


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def mha_weights(seed):
    return {name: rand(seed + i, D, D) for i, name in enumerate(("W_Q", "W_K", "W_V", "W_O"))}


def encoder_layer(seed):
    torch.manual_seed(seed)
    return EncoderLayer(D, H, 2 * D, dropout=0.0).double().eval()


@SETTINGS
@given(L=lengths, seed=seeds, data=st.data())
def test_self_attention_is_permutation_equivariant(L, seed, data):
    perm = np.array(data.draw(st.permutations(range(L))))
    X = rand(seed, 2, L, D)
    out, w = scratch.multi_head_attention(X, X, num_heads=H, **mha_weights(seed))
    out_p, w_p = scratch.multi_head_attention(X[:, perm], X[:, perm], num_heads=H, **mha_weights(seed))
    np.testing.assert_allclose(out_p, out[:, perm], atol=1e-10)
    np.testing.assert_allclose(w_p, w[:, :, perm][..., perm], atol=1e-10)

    layer, x = encoder_layer(seed), torch.from_numpy(X)
    with torch.no_grad():
        torch.testing.assert_close(layer(x[:, perm])[0], layer(x)[0][:, perm])


@SETTINGS
@given(L=st.integers(2, 6), seed=seeds, data=st.data())
def test_a_causal_mask_leaks_nothing_from_the_future(L, seed, data):
    t = data.draw(st.integers(0, L - 2))                  # positions <= t must not change
    X = rand(seed, 2, L, D)
    X_changed = X.copy()
    X_changed[:, t + 1:] = rand(seed + 1, 2, L - t - 1, D)
    mask = scratch.causal_mask(L)
    out = scratch.multi_head_attention(X, X, num_heads=H, mask=mask, **mha_weights(seed))[0]
    out_changed = scratch.multi_head_attention(X_changed, X_changed, num_heads=H, mask=mask,
                                               **mha_weights(seed))[0]
    np.testing.assert_allclose(out_changed[:, :t + 1], out[:, :t + 1], atol=1e-10)

    layer = encoder_layer(seed)
    with torch.no_grad():
        y = layer(torch.from_numpy(X), torch.from_numpy(mask))[0]
        y_changed = layer(torch.from_numpy(X_changed), torch.from_numpy(mask))[0]
    torch.testing.assert_close(y_changed[:, :t + 1], y[:, :t + 1])


@SETTINGS
@given(L=st.integers(2, 6), seed=seeds, data=st.data())
def test_padded_tokens_do_not_change_real_tokens(L, seed, data):
    real = data.draw(st.integers(1, L - 1))
    mask = scratch.padding_mask([L, real], L)
    X = rand(seed, 2, L, D)
    X_changed = X.copy()
    X_changed[1, real:] = rand(seed + 1, L - real, D) * 10
    params = layer_params(encoder_layer(seed))
    out = scratch.encoder_layer(X, params, mask=mask)
    out_changed = scratch.encoder_layer(X_changed, params, mask=mask)
    np.testing.assert_allclose(out_changed[1, :real], out[1, :real], atol=1e-10)
    np.testing.assert_allclose(out_changed[0], out[0], atol=1e-10)

    torch.manual_seed(seed)
    model = Transformer(src_vocab=9, tgt_vocab=9, d_model=D, num_heads=H, num_encoder_layers=1,
                        num_decoder_layers=1, d_ff=2 * D, dropout=0.0, max_len=16).double().eval()
    src = torch.from_numpy(np.random.default_rng(seed).integers(1, 9, (2, L)))
    src[1, real:] = 0
    with torch.no_grad():                                 # change what the <pad> vector is
        model.src_embed.weight[0] = torch.from_numpy(rand(seed + 2, D))
        memory = model.encode(src)
        model.src_embed.weight[0] = torch.from_numpy(rand(seed + 3, D))
        memory_changed = model.encode(src)
    torch.testing.assert_close(memory_changed[1, :real], memory[1, :real])


@SETTINGS
@given(L=lengths, seed=seeds)
def test_kv_cached_decoding_equals_recomputation(L, seed):
    layers = [encoder_layer(seed + i) for i in range(2)]   # a tiny GPT-style stack
    x = torch.from_numpy(rand(seed, 2, L, D))
    with torch.no_grad():
        full = x
        for layer in layers:
            full = layer(full, torch.ones(L, L, dtype=torch.bool).tril())[0]
        caches, steps = [KVCache() for _ in layers], []
        for t in range(L):
            h = x[:, t:t + 1]
            for layer, cache in zip(layers, caches):
                h = layer(h, cache=cache)[0]               # one new query sees every cached key
            steps.append(h)
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert all(len(cache) == L for cache in caches)

    torch.manual_seed(seed)
    model = Transformer(src_vocab=9, tgt_vocab=9, d_model=D, num_heads=H, num_encoder_layers=1,
                        num_decoder_layers=2, d_ff=2 * D, dropout=0.0, max_len=16).double().eval()
    rng = np.random.default_rng(seed)
    src, tgt_in = (torch.from_numpy(rng.integers(1, 9, (2, n))) for n in (5, L))
    with torch.no_grad():
        memory, src_mask = model.encode(src), model.source_mask(src)
        caches = [KVCache() for _ in model.decoder]
        cached = [model.decode(tgt_in[:, t:t + 1], memory, src_mask, caches=caches, offset=t)[0]
                  for t in range(L)]
        torch.testing.assert_close(torch.cat(cached, dim=1), model(src, tgt_in))


@SETTINGS
@given(L_q=lengths, L_k=lengths, seed=seeds)
def test_fully_masked_rows_give_zeros_not_nan(L_q, L_k, seed):
    rng = np.random.default_rng(seed)
    mask = rng.random((2, 1, L_q, L_k)) < 0.5
    mask[0, 0, 0] = False                                  # at least one fully masked row
    empty = ~mask.any(-1)                                  # (2, 1, L_q)
    X_q, X_kv = rand(seed, 2, L_q, D), rand(seed + 1, 2, L_k, D)
    out, w = scratch.multi_head_attention(X_q, X_kv, num_heads=H, mask=mask, **mha_weights(seed))
    assert np.isfinite(out).all() and np.isfinite(w).all()
    assert np.all(w[np.broadcast_to(empty, w.shape[:-1])] == 0)

    torch.manual_seed(seed)
    mha = MultiHeadAttention(D, H, bias=False).double().eval()
    q, kv, m = torch.from_numpy(X_q), torch.from_numpy(X_kv), torch.from_numpy(mask)
    fast = mha(q, kv, kv, mask=m)[0]
    explicit, w_t = mha(q, kv, kv, mask=m, need_weights=True)
    assert torch.isfinite(fast).all() and torch.isfinite(w_t).all()
    torch.testing.assert_close(fast, explicit)
    rows = torch.from_numpy(empty[:, 0])                   # (2, L_q)
    assert torch.all(fast[rows] == 0)
