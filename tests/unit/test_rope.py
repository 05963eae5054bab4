"""RoPE (NumPy and PyTorch) against complex multiplication, chapter 4's rotation, and bad input."""

import numpy as np
import pytest
import torch

from course_lib.models.rope import RotaryEmbedding, rope_complex
from course_lib.scratch.positional import sinusoidal_positional_encoding
from course_lib.scratch.rope import apply_rope, rope_angles


def complex_rope(x, positions, base=10000.0):
    """Independent reference: pair (x_{2i}, x_{2i+1}) is the complex number x_{2i} + i x_{2i+1},
    multiplied by exp(i m theta_i), theta_i = base^(-2i/d) (RoFormer, eq. 13; Meta's LLaMA code)."""
    d = x.shape[-1]
    z = x[..., 0::2] + 1j * x[..., 1::2]
    theta = np.array([base ** (-2.0 * i / d) for i in range(d // 2)])
    rotated = z * np.exp(1j * np.outer(positions, theta))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = rotated.real, rotated.imag
    return out


@pytest.mark.parametrize("shape", [(5, 2), (7, 8), (3, 4, 6, 16)])
@pytest.mark.parametrize("base", [10000.0, 500000.0, 2.0])
def test_apply_rope_is_complex_multiplication(shape, base):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape)
    np.testing.assert_allclose(apply_rope(x, base=base), complex_rope(x, np.arange(shape[-2]), base),
                               atol=1e-12, rtol=0)


def test_explicit_positions_and_a_cache_offset():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 10, 8))
    pos = np.array([3, -2, 100, 0, 7, 7, 1, 2, 5, 9])
    np.testing.assert_allclose(apply_rope(x, positions=pos), complex_rope(x, pos), atol=1e-12, rtol=0)
    # the last 4 rows at positions 6..9 = rotating the whole sequence and keeping them
    np.testing.assert_allclose(apply_rope(x[:, 6:], positions=np.arange(6, 10)), apply_rope(x)[:, 6:],
                               atol=1e-12, rtol=0)


def test_rope_angles_formula():
    L, d = 6, 10
    expected = np.array([[m * 10000.0 ** (-2 * i / d) for i in range(d // 2)] for m in range(L)])
    np.testing.assert_allclose(rope_angles(L, d), expected, atol=1e-14, rtol=0)
    assert rope_angles(L, d).shape == (L, d // 2)


def test_derived_from_chapter4_rotation():
    """Chapter 4: PE(pos + k) = R_k PE(pos). RoPE at position m applies R_{-m}, so rotating the
    sinusoidal table's rows with positions = -k moves them k places on."""
    d, k = 16, 5
    PE = sinusoidal_positional_encoding(40, d)
    moved = apply_rope(PE[:30], positions=np.full(30, -k))
    np.testing.assert_allclose(moved, PE[k:30 + k], atol=1e-12, rtol=0)


@pytest.mark.parametrize("seed", range(4))
def test_scores_depend_only_on_m_minus_n(seed):
    rng = np.random.default_rng(seed)
    d = 32
    q, k = rng.normal(size=d), rng.normal(size=d)

    def score(m, n):
        q_m = apply_rope(q[None], positions=np.array([m]))[0]
        k_n = apply_rope(k[None], positions=np.array([n]))[0]
        return q_m @ k_n

    for delta in (0, 1, 3, -4, 17):
        values = [score(n + delta, n) for n in (0, 2, 11, 50, 999)]
        np.testing.assert_allclose(values, values[0], atol=1e-10, rtol=0)
    assert abs(score(5, 0) - score(6, 0)) > 1e-6   # but it does depend on the distance


def test_rotation_keeps_every_pair_length():
    x = np.random.default_rng(3).normal(size=(9, 12))
    y = apply_rope(x)
    np.testing.assert_allclose(np.hypot(y[:, 0::2], y[:, 1::2]), np.hypot(x[:, 0::2], x[:, 1::2]),
                               atol=1e-12, rtol=0)
    assert apply_rope(x.astype(np.float32)).dtype == np.float32


def test_module_matches_reference_with_offsets_and_growth():
    torch.manual_seed(0)
    rope = RotaryEmbedding(8, max_len=4)
    x = torch.randn(2, 3, 6, 8, dtype=torch.float64)
    for offset in (0, 5, 40):   # 40 + 6 > max_len: the table grows
        got = rope(x, offset=offset).numpy()
        np.testing.assert_allclose(got, complex_rope(x.numpy(), np.arange(offset, offset + 6)),
                                   atol=1e-12, rtol=0)
    assert rope.cos.shape[0] >= 46
    assert rope(x.float()).dtype == torch.float32
    assert "cos" not in rope.state_dict()


@pytest.mark.parametrize("shape", [(50, 16), (2, 3, 200, 64)])
def test_meta_complex_form_agrees_to_1e12_in_float64(shape):
    """Chapter 11's fourth check: Meta's complex form (torch.polar, view_as_complex). With the angles in
    float32, as Meta's own code computes them (.float()), it differs by ~1e-7 and this test fails."""
    x = np.random.default_rng(len(shape)).normal(size=shape)
    got = rope_complex(torch.from_numpy(x))
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), apply_rope(x), atol=1e-12, rtol=0)
    np.testing.assert_allclose(got.numpy(), complex_rope(x, np.arange(shape[-2])), atol=1e-12, rtol=0)
    module = RotaryEmbedding(shape[-1])(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got.numpy(), module, atol=1e-12, rtol=0)
    assert rope_complex(torch.from_numpy(x).float()).dtype == torch.float32


def test_module_scores_relative():
    rope = RotaryEmbedding(16)
    q, k = torch.randn(1, 1, 1, 16, dtype=torch.float64), torch.randn(1, 1, 1, 16, dtype=torch.float64)
    s = [(rope(q, offset=n + 3) * rope(k, offset=n)).sum().item() for n in (0, 7, 100)]
    np.testing.assert_allclose(s, s[0], atol=1e-10, rtol=0)


BAD = [
    (lambda: rope_angles(0, 4), ValueError, "L must be an integer >= 1"),
    (lambda: rope_angles("3", 4), TypeError, "L must be an integer"),
    (lambda: rope_angles(3, 5), ValueError, "d must be even"),
    (lambda: rope_angles(3, 4, base=1), ValueError, "base must be a number > 1"),
    (lambda: rope_angles(3, 4, base="e"), TypeError, "base must be a number"),
    (lambda: apply_rope(np.zeros((3, 5))), ValueError, "x must have an even last dimension"),
    (lambda: apply_rope(np.zeros(4)), ValueError, "x must have at least 2 dimension"),
    (lambda: apply_rope([["a", "b"]]), TypeError, "x must be an array of real numbers"),
    (lambda: apply_rope(np.full((2, 2), np.nan)), ValueError, "x contains NaN"),
    (lambda: apply_rope(np.zeros((3, 4)), positions=np.array([0.0, 1.0, 2.0])), TypeError,
     "positions must be integers"),
    (lambda: apply_rope(np.zeros((3, 4)), positions=np.arange(4)), ValueError,
     r"positions must have shape \(L,\) = \(3,\)"),
    (lambda: apply_rope(np.zeros((3, 4)), base=0.5), ValueError, "base must be a number > 1"),
    (lambda: RotaryEmbedding(7), ValueError, "d_k must be even"),
    (lambda: RotaryEmbedding(8, max_len=0), ValueError, "max_len must be an integer >= 1"),
    (lambda: RotaryEmbedding(8, base=None), TypeError, "base must be a number"),
    (lambda: RotaryEmbedding(8)(torch.zeros(1, 2, 3, 6)), ValueError, "x must have last dimension 8"),
    (lambda: RotaryEmbedding(8)(np.zeros((1, 2, 3, 8))), TypeError, "x must be a torch.Tensor"),
    (lambda: RotaryEmbedding(8)(torch.zeros(1, 2, 3, 8), offset=-1), ValueError,
     "offset must be an integer >= 0"),
    (lambda: rope_complex(np.zeros((3, 4))), TypeError, "x must be a torch.Tensor"),
    (lambda: rope_complex(torch.zeros(3, 5)), ValueError, "x must have shape .* with d even"),
    (lambda: rope_complex(torch.zeros(3, 4), base=1), ValueError, "base must be a number > 1"),
]


@pytest.mark.parametrize("call,exc,message", BAD)
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
