"""ALiBi slopes and biases against the paper's closed form and reference code, and bad input."""

import math

import numpy as np
import pytest

from course_lib.scratch.alibi import alibi_bias, alibi_slopes


def reference_slopes(n):
    """The ALiBi authors' code (ofirpress/attention_with_linear_biases, fairseq
    multihead_attention.py, ``get_slopes``), written out here as the reference."""
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + reference_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2])


def test_paper_example_eight_heads():
    # "For models with 8 heads, the slopes that we used are the geometric sequence
    # 1/2^1, 1/2^2, ..., 1/2^8" (Press et al., 2022, section 3).
    np.testing.assert_allclose(alibi_slopes(8), [1 / 2 ** k for k in range(1, 9)], rtol=1e-15)


@pytest.mark.parametrize("n", [1, 2, 4, 16, 32, 64])
def test_closed_form_for_powers_of_two(n):
    np.testing.assert_allclose(alibi_slopes(n), [2 ** (-8 * h / n) for h in range(1, n + 1)], rtol=1e-14)


@pytest.mark.parametrize("n", list(range(1, 41)) + [96])
def test_matches_reference_code_for_every_head_count(n):
    np.testing.assert_allclose(alibi_slopes(n), reference_slopes(n), rtol=1e-13)
    assert alibi_slopes(n).shape == (n,)


def test_twelve_heads_interleave():
    np.testing.assert_allclose(alibi_slopes(12)[8:], [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5], rtol=1e-14)


def reference_bias(num_heads, L, slopes):
    """The authors' implementation adds m_h * j (the key's position) and a causal -inf mask;
    per query row that differs from -m_h (i - j) by the constant m_h * i, which softmax ignores."""
    pos = np.arange(L, dtype=float)
    bias = np.asarray(slopes)[:, None, None] * pos[None, None, :]     # (nh, 1, L)
    return np.where(np.tril(np.ones((L, L), dtype=bool)), bias, -np.inf)   # (nh, L, L)


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("num_heads,L", [(1, 1), (4, 6), (12, 9)])
def test_causal_bias_gives_the_reference_attention(num_heads, L):
    rng = np.random.default_rng(L)
    scores = rng.normal(size=(2, num_heads, L, L))
    ours = softmax(scores + alibi_bias(num_heads, L, L))
    theirs = softmax(scores + reference_bias(num_heads, L, reference_slopes(num_heads)))
    np.testing.assert_allclose(ours, theirs, atol=1e-14, rtol=0)


def test_bias_entries_by_hand():
    m = reference_slopes(3)
    b = alibi_bias(3, 4, 4)
    for h in range(3):
        for i in range(4):
            for j in range(4):
                assert b[h, i, j] == (-m[h] * (i - j) if j <= i else -np.inf)
    nb = alibi_bias(3, 4, 4, causal=False)
    assert np.all(np.isfinite(nb)) and np.allclose(nb, np.swapaxes(nb, -1, -2))
    assert nb[1, 0, 3] == -3 * m[1]


def test_queries_are_the_last_positions():
    full = alibi_bias(4, 7, 7)
    np.testing.assert_array_equal(alibi_bias(4, 1, 7), full[:, -1:])
    np.testing.assert_array_equal(alibi_bias(4, 3, 7), full[:, -3:])
    np.testing.assert_array_equal(alibi_bias(4, 3, 7, causal=False),
                                  alibi_bias(4, 7, 7, causal=False)[:, -3:])


BAD = [
    (lambda: alibi_slopes(0), ValueError, "num_heads must be an integer >= 1"),
    (lambda: alibi_slopes(2.5), TypeError, "num_heads must be an integer"),
    (lambda: alibi_slopes(True), TypeError, "num_heads must be an integer"),
    (lambda: alibi_bias(0, 2, 2), ValueError, "num_heads must be an integer >= 1"),
    (lambda: alibi_bias(2, 3, 2), ValueError, "L_q must be <= L_k"),
    (lambda: alibi_bias(2, 2, "4"), TypeError, "L_k must be an integer"),
    (lambda: alibi_bias(2, 0, 4), ValueError, "L_q must be an integer >= 1"),
    (lambda: alibi_bias(2, 2, 2, causal="yes"), TypeError, "causal must be True or False"),
]


@pytest.mark.parametrize("call,exc,message", BAD)
def test_bad_input_names_the_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
