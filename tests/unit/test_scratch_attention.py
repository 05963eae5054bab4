"""course_lib.scratch.attention against PyTorch, on bad input, and as properties."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from course_lib.scratch import masked_softmax, scaled_dot_product_attention, softmax


def _random_qkv(rng, batch, L_q, L_k, d_k, d_v):
    return (rng.normal(size=batch + (L_q, d_k)), rng.normal(size=batch + (L_k, d_k)),
            rng.normal(size=batch + (L_k, d_v)))


@pytest.mark.parametrize("batch", [(), (3,), (2, 4)])
@pytest.mark.parametrize("L_q,L_k,d_k,d_v", [(1, 1, 1, 1), (3, 5, 4, 2), (7, 7, 16, 8)])
def test_matches_torch_without_mask(batch, L_q, L_k, d_k, d_v):
    rng = np.random.default_rng(L_q * 100 + L_k)
    Q, K, V = _random_qkv(rng, batch, L_q, L_k, d_k, d_v)
    out, w = scaled_dot_product_attention(Q, K, V)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)))
    assert out.shape == batch + (L_q, d_v) and w.shape == batch + (L_q, L_k)
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-6, rtol=0)


@pytest.mark.parametrize("seed", range(5))
def test_matches_torch_with_boolean_mask(seed):
    rng = np.random.default_rng(seed)
    Q, K, V = _random_qkv(rng, (2, 3), 4, 6, 8, 5)
    mask = rng.random((2, 1, 4, 6)) < 0.6
    mask[..., 0] = True  # PyTorch gives NaN for fully masked rows; we test those apart
    out, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)),
                                         attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-6, rtol=0)
    assert np.all(w[~np.broadcast_to(mask, w.shape)] == 0)


def test_causal_mask_matches_torch_is_causal():
    rng = np.random.default_rng(7)
    Q, K, V = _random_qkv(rng, (2,), 5, 5, 4, 3)
    causal = np.tril(np.ones((5, 5), dtype=bool))
    out, _ = scaled_dot_product_attention(Q, K, V, mask=causal)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)), is_causal=True)
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-6, rtol=0)


def test_fully_masked_row_gives_zero_weights_not_nan():
    rng = np.random.default_rng(1)
    Q, K, V = _random_qkv(rng, (), 3, 4, 2, 2)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    out, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    assert not np.isnan(out).any() and not np.isnan(w).any()
    assert np.all(w[1] == 0) and np.all(out[1] == 0)
    np.testing.assert_allclose(w[[0, 2]].sum(axis=-1), 1.0)


def test_softmax_handles_large_logits():
    x32 = np.array([566.0, 1.0, 2.0], dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(x32) / np.exp(x32).sum()
    assert np.isnan(naive).any()  # in float32 the naive formula really fails here
    p32 = softmax(x32)
    assert p32.dtype == np.float32 and np.isfinite(p32).all()
    np.testing.assert_allclose(p32, [1.0, 0.0, 0.0], atol=1e-30)
    big = np.array([566.0, 1.0, 2.0]) * 2  # exp(1132) overflows float64 as well
    p = softmax(big)
    np.testing.assert_allclose(p, [1.0, np.exp(-1130.0), np.exp(-1128.0)], rtol=1e-12, atol=0)


def test_softmax_matches_torch_and_keeps_dtype():
    x = np.random.default_rng(3).normal(size=(4, 7)).astype(np.float32)
    np.testing.assert_allclose(softmax(x, axis=0), torch.softmax(torch.from_numpy(x), 0).numpy(),
                               atol=1e-6)
    assert softmax(x).dtype == np.float32
    assert softmax(np.array([1, 2, 3])).dtype == np.float64


def test_negative_infinity_means_masked():
    p = softmax(np.array([0.0, -np.inf, 0.0]))
    np.testing.assert_allclose(p, [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(softmax(np.array([-np.inf, -np.inf])), [0.0, 0.0])


def test_float32_cross_check():
    rng = np.random.default_rng(11)
    Q, K, V = (a.astype(np.float32) for a in _random_qkv(rng, (2,), 3, 4, 8, 8))
    out, _ = scaled_dot_product_attention(Q, K, V)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-5)


BAD = [
    # (call, exception, message fragment)
    (lambda: softmax("abc"), TypeError, r"x must be an array of real numbers"),
    (lambda: softmax(None), TypeError, r"x must be .*got None"),
    (lambda: softmax(np.array([1.0, np.nan])), ValueError, r"x contains NaN at index \(1,\)"),
    (lambda: softmax(np.array([1.0, np.inf])), ValueError, r"x contains an infinite value"),
    (lambda: softmax(np.ones(3), axis=2), ValueError, r"axis must be in \[-1, 0\]"),
    (lambda: softmax(np.ones(3), axis=0.5), TypeError, r"axis must be an integer"),
    (lambda: softmax(np.ones(3, dtype=complex)), TypeError, r"x must be .*complex"),
    (lambda: scaled_dot_product_attention(np.ones(4), np.ones((3, 4)), np.ones((3, 4))),
     ValueError, r"Q must have at least 2 dimension"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 5)), np.ones((3, 4))),
     ValueError, r"K must have shape \(\.\.\., L_k, d_k\) with d_k=4.*got K \(3, 5\)"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((2, 4))),
     ValueError, r"V must have shape \(\.\.\., L_k, d_v\) with L_k=3.*got V \(2, 4\)"),
    (lambda: scaled_dot_product_attention(np.ones((2, 2, 4)), np.ones((3, 3, 4)), np.ones((3, 3, 4))),
     ValueError, r"batch dimensions of Q, K and V must broadcast"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4), np.float32), np.ones((3, 4)), np.ones((3, 4))),
     ValueError, r"share one floating dtype; got Q float32, K float64"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4)),
                                          mask=np.ones((2, 3))),
     TypeError, r"mask must be boolean .*got dtype float64"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4)),
                                          mask=np.ones((2, 4), dtype=bool)),
     ValueError, r"mask must be broadcastable to the scores' shape \(2, 3\)"),
    (lambda: scaled_dot_product_attention([["a"]], np.ones((3, 4)), np.ones((3, 4))),
     TypeError, r"Q must be an array of real numbers"),
    (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.full((3, 4), np.nan), np.ones((3, 4))),
     ValueError, r"K contains NaN"),
    (lambda: masked_softmax(np.ones((2, 3)), None), TypeError, r"mask must be a boolean array"),
]


@pytest.mark.parametrize("call,exc,match", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_input_is_named(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite))
def test_rows_sum_to_one(x):
    p = softmax(x, axis=-1)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-12)
    assert (p >= 0).all()


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite),
       st.floats(-1e3, 1e3, allow_nan=False))
def test_invariant_to_adding_a_constant_to_a_row(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 4), st.integers(0, 10_000))
def test_weights_rows_sum_to_one_with_any_mask(L_q, L_k, d, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = _random_qkv(rng, (), L_q, L_k, d, d)
    mask = rng.random((L_q, L_k)) < 0.5
    _, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    expected = mask.any(axis=-1).astype(float)
    np.testing.assert_allclose(w.sum(axis=-1), expected, atol=1e-12)
