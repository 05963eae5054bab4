"""Tiled online-softmax attention (NumPy and PyTorch) equals full softmax attention."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib.models.tiled_attention import peak_memory_bytes
from course_lib.models.tiled_attention import tiled_attention as torch_tiled
from course_lib.scratch.online_softmax import tiled_attention


def full_attention(Q, K, V, allowed=None):
    """Independent reference: the whole score matrix at once, zero rows where nothing is allowed."""
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if allowed is None:
        allowed = np.ones(s.shape, dtype=bool)
    allowed = np.broadcast_to(allowed, s.shape)
    s = np.where(allowed, s, -np.inf)
    row_max = np.where(allowed.any(-1, keepdims=True), s.max(-1, keepdims=True), 0.0)
    e = np.where(allowed, np.exp(s - row_max), 0.0)
    total = e.sum(-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return w @ V


def causal_allowed(L_q, L_k):
    return np.tril(np.ones((L_q, L_k), dtype=bool), k=L_k - L_q)


def qkv(rng, batch, L_q, L_k, d_k=8, d_v=5, scale=1.0):
    return (scale * rng.normal(size=batch + (L_q, d_k)), scale * rng.normal(size=batch + (L_k, d_k)),
            rng.normal(size=batch + (L_k, d_v)))


@pytest.mark.parametrize("block_size", [1, 3, 7, 16, 100])
@pytest.mark.parametrize("batch,L_q,L_k", [((), 1, 1), ((2,), 13, 13), ((2, 3), 9, 20), ((1,), 20, 6)])
def test_equals_full_attention(block_size, batch, L_q, L_k):
    rng = np.random.default_rng(block_size * 1000 + L_q * 10 + L_k)
    Q, K, V = qkv(rng, batch, L_q, L_k)
    np.testing.assert_allclose(tiled_attention(Q, K, V, block_size=block_size), full_attention(Q, K, V),
                               atol=1e-12, rtol=0)


@pytest.mark.parametrize("block_size", [1, 4, 5, 64])
@pytest.mark.parametrize("L_q,L_k", [(11, 11), (3, 11), (1, 11)])
def test_causal_and_padding(block_size, L_q, L_k):
    rng = np.random.default_rng(block_size + L_q)
    Q, K, V = qkv(rng, (3, 2), L_q, L_k)
    lengths = np.array([L_k, 7, 2])
    pad = (np.arange(L_k)[None, :] < lengths[:, None])[:, None, None, :]   # (3, 1, 1, L_k)
    for allowed, kwargs in ((causal_allowed(L_q, L_k), dict(causal=True)),
                            (pad, dict(mask=pad)),
                            (pad & causal_allowed(L_q, L_k), dict(mask=pad, causal=True))):
        out = tiled_attention(Q, K, V, block_size=block_size, **kwargs)
        np.testing.assert_allclose(out, full_attention(Q, K, V, allowed), atol=1e-12, rtol=0)


def test_fully_masked_rows_are_zero_and_large_logits_do_not_overflow():
    rng = np.random.default_rng(0)
    Q, K, V = qkv(rng, (2,), 6, 9, scale=30.0)   # logits in the hundreds: exp alone would overflow
    mask = rng.random((2, 6, 9)) < 0.5
    mask[0, 2] = False
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = tiled_attention(Q, K, V, block_size=2, mask=mask)
    np.testing.assert_allclose(out, full_attention(Q, K, V, mask), atol=1e-12, rtol=0)
    assert np.all(out[0, 2] == 0)


def test_keeps_float32():
    rng = np.random.default_rng(1)
    Q, K, V = (a.astype(np.float32) for a in qkv(rng, (2,), 10, 10))
    out = tiled_attention(Q, K, V, block_size=4)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, full_attention(*(a.astype(float) for a in (Q, K, V))), atol=1e-5)


@pytest.mark.parametrize("block_size", [1, 4, 32])
def test_torch_version_matches_reference_and_sdpa(block_size):
    torch.manual_seed(block_size)
    Q, K, V = (torch.randn(2, 3, 12, 8, dtype=torch.float64) for _ in range(3))
    ref = full_attention(Q.numpy(), K.numpy(), V.numpy())
    np.testing.assert_allclose(torch_tiled(Q, K, V, block_size).numpy(), ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(torch_tiled(Q, K, V, block_size, causal=True),
                               F.scaled_dot_product_attention(Q, K, V, is_causal=True), atol=1e-12, rtol=0)
    mask = torch.rand(2, 1, 12, 12) < 0.5
    mask[0, 0, 3] = False   # a query that sees nothing: zeros, not NaN
    allowed = mask.numpy() & causal_allowed(12, 12)
    got = torch_tiled(Q, K, V, block_size, mask=mask, causal=True)
    np.testing.assert_allclose(got.numpy(), full_attention(Q.numpy(), K.numpy(), V.numpy(), allowed),
                               atol=1e-12, rtol=0)
    assert torch.all(got[0, :, 3] == 0)


def test_torch_version_with_a_cache_shape():
    torch.manual_seed(0)
    Q = torch.randn(1, 2, 3, 4, dtype=torch.float64)
    K, V = torch.randn(1, 2, 10, 4, dtype=torch.float64), torch.randn(1, 2, 10, 6, dtype=torch.float64)
    ref = full_attention(Q.numpy(), K.numpy(), V.numpy(), causal_allowed(3, 10))
    np.testing.assert_allclose(torch_tiled(Q, K, V, 4, causal=True).numpy(), ref, atol=1e-12, rtol=0)


def test_peak_memory_bytes_counts_torch_allocations():
    assert peak_memory_bytes(torch.empty, 1000, 1000, dtype=torch.float64) == 8_000_000

    def two_then_one():
        a = torch.ones(500, 1000, dtype=torch.float64)   # 4 MB
        b = a * 2                                        # 4 MB more: peak 8 MB
        del a
        return b.sum()

    assert 8_000_000 <= peak_memory_bytes(two_then_one, repeats=2) < 8_001_000
    assert peak_memory_bytes(lambda: None) == 0


def test_tiled_peak_memory_is_a_small_fraction_of_full():
    torch.manual_seed(0)
    Q = torch.randn(1, 1, 1024, 64)
    full = peak_memory_bytes(lambda: torch.softmax(Q @ Q.transpose(-2, -1) / 8, dim=-1) @ Q)
    tiled = peak_memory_bytes(torch_tiled, Q, Q, Q, 128)
    assert full >= 2 * 1024 * 1024 * 4      # scores and weights, float32
    assert tiled < 0.15 * full, (tiled, full)


Z = np.zeros((2, 3, 4))
T = torch.zeros(1, 2, 3, 4)
BAD = [
    (lambda: tiled_attention([["a"]], Z, Z), TypeError, "Q must be an array of real numbers"),
    (lambda: tiled_attention(Z, np.zeros((2, 3, 5)), Z), ValueError, "K must have shape .* d_k=4"),
    (lambda: tiled_attention(Z, Z, np.zeros((2, 4, 4))), ValueError, "V must have shape .* L_k=3"),
    (lambda: tiled_attention(Z, Z, Z.astype(np.float32)), ValueError, "must share one floating dtype"),
    (lambda: tiled_attention(Z, Z, Z, mask=np.ones((3, 3))), TypeError, "mask must be boolean"),
    (lambda: tiled_attention(Z, Z, Z, mask=np.ones((4, 3), dtype=bool)), ValueError,
     "mask must be broadcastable"),
    (lambda: tiled_attention(Z, Z, Z, block_size=0), ValueError, "block_size must be an integer >= 1"),
    (lambda: tiled_attention(Z, Z, Z, causal="yes"), TypeError, "causal must be True or False"),
    (lambda: torch_tiled(Z, T, T), TypeError, "Q must be a torch.Tensor"),
    (lambda: torch_tiled(T[0], T, T), ValueError, "Q must have 4 dimensions"),
    (lambda: torch_tiled(T, T, T.double()), ValueError, "must share one dtype"),
    (lambda: torch_tiled(T, T, torch.zeros(1, 2, 5, 4)), ValueError, "must share B and num_heads"),
    (lambda: torch_tiled(T, T, T, mask=torch.ones(3, 3)), TypeError, "mask must be boolean"),
    (lambda: torch_tiled(T, T, T, block_size=2.0), TypeError, "block_size must be an integer"),
    (lambda: peak_memory_bytes(3), TypeError, "fn must be callable"),
    (lambda: peak_memory_bytes(lambda: None, repeats=0), ValueError, "repeats must be an integer >= 1"),
    (lambda: peak_memory_bytes(lambda: None, repeats="2"), TypeError, "repeats must be an integer"),
]


@pytest.mark.parametrize("call,exc,message", BAD)
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
