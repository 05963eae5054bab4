"""course_lib.analysis.opcount.count_work: multiply-adds and the largest created tensor (chapter 10).

Every expected number is worked out by hand from the shapes: an (m, k) @ (k, n)
product is m k n multiply-adds and returns m n numbers; float32 is 4 bytes.
"""

import pytest
import torch

from course_lib.analysis.opcount import count_work
from course_lib.models.efficient_attention import full_attention, linear_attention, local_window_attention

A, B = torch.randn(3, 4), torch.randn(4, 5)


def test_a_matrix_product_is_m_k_n_multiply_adds_and_m_n_numbers():
    got = count_work(lambda X, Y: X @ Y, A, B)
    assert got["multiply_adds"] == 3 * 4 * 5          # 60, not the 120 FLOPs the counter reports
    assert got["largest_bytes"] == 3 * 5 * 4 and got["largest_shape"] == (3, 5)
    assert got["largest_op"] == "aten.mm.default"


def test_bytes_follow_the_dtype_and_batches_multiply():
    got = count_work(lambda X, Y: X @ Y, A.double(), B.double())
    assert (got["multiply_adds"], got["largest_bytes"]) == (60, 3 * 5 * 8)
    got = count_work(lambda X, Y: X @ Y, torch.randn(2, 3, 4), torch.randn(2, 4, 5))
    assert (got["multiply_adds"], got["largest_bytes"]) == (2 * 60, 2 * 3 * 5 * 4)


def test_views_of_the_inputs_are_not_created_but_a_copy_is():
    for view in (lambda X: X.T, lambda X: X[0], lambda X: X.reshape(12)):
        assert count_work(view, A) == {"multiply_adds": 0, "largest_bytes": 0, "largest_shape": None,
                                       "largest_op": None}
    got = count_work(lambda X: X.T.contiguous(), A)
    assert (got["largest_bytes"], got["largest_shape"]) == (4 * 3 * 4, (4, 3))


def test_inputs_are_found_in_kwargs_and_nested_containers():
    assert count_work(lambda X=None: X.T, X=A)["largest_bytes"] == 0
    assert count_work(lambda pair: pair[1][0].T, (B, [A]))["largest_bytes"] == 0
    assert count_work(lambda inputs: inputs["x"].T, {"x": A})["largest_bytes"] == 0


def test_a_tensor_not_passed_in_counts_when_an_operation_returns_it():
    weight = torch.randn(5, 6)
    got = count_work(lambda X: (X @ B) @ weight, A)             # weight is not an input here
    assert got["multiply_adds"] == 3 * 4 * 5 + 3 * 5 * 6
    assert got["largest_bytes"] == 3 * 6 * 4                    # the (3, 6) result, not the (5, 6) weight


def test_integer_tensors_are_left_out_and_elementwise_work_is_not_counted():
    got = count_work(lambda X: (torch.arange(1000), X.exp().sum(0)), A)
    assert got["multiply_adds"] == 0                           # exp and sum are not matrix products
    # exp(X) (3, 4) is the largest float tensor, not the 8000-byte int64 arange
    assert (got["largest_bytes"], got["largest_shape"]) == (3 * 4 * 4, (3, 4))


def test_a_view_of_a_created_tensor_counts_as_that_tensor():
    got = count_work(lambda X: (X @ X.T)[0], A)
    assert (got["largest_bytes"], got["largest_shape"]) == (3 * 3 * 4, (3, 3))


@pytest.mark.parametrize("L, d", [(16, 4), (40, 8)])
def test_attention_variants_match_their_closed_forms(L, d):
    """Full attention: Q Kᵀ and weights @ V, L² d multiply-adds each, the (L, L) scores;
    local window w: 2 L (2w + 1) d; linear: φ(K)ᵀ V and φ(Q) S, L d² each, (L, d) features."""
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(1, 1, L, d, generator=g) for _ in range(3))
    full = count_work(lambda *x: full_attention(*x), Q, K, V)
    assert (full["multiply_adds"], full["largest_bytes"]) == (2 * L * L * d, 4 * L * L)
    w = 3
    local = count_work(lambda *x: local_window_attention(*x, w), Q, K, V)
    assert local["multiply_adds"] == 2 * L * (2 * w + 1) * d
    linear = count_work(lambda *x: linear_attention(*x), Q, K, V)
    assert (linear["multiply_adds"], linear["largest_bytes"]) == (2 * L * d * d, 4 * L * d)


def test_the_call_runs_without_gradients():
    X = torch.randn(3, 4, requires_grad=True)
    seen = []
    count_work(lambda X: seen.append((X @ B).requires_grad), X)
    assert seen == [False]


@pytest.mark.parametrize("fn", [42, None, "full_attention"])
def test_fn_must_be_callable(fn):
    with pytest.raises(TypeError, match="fn must be callable"):
        count_work(fn, A)
