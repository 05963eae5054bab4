"""Grouped-query attention against PyTorch's enable_gqa, MultiHeadAttention, and its own KV cache."""

import pytest
import torch
import torch.nn.functional as F

from course_lib.models.attention import KVCache, MultiHeadAttention
from course_lib.models.gqa import GroupedQueryAttention, kv_cache_bytes_per_token
from course_lib.models.rope import RotaryEmbedding
from course_lib.scratch.rope import apply_rope


def reference(m, x, causal=False, attn_mask=None, rotate=False):
    """Independent reference: project with the module's weights, then PyTorch's fused
    scaled_dot_product_attention with enable_gqa=True (keys and values shared by groups)."""
    B, L, _ = x.shape
    Q = F.linear(x, m.q_proj.weight, m.q_proj.bias).view(B, L, m.num_heads, m.d_k).transpose(1, 2)
    K = F.linear(x, m.k_proj.weight, m.k_proj.bias).view(B, L, m.num_kv_heads, m.d_k).transpose(1, 2)
    V = F.linear(x, m.v_proj.weight, m.v_proj.bias).view(B, L, m.num_kv_heads, m.d_k).transpose(1, 2)
    if rotate:   # RoPE from the NumPy module
        Q, K = (torch.from_numpy(apply_rope(t.detach().numpy())) for t in (Q, K))
    heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=attn_mask, is_causal=causal, enable_gqa=True)
    return m.out_proj(heads.transpose(1, 2).reshape(B, L, -1))


def make(d_model=24, num_heads=6, num_kv_heads=2, seed=0, **kwargs):
    torch.manual_seed(seed)
    return GroupedQueryAttention(d_model, num_heads, num_kv_heads, **kwargs).double()


@pytest.mark.parametrize("num_kv_heads", [1, 2, 3, 6])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_enable_gqa(num_kv_heads, causal):
    m = make(num_kv_heads=num_kv_heads, bias=True)
    x = torch.randn(3, 7, 24, dtype=torch.float64)
    out, _ = m(x, causal=causal)
    torch.testing.assert_close(out, reference(m, x, causal=causal), atol=1e-12, rtol=0)


def test_matches_repeat_interleave_with_a_padding_mask():
    m = make(num_kv_heads=3)
    x = torch.randn(2, 5, 24, dtype=torch.float64)
    pad = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, None, :]   # (2, 1, 1, 5)
    out, w = m(x, mask=pad, need_weights=True)
    B, L = 2, 5
    Q = m.q_proj(x).view(B, L, 6, 4).transpose(1, 2)
    K = m.k_proj(x).view(B, L, 3, 4).transpose(1, 2).repeat_interleave(2, dim=1)   # head h -> h // 2
    V = m.v_proj(x).view(B, L, 3, 4).transpose(1, 2).repeat_interleave(2, dim=1)
    ref_w = (Q @ K.transpose(-2, -1) / 2).masked_fill(~pad, float("-inf")).softmax(-1)
    torch.testing.assert_close(w, ref_w, atol=1e-12, rtol=0)
    torch.testing.assert_close(out, m.out_proj((ref_w @ V).transpose(1, 2).reshape(B, L, 24)),
                               atol=1e-12, rtol=0)


def test_with_rope_matches_numpy_rope_reference():
    m = make(num_kv_heads=2, rope=RotaryEmbedding(4))
    x = torch.randn(2, 9, 24, dtype=torch.float64)
    torch.testing.assert_close(m(x, causal=True)[0], reference(m, x, causal=True, rotate=True),
                               atol=1e-12, rtol=0)


@pytest.mark.parametrize("bias", [True, False])
def test_num_kv_heads_equal_num_heads_is_multi_head_attention(bias):
    torch.manual_seed(1)
    mha = MultiHeadAttention(24, 6, bias=bias).double()
    gqa = GroupedQueryAttention(24, 6, 6, bias=bias).double()
    gqa.load_state_dict(mha.state_dict())
    x = torch.randn(2, 8, 24, dtype=torch.float64)
    mask = torch.rand(2, 1, 8, 8) < 0.7
    mask[1, 0, 2] = False   # a query that sees nothing: zeros in both
    causal = torch.ones(8, 8, dtype=torch.bool).tril()
    torch.testing.assert_close(gqa(x)[0], mha(x, x, x)[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(gqa(x, mask=mask, causal=True)[0], mha(x, x, x, mask=mask & causal)[0],
                               atol=1e-12, rtol=0)


@pytest.mark.parametrize("num_kv_heads", [1, 2, 6])
def test_kv_cache_decoding_equals_one_causal_pass(num_kv_heads):
    m = make(num_kv_heads=num_kv_heads, rope=RotaryEmbedding(4, max_len=4))
    x = torch.randn(2, 10, 24, dtype=torch.float64)
    full, _ = m(x, causal=True)
    cache = KVCache()
    steps = [m(x[:, :4], causal=True, cache=cache)[0]]           # a prompt of 4, then one at a time
    steps += [m(x[:, t:t + 1], causal=True, cache=cache)[0] for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-12, rtol=0)
    assert cache.K.shape == (2, num_kv_heads, 10, 4) and cache.V.shape == (2, num_kv_heads, 10, 4)


def test_kv_cache_bytes_per_token_matches_real_caches():
    """Count the bytes of real KVCache tensors after generating, layer by layer."""
    torch.manual_seed(0)
    for num_kv_heads in (1, 2, 4):
        layers = [GroupedQueryAttention(32, 4, num_kv_heads) for _ in range(3)]
        caches = [KVCache() for _ in layers]
        x = torch.randn(1, 5, 32)
        for layer, cache in zip(layers, caches):
            x = layer(x, causal=True, cache=cache)[0]
        stored = sum(c.K.nbytes + c.V.nbytes for c in caches)
        assert stored / 5 == kv_cache_bytes_per_token(3, num_kv_heads, 8, bytes_per_value=4)
    # LLaMA-2-7B (MHA): 2 x 32 layers x 32 heads x 128 x 2 bytes = 0.5 MiB per token
    assert kv_cache_bytes_per_token(32, 32, 128) == 2 ** 19
    assert kv_cache_bytes_per_token(32, 8, 128) * 4 == kv_cache_bytes_per_token(32, 32, 128)


X = torch.zeros(2, 3, 24, dtype=torch.float64)
BAD = [
    (lambda: GroupedQueryAttention(24, 5, 1), ValueError, "d_model=24 must be divisible by num_heads=5"),
    (lambda: GroupedQueryAttention(24, 6, 4), ValueError, "num_kv_heads=4 must divide num_heads=6"),
    (lambda: GroupedQueryAttention(24, 6, 0), ValueError, "num_kv_heads must be an integer >= 1"),
    (lambda: GroupedQueryAttention(24, 6, 2.0), TypeError, "num_kv_heads must be an integer"),
    (lambda: GroupedQueryAttention(24, 6, 2, rope=RotaryEmbedding(8)), ValueError, "rope must rotate .* d_k"),
    (lambda: GroupedQueryAttention(24, 6, 2, rope="yes"), TypeError,
     "rope must be None or a RotaryEmbedding"),
    (lambda: make()(X[0]), ValueError, "x must have 3 dimensions"),
    (lambda: make()(X.float()), TypeError, "x must have the module's dtype"),
    (lambda: make()(torch.zeros(2, 3, 12, dtype=torch.float64)), ValueError, "x must have last dimension 24"),
    (lambda: make()(X, mask=torch.ones(2, 6, 3, 4, dtype=torch.bool)), ValueError,
     "mask must be broadcastable"),
    (lambda: make()(X, mask=torch.ones(3, 3)), TypeError, "mask must be boolean"),
    (lambda: make()(X, causal=1), TypeError, "causal must be True or False"),
    (lambda: make()(X, cache={}), TypeError, "cache must be None or a KVCache"),
    (lambda: kv_cache_bytes_per_token(0, 8, 128), ValueError, "num_layers must be an integer >= 1"),
    (lambda: kv_cache_bytes_per_token(32, 8, 1.5), TypeError, "d_k must be an integer"),
    (lambda: kv_cache_bytes_per_token(32, 8, 128, bytes_per_value="2"), TypeError,
     "bytes_per_value must be an integer"),
    (lambda: kv_cache_bytes_per_token(32, -1, 128), ValueError, "num_kv_heads must be an integer >= 1"),
]


def test_cache_from_another_layer_is_refused():
    cache = KVCache()
    make(num_kv_heads=2)(X, cache=cache)
    with pytest.raises(ValueError, match="cache holds 2 key/value heads"):
        make(num_kv_heads=3)(X, cache=cache)


@pytest.mark.parametrize("call,exc,message", BAD)
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
