"""RMSNorm, SwiGLU and the LLaMA block against their formulas and PyTorch, and bad input."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib.models.norms import LlamaBlock, RMSNorm, SwiGLU
from course_lib.models.rope import RotaryEmbedding
from course_lib.scratch.norms import rms_norm, swiglu


def rms_formula(x, g, eps):
    """Row by row, as written: x / sqrt((1/d) sum x_i^2 + eps) * g."""
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        out[idx] = row / math.sqrt(sum(v * v for v in row) / len(row) + eps) * g
    return out


def swiglu_formula(x, W1, W3, W2):
    """(Swish_1(x W) * x V) W_2 with Swish_1(z) = z * sigmoid(z) (Shazeer, 2020), in PyTorch."""
    x, W1, W3, W2 = (torch.from_numpy(a) for a in (x, W1, W3, W2))
    z = x @ W1
    return ((z * torch.sigmoid(z)) * (x @ W3) @ W2).numpy()


@pytest.mark.parametrize("shape", [(5,), (3, 8), (2, 4, 16)])
@pytest.mark.parametrize("eps", [1e-6, 1e-5, 0.5])
def test_rms_norm_formula(shape, eps):
    rng = np.random.default_rng(len(shape))
    x, g = rng.normal(size=shape) * 3, rng.normal(size=shape[-1])
    np.testing.assert_allclose(rms_norm(x, g, eps), rms_formula(x, g, eps), atol=1e-12, rtol=0)
    ref = F.rms_norm(torch.from_numpy(x), (shape[-1],), torch.from_numpy(g), eps).numpy()
    np.testing.assert_allclose(rms_norm(x, g, eps), ref, atol=1e-12, rtol=0)


def test_rms_norm_of_zero_and_scale_invariance():
    g = np.ones(4)
    assert np.all(rms_norm(np.zeros((2, 4)), g) == 0)
    x = np.random.default_rng(0).normal(size=(3, 4))
    np.testing.assert_allclose(rms_norm(7 * x, g, 1e-12), rms_norm(x, g, 1e-12), atol=1e-10)


@pytest.mark.parametrize("d_model,d_ff", [(1, 1), (4, 6), (8, 24)])
def test_swiglu_formula(d_model, d_ff):
    rng = np.random.default_rng(d_ff)
    x = rng.normal(size=(2, 5, d_model)) * 4     # large pre-activations: SiLU must not overflow
    W1, W3 = rng.normal(size=(d_model, d_ff)), rng.normal(size=(d_model, d_ff))
    W2 = rng.normal(size=(d_ff, d_model))
    np.testing.assert_allclose(swiglu(x, W1, W3, W2), swiglu_formula(x, W1, W3, W2), atol=1e-12, rtol=0)


def test_modules_match_formulas_and_torch():
    torch.manual_seed(0)
    norm = RMSNorm(16, eps=1e-5).double()
    with torch.no_grad():
        norm.weight.normal_()
    theirs = torch.nn.RMSNorm(16, eps=1e-5).double()
    theirs.load_state_dict(norm.state_dict())
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    torch.testing.assert_close(norm(x), theirs(x), atol=1e-12, rtol=0)
    np.testing.assert_allclose(norm(x).detach().numpy(),
                               rms_formula(x.numpy(), norm.weight.detach().numpy(), 1e-5), atol=1e-12, rtol=0)

    ffn = SwiGLU(16, 40).double()
    W1, W3, W2 = (w.weight.detach().numpy().T for w in (ffn.w1, ffn.w3, ffn.w2))
    np.testing.assert_allclose(ffn(x).detach().numpy(), swiglu_formula(x.numpy(), W1, W3, W2),
                               atol=1e-12, rtol=0)
    np.testing.assert_allclose(ffn(x).detach().numpy(), swiglu(x.numpy(), W1, W3, W2), atol=1e-12, rtol=0)


@pytest.mark.parametrize("norm_first", [True, False])
def test_llama_block_wiring_and_causality(norm_first):
    torch.manual_seed(2)
    block = LlamaBlock(16, 4, 2, 32, rope=RotaryEmbedding(4), norm_first=norm_first).double()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    attn = lambda h: block.attn(h, causal=True)[0]   # noqa: E731
    if norm_first:
        h = x + attn(block.norm1(x))
        expected = h + block.ffn(block.norm2(h))
    else:
        h = block.norm1(x + attn(x))
        expected = block.norm2(h + block.ffn(h))
    torch.testing.assert_close(block(x), expected, atol=1e-12, rtol=0)
    y = x.clone()
    y[:, 4:] += 1.0                                   # change the future only
    torch.testing.assert_close(block(y)[:, :4], block(x)[:, :4], atol=1e-12, rtol=0)


Z = np.zeros((2, 4))
W = np.zeros((4, 6))
T = torch.zeros(2, 3, 8)
BAD = [
    (lambda: rms_norm(Z, np.ones(3)), ValueError, r"g must have shape \(d,\) = \(4,\)"),
    (lambda: rms_norm(Z, np.ones(4), eps=0), ValueError, "eps must be a positive number"),
    (lambda: rms_norm(Z, np.ones(4), eps="small"), TypeError, "eps must be a positive number"),
    (lambda: rms_norm([["a"]], np.ones(1)), TypeError, "x must be an array of real numbers"),
    (lambda: rms_norm(np.full((2, 4), np.inf), np.ones(4)), ValueError, "x contains an infinite value"),
    (lambda: swiglu(Z, np.zeros((5, 6)), W, W.T), ValueError, r"W1 must have shape \(d_model, d_ff\)"),
    (lambda: swiglu(Z, W, np.zeros((4, 7)), W.T), ValueError, "W3 must have the shape of W1"),
    (lambda: swiglu(Z, W, W, W), ValueError, r"W2 must have shape \(d_ff, d_model\) = \(6, 4\)"),
    (lambda: swiglu(np.full((2, 4), np.nan), W, W, W.T), ValueError, "x contains NaN"),
    (lambda: swiglu(Z, None, W, W.T), TypeError, "W1 must be an array of real numbers"),
    (lambda: RMSNorm(0), ValueError, "d_model must be an integer >= 1"),
    (lambda: RMSNorm(8, eps=-1.0), ValueError, "eps must be a positive number"),
    (lambda: RMSNorm(8)(torch.zeros(2, 4)), ValueError, "x must have last dimension 8"),
    (lambda: RMSNorm(8)(torch.zeros(2, 8, dtype=torch.long)), TypeError, "x must be a floating-point tensor"),
    (lambda: SwiGLU(8, 0), ValueError, "d_ff must be an integer >= 1"),
    (lambda: SwiGLU(8.0, 4), TypeError, "d_model must be an integer"),
    (lambda: SwiGLU(8, 16)(np.zeros(8)), TypeError, "x must be a torch.Tensor"),
    (lambda: LlamaBlock(8, 4, 3, 16), ValueError, "num_kv_heads=3 must divide num_heads=4"),
    (lambda: LlamaBlock(8, 4, 2, 16, norm_first="yes"), TypeError, "norm_first must be True or False"),
    (lambda: LlamaBlock(8, 4, 2, 16)(torch.zeros(3, 8)), ValueError, "x must have 3 dimensions"),
]


@pytest.mark.parametrize("call,exc,message", BAD)
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
