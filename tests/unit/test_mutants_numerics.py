"""Tests that kill mutants of course_lib.scratch, course_lib.models and course_lib.repro (make mutate).

Expected values are worked out by hand or by an independent formula, never copied from the code.
"""

import math
import re

import numpy as np
import pytest
import torch

from course_lib.scratch.additive import additive_attention
from course_lib.scratch.alibi import alibi_bias
from course_lib.scratch.attention import masked_softmax, scaled_dot_product_attention, softmax
from course_lib.scratch.layers import decoder_layer, encoder_layer, feed_forward, layer_norm
from course_lib.scratch.linear import linear
from course_lib.scratch.masks import causal_mask, padding_mask, padding_mask_from_ids
from course_lib.scratch.multihead import merge_heads, multi_head_attention, split_heads
from course_lib.scratch.norms import rms_norm, swiglu
from course_lib.scratch.online_softmax import tiled_attention
from course_lib.scratch.positional import sinusoidal_positional_encoding
from course_lib.scratch.rope import apply_rope, rope_angles


def test_softmax_of_equal_scores_is_uniform_and_of_a_large_gap_is_one_hot():
    np.testing.assert_allclose(softmax(np.zeros((2, 4))), np.full((2, 4), 0.25), rtol=0, atol=1e-15)
    # exp(0) / (exp(0) + exp(-1000)) = 1 to double precision; no overflow from the large score
    np.testing.assert_allclose(softmax(np.array([1000.0, 0.0])), [1.0, 0.0], rtol=0, atol=1e-300)


def test_a_float_torch_mask_that_requires_grad_is_named_as_not_boolean():
    # np.asarray alone refuses a tensor that requires grad (RuntimeError); the mask is detached first,
    # so what the caller hears is the contract's TypeError about the dtype
    Q, K, V = np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4))
    with pytest.raises(TypeError, match=r"mask must be boolean .*got dtype float32"):
        scaled_dot_product_attention(Q, K, V, mask=torch.ones((2, 3), requires_grad=True))


def test_a_mask_that_would_grow_the_scores_is_named():
    # (2, 2, 3) broadcasts with the scores' (2, 3) but to (2, 2, 3), not to (2, 3): refused by name
    Q, K, V = np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4))
    with pytest.raises(ValueError, match=r"mask must be broadcastable to the scores' shape \(2, 3\)"):
        scaled_dot_product_attention(Q, K, V, mask=np.ones((2, 2, 3), dtype=bool))


@pytest.mark.parametrize("which, bad, exc, message", [
    ("K", np.ones(4), ValueError, r"^K must have at least 2 dimension"),         # a vector, not (L_k, d_k)
    ("K", [["a", "b", "c", "d"]], TypeError, r"^K must be an array of real numbers"),
    ("V", np.ones(3), ValueError, r"^V must have at least 2 dimension"),         # a vector, not (L_k, d_v)
    ("V", [["a"], ["b"], ["c"]], TypeError, r"^V must be an array of real numbers"),
])
def test_bad_keys_or_values_are_named(which, bad, exc, message):
    args = {"Q": np.ones((2, 4)), "K": np.ones((3, 4)), "V": np.ones((3, 4)), which: bad}
    with pytest.raises(exc, match=message):
        scaled_dot_product_attention(**args)


def test_a_value_dtype_that_differs_is_named_as_V():
    with pytest.raises(ValueError, match=r"share one floating dtype; got Q float64, K float64, V float32$"):
        scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4), dtype=np.float32))


@pytest.mark.parametrize("axis, message", [
    (0.5, r"^axis must be an integer, got float$"),
    # a vector's only axis is 0 (or -1): 1 is one past the end, for ndim 1 as for any
    (1, r"^axis must be in \[-1, 0\] for an input of 1 dimension\(s\), got 1$"),
])
def test_a_bad_softmax_axis_is_named_with_what_was_given(axis, message):
    with pytest.raises((TypeError, ValueError), match=message):
        softmax(np.ones(3), axis=axis)


@pytest.mark.parametrize("shapes", [
    ((2, 2, 4), (3, 3, 4), (2, 3, 4)),     # K's batch (3,) clashes with Q's and V's (2,)
    ((2, 2, 4), (2, 3, 4), (3, 3, 4)),     # V's batch (3,) clashes with Q's and K's (2,)
])
def test_batch_dimensions_that_do_not_broadcast_are_named(shapes):
    Q, K, V = (np.ones(s) for s in shapes)
    got = ", ".join(f"{n} ({s[0]}, {s[1]}, {s[2]})" for n, s in zip("QKV", shapes))
    with pytest.raises(ValueError, match=rf"^the batch dimensions of Q, K and V must broadcast; got {re.escape(got)}$"):
        scaled_dot_product_attention(Q, K, V)


@pytest.mark.parametrize("which", ["Q", "V"])
def test_a_nan_in_the_queries_or_values_is_named(which):
    args = {"Q": np.ones((2, 4)), "K": np.ones((3, 4)), "V": np.ones((3, 4))}
    args[which] = args[which].copy()
    args[which][1, 2] = np.nan
    with pytest.raises(ValueError, match=rf"^{which} contains NaN"):
        scaled_dot_product_attention(**args)


def test_masked_softmax_names_its_logits_x():
    with pytest.raises(TypeError, match=r"^x must be an array of real numbers"):
        masked_softmax(np.array(["a", "b"]), np.ones(2, dtype=bool))


def test_masked_softmax_subtracts_each_rows_own_maximum_of_the_allowed_scores():
    # row 0: a large allowed logit beside a masked one, no overflow: exp(0) / (exp(0) + exp(-1000)) = 1;
    # row 1: far below row 0's maximum, yet softmax([0, 1]) = [1, e] / (1 + e), not an underflow to 0
    x = np.array([[1000.0, 0.0, 5.0], [0.0, 1.0, 2.0]])
    mask = np.array([[True, True, False], [True, True, False]])
    e = math.e
    np.testing.assert_allclose(masked_softmax(x, mask), [[1.0, 0.0, 0.0], [1 / (1 + e), e / (1 + e), 0.0]],
                               rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("call, exc, message", [
    (lambda: causal_mask(3, offset=-1), ValueError, r"^offset must be an integer >= 0, got -1$"),
    (lambda: padding_mask([1], 0), ValueError, r"^max_len must be an integer >= 1, got 0$"),
    (lambda: padding_mask_from_ids(np.ones((2, 3), dtype=np.int64), -1), ValueError,
     r"^pad_id must be an integer >= 0, got -1$"),
    # float ids of the right rank are refused too, with what came
    (lambda: padding_mask_from_ids(np.ones((2, 3)), 0), TypeError,
     r"^ids must be a 2-D array of integer token ids \(B, L_k\), got dtype float64 and shape \(2, 3\)$"),
], ids=["offset", "max_len", "pad_id", "float ids"])
def test_mask_builders_name_a_bad_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_linear_maps_a_single_row_and_keeps_the_inputs_dtype():
    W = [[1.0, 2.0], [3.0, 4.0]]
    # [1, 2] @ [[1, 2], [3, 4]] = [1*1 + 2*3, 1*2 + 2*4] = [7, 10]
    np.testing.assert_array_equal(linear(np.array([1.0, 2.0]), W), [7.0, 10.0])
    y = linear(np.array([[1.0, 2.0]], dtype=np.float32), W)   # float64 weights follow float32 inputs
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [[7.0, 10.0]])


@pytest.mark.parametrize("x, W, exc, message", [
    (np.array(["a", "b"]), np.ones((2, 2)), TypeError, r"^X must be an array of real numbers"),
    (np.float64(1.0), np.ones((1, 2)), ValueError, r"^X must have at least 1 dimension"),
    (np.ones(2), [["a", "b"], ["c", "d"]], TypeError, r"^W_Q must be an array of real numbers"),
], ids=["strings for x", "scalar x", "strings for W"])
def test_linear_names_a_bad_argument_as_its_caller_calls_it(x, W, exc, message):
    with pytest.raises(exc, match=message):
        linear(x, W, names=("X", "W_Q", "b_Q"))


def test_sinusoidal_encoding_accepts_base_2_and_names_a_base_that_is_no_number():
    # d_model = 2: one pair, 2i = 0, angle pos / 2**0 = pos: columns sin(pos), cos(pos)
    np.testing.assert_allclose(sinusoidal_positional_encoding(2, 2, base=2.0),
                               [[0.0, 1.0], [math.sin(1.0), math.cos(1.0)]], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match=r"^base must be a number > 1, got '10000'$"):
        sinusoidal_positional_encoding(2, 2, base="10000")


def _nan_at_0(shape):
    a = np.zeros(shape)
    a.flat[0] = np.nan
    return a


@pytest.mark.parametrize("bad, exc, message", [
    ({"s": ["a", "b", "c"]}, TypeError, r"^s must be an array of real numbers"),
    ({"s": np.float64(1.0)}, ValueError, r"^s must have at least 1 dimension"),
    ({"H": np.zeros(4)}, ValueError, r"^H must have at least 2 dimension"),
    ({"H": [["a"]]}, TypeError, r"^H must be an array of real numbers"),
    ({"s": _nan_at_0(3)}, ValueError, r"^s contains NaN"),
    ({"H": _nan_at_0((5, 4))}, ValueError, r"^H contains NaN"),
    ({"W_s": np.zeros((2, 2))}, ValueError, r"^W_s must have shape \(d_s=3, d_a\), got \(2, 2\)$"),
    ({"W_s": np.zeros(3)}, ValueError, r"^W_s must have shape \(d_s=3, d_a\), got \(3\)$"),  # the book writes a vector\'s shape (3)
    ({"W_h": np.zeros((3, 2))}, ValueError, r"^W_h must have shape \(d_h=4, d_a\), got \(3, 2\)$"),
    ({"W_s": [["a", "b"]] * 3}, TypeError, r"^W_s must be an array of real numbers"),
    ({"W_s": _nan_at_0((3, 2))}, ValueError, r"^W_s contains NaN"),
    ({"W_h": _nan_at_0((4, 2))}, ValueError, r"^W_h contains NaN"),
    ({"v": ["a", "b"]}, TypeError, r"^v must be an array of real numbers"),
    ({"W_h": np.zeros((4, 3))}, ValueError,
     r"^W_s, W_h and v must share d_a: got W_s \(3, 2\), W_h \(4, 3\), v \(2\) \(expected v of shape \(d_a,\)\)$"),
    ({"v": np.zeros(3)}, ValueError,
     r"^W_s, W_h and v must share d_a: got W_s \(3, 2\), W_h \(4, 2\), v \(3\) \(expected v of shape \(d_a,\)\)$"),
    ({"s": np.zeros((2, 3))}, ValueError,
     r"^s \(\.\.\., d_s\) and H \(\.\.\., L, d_h\) must share the batch dimensions '\.\.\.'; got s \(2, 3\), H \(5, 4\)$"),
])
def test_additive_attention_names_a_bad_argument(bad, exc, message):
    # a decoder state of d_s = 3 over L = 5 encoder states of d_h = 4, d_a = 2
    args = {"s": np.zeros(3), "H": np.zeros((5, 4)), "W_s": np.zeros((3, 2)), "W_h": np.zeros((4, 2)),
            "v": np.zeros(2), **bad}
    with pytest.raises(exc, match=message):
        additive_attention(**args)


def test_additive_attention_of_one_unbatched_state_without_a_mask_by_hand():
    # W_s = W_h = I, v = (1, 1): e_j = tanh(s_1 + H_j1) + tanh(s_2 + H_j2) with s = (1, 0)
    s, H = np.array([1.0, 0.0]), np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    e = [math.tanh(2.0), 2 * math.tanh(1.0), math.tanh(1.0)]
    w = np.array([math.exp(x) for x in e]) / sum(math.exp(x) for x in e)
    context, weights = additive_attention(s, H, np.eye(2), np.eye(2), np.ones(2))
    np.testing.assert_allclose(weights, w, rtol=1e-14)
    np.testing.assert_allclose(context, [w[0], w[1]], rtol=1e-14)   # sum_j w_j H_j


def test_alibi_bias_names_a_causal_flag_that_is_no_bool_with_its_type():
    with pytest.raises(TypeError, match=r"^causal must be True or False, got int 1$"):
        alibi_bias(2, 1, 1, causal=1)


def test_merge_heads_concatenates_the_heads_of_one_unbatched_sequence():
    X = np.arange(12.0).reshape(2, 3, 2)                  # 2 heads, L = 3, d_k = 2
    # position l: head 0's features, then head 1's
    expected = [[X[0, l, 0], X[0, l, 1], X[1, l, 0], X[1, l, 1]] for l in range(3)]
    np.testing.assert_array_equal(merge_heads(X), expected)
    with pytest.raises(ValueError, match=r"^X must have at least 3 dimension"):
        merge_heads(np.ones((3, 4)))


def test_multi_head_attention_adds_the_query_bias():
    # one head, d_model = 1, every W = [[1]]: with b_q = 1 the query is 0 + 1 = 1 against keys 0 and 1,
    # scores (0, 1), weights (1, e) / (1 + e), output = the weighted values 0 and 1 = e / (1 + e)
    one = np.ones((1, 1))
    out, w = multi_head_attention(np.array([[0.0]]), np.array([[0.0], [1.0]]), one, one, one, one, 1,
                                  b_q=np.array([1.0]))
    e = math.e
    np.testing.assert_allclose(w, [[[1 / (1 + e), e / (1 + e)]]], rtol=1e-14)
    np.testing.assert_allclose(out, [[e / (1 + e)]], rtol=1e-14)


def _mha_bad_input_cases():
    cases = [({"X_q": [["a", "b"]]}, TypeError, r"^X_q must be an array of real numbers"),
             ({"X_kv": [["a", "b"]] * 3}, TypeError, r"^X_kv must be an array of real numbers")]
    for W, x in (("W_Q", "X_q \\(1, 2\\)"), ("W_K", "X_kv \\(3, 2\\)"), ("W_V", "X_kv \\(3, 2\\)"),
                 ("W_O", "the concatenated heads \\(1, 2\\)")):
        cases.append(({W: np.ones((3, 2))}, ValueError,
                      rf"^{W} must have shape \(d_in, d_out\) with d_in=2 to match {x}; got \(3, 2\)$"))
    for b in ("b_q", "b_k", "b_v", "b_o"):
        cases.append(({b: np.ones(3)}, ValueError, rf"^{b} must have shape \(d_out,\) = \(2,\), got \(3\)$"))
    return cases


@pytest.mark.parametrize("bad, exc, message", _mha_bad_input_cases())
def test_multi_head_attention_names_a_bad_argument(bad, exc, message):
    # d_model = 2, one head, one query over three keys
    args = {"X_q": np.ones((1, 2)), "X_kv": np.ones((3, 2)), "W_Q": np.eye(2), "W_K": np.eye(2), "W_V": np.eye(2),
            "W_O": np.eye(2), "num_heads": 1, **bad}
    with pytest.raises(exc, match=message):
        multi_head_attention(**args)


@pytest.mark.parametrize("X, num_heads, exc, message", [
    (np.ones(4), 2, ValueError, r"^X must have at least 2 dimension"),      # a vector, not (L, d_model)
    (np.ones((3, 4)), 0, ValueError, r"^num_heads must be an integer >= 1, got 0$"),
])
def test_split_heads_names_a_bad_argument(X, num_heads, exc, message):
    with pytest.raises(exc, match=message):
        split_heads(X, num_heads)


def test_rms_norm_default_eps_is_one_millionth_and_a_scalar_is_named():
    # x = (3, 4): mean of squares (9 + 16) / 2 = 12.5; LLaMA-1's eps 1e-6 under the root
    np.testing.assert_allclose(rms_norm(np.array([3.0, 4.0]), np.ones(2)),
                               [3 / math.sqrt(12.5 + 1e-6), 4 / math.sqrt(12.5 + 1e-6)], rtol=1e-15)
    with pytest.raises(ValueError, match=r"^x must have at least 1 dimension"):
        rms_norm(np.float64(2.0), np.ones(1))


@pytest.mark.parametrize("bad, exc, message", [
    ({"x": ["a", "b"]}, TypeError, r"^x must be an array of real numbers"),
    ({"g": ["a", "b"]}, TypeError, r"^g must be an array of real numbers"),
    ({"g": np.float64(1.0)}, ValueError, r"^g must have at least 1 dimension"),
    ({"x": _nan_at_0(2)}, ValueError, r"^x contains NaN"),
    ({"g": _nan_at_0(2)}, ValueError, r"^g contains NaN"),
    ({"eps": 0.0}, ValueError, r"^eps must be a positive number, got 0\.0$"),
    ({"g": np.ones(3)}, ValueError, r"^g must have shape \(d,\) = \(2,\) to match x \(2\), got \(3\)$"),
])
def test_rms_norm_names_a_bad_argument(bad, exc, message):
    with pytest.raises(exc, match=message):
        rms_norm(**{"x": np.ones(2), "g": np.ones(2), **bad})


@pytest.mark.parametrize("bad, exc, message", [
    ({"x": [["a", "b"]]}, TypeError, r"^x must be an array of real numbers"),
    *[({W: [["a"] * 3] * 2}, TypeError, rf"^{W} must be an array of real numbers") for W in ("W1", "W3", "W2")],
    *[({W: np.ones(3)}, ValueError, rf"^{W} must have at least 2 dimension") for W in ("W1", "W3", "W2")],
    ({"x": _nan_at_0((1, 2))}, ValueError, r"^x contains NaN"),
    *[({W: _nan_at_0(s)}, ValueError, rf"^{W} contains NaN") for W, s in (("W1", (2, 3)), ("W3", (2, 3)),
                                                                          ("W2", (3, 2)))],
    ({"W1": np.ones((3, 3))}, ValueError,
     r"^W1 must have shape \(d_model, d_ff\) with d_model=2 to match x \(1, 2\), got \(3, 3\)$"),
    ({"W1": np.ones((2, 3, 1))}, ValueError,
     r"^W1 must have shape \(d_model, d_ff\) with d_model=2 to match x \(1, 2\), got \(2, 3, 1\)$"),
    ({"W3": np.ones((2, 4))}, ValueError, r"^W3 must have the shape of W1, \(d_model, d_ff\) = \(2, 3\), got \(2, 4\)$"),
    ({"W2": np.ones((2, 3))}, ValueError, r"^W2 must have shape \(d_ff, d_model\) = \(3, 2\), got \(2, 3\)$"),
])
def test_swiglu_names_a_bad_argument(bad, exc, message):
    # d_model = 2, d_ff = 3
    args = {"x": np.ones((1, 2)), "W1": np.ones((2, 3)), "W3": np.ones((2, 3)), "W2": np.ones((3, 2)), **bad}
    with pytest.raises(exc, match=message):
        swiglu(**args)


def test_rope_by_hand():
    # d = 4, base 10000: omega = (10000^0, 10000^(-2/4)) = (1, 0.01); angle m * omega
    np.testing.assert_allclose(rope_angles(2, 4), [[0.0, 0.0], [1.0, 0.01]], rtol=1e-15, atol=0)
    # d = 2: row m turns the pair (1, 1) by m radians: (cos m - sin m, sin m + cos m)
    c1, s1 = math.cos(1.0), math.sin(1.0)
    np.testing.assert_allclose(apply_rope(np.ones((2, 2))), [[1.0, 1.0], [c1 - s1, s1 + c1]], rtol=1e-15)
    c3, s3, c5, s5 = math.cos(3.0), math.sin(3.0), math.cos(5.0), math.sin(5.0)
    np.testing.assert_allclose(apply_rope(np.ones((2, 2)), positions=np.array([3, 5])),
                               [[c3 - s3, s3 + c3], [c5 - s5, s5 + c5]], rtol=1e-14)


@pytest.mark.parametrize("call, exc, message", [
    (lambda: rope_angles(0, 4), ValueError, r"^L must be an integer >= 1, got 0$"),
    (lambda: rope_angles(2, 0), ValueError, r"^d must be an integer >= 2, got 0$"),
    (lambda: rope_angles(2, 3), ValueError, r"^d must be even \(RoPE rotates pairs of columns \(2i, 2i\+1\)\), got 3$"),
    (lambda: rope_angles(2, 4, base="x"), TypeError, r"^base must be a number > 1, got str 'x'$"),
    (lambda: rope_angles(2, 4, base=True), TypeError, r"^base must be a number > 1, got bool True$"),
    (lambda: rope_angles(2, 4, base=1), ValueError, r"^base must be a number > 1, got 1$"),
    (lambda: apply_rope([["a", "b"]]), TypeError, r"^x must be an array of real numbers"),
    (lambda: apply_rope(np.ones(4)), ValueError, r"^x must have at least 2 dimension"),
    (lambda: apply_rope(_nan_at_0((2, 4))), ValueError, r"^x contains NaN"),
    (lambda: apply_rope(np.ones((2, 3))), ValueError,
     r"^x must have an even last dimension d \(RoPE rotates pairs of columns \(2i, 2i\+1\)\), got shape \(2, 3\)$"),
    (lambda: apply_rope(np.ones((2, 0))), ValueError, r"^x must have an even last dimension d .*got shape \(2, 0\)$"),
    (lambda: apply_rope(np.ones((2, 4)), base=1.0), ValueError, r"^base must be a number > 1, got 1\.0$"),
    (lambda: apply_rope(np.ones((2, 4)), positions=np.array([0.0, 1.0])), TypeError,
     r"^positions must be integers \(the position m of each row\), got dtype float64$"),
    (lambda: apply_rope(np.ones((2, 4)), positions=np.arange(3)), ValueError,
     r"^positions must have shape \(L,\) = \(2,\) to match x \(2, 4\), got \(3\)$"),
])
def test_rope_names_a_bad_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_layer_norm_and_feed_forward_by_hand():
    # x = (1, 3): mean 2, biased variance 1, default eps 1e-5: s = sqrt(1 + 1e-5)
    s = math.sqrt(1 + 1e-5)
    np.testing.assert_allclose(layer_norm(np.array([1.0, 3.0]), np.array([2.0, 1.0]), np.array([0.0, 1.0])),
                               [-2 / s, 1 / s + 1], rtol=1e-15)
    # the default activation is ReLU: relu((1, -1) I + 0) I + (1, 1) = (1, 0) + (1, 1) = (2, 1)
    np.testing.assert_array_equal(feed_forward(np.array([1.0, -1.0]), np.eye(2), np.zeros(2), np.eye(2), np.ones(2)),
                                  [2.0, 1.0])


@pytest.mark.parametrize("call, exc, message", [
    (lambda: layer_norm([["a", "b"]], np.ones(2), np.zeros(2)), TypeError, r"^x must be an array of real numbers"),
    (lambda: layer_norm(np.float64(1.0), np.ones(1), np.zeros(1)), ValueError, r"^x must have at least 1 dimension"),
    (lambda: layer_norm(_nan_at_0(2), np.ones(2), np.zeros(2)), ValueError, r"^x contains NaN"),
    (lambda: layer_norm(np.ones(2), np.ones(3), np.zeros(2)), ValueError,
     r"^gamma must have shape \(d_model,\) = \(2,\), got \(3\)$"),
    (lambda: layer_norm(np.ones(2), np.ones(2), np.zeros(3)), ValueError,
     r"^beta must have shape \(d_model,\) = \(2,\), got \(3\)$"),
    (lambda: layer_norm(np.ones(2), ["a", "b"], np.zeros(2)), TypeError, r"^gamma must be an array of real numbers"),
    (lambda: layer_norm(np.ones(2), np.ones(2), ["a", "b"]), TypeError, r"^beta must be an array of real numbers"),
    (lambda: layer_norm(np.ones(2), np.ones(2), np.zeros(2), eps=0), ValueError,
     r"^eps must be a positive number, got 0$"),
    (lambda: feed_forward(np.ones((1, 2)), np.ones((2, 3)), None, np.ones((3, 2)), None, activation="tanh"),
     ValueError, r"^activation must be one of \['gelu', 'gelu_tanh', 'relu'\], got 'tanh'$"),
    (lambda: feed_forward(np.ones((1, 2)), np.ones((3, 3)), None, np.ones((3, 2)), None), ValueError,
     r"^W1 must have shape \(d_in, d_out\) with d_in=2 to match x \(1, 2\); got \(3, 3\)$"),
    (lambda: feed_forward(np.ones((1, 2)), np.ones((2, 3)), np.ones(4), np.ones((3, 2)), None), ValueError,
     r"^b1 must have shape \(d_out,\) = \(3,\), got \(4\)$"),
    (lambda: feed_forward(np.ones((1, 2)), np.ones((2, 3)), None, np.ones((2, 2)), None), ValueError,
     r"^W2 must have shape \(d_in, d_out\) with d_in=3 to match the hidden layer \(1, 3\); got \(2, 2\)$"),
    (lambda: feed_forward(np.ones((1, 2)), np.ones((2, 3)), None, np.ones((3, 2)), np.ones(3)), ValueError,
     r"^b2 must have shape \(d_out,\) = \(2,\), got \(3\)$"),
    (lambda: encoder_layer(np.ones((2, 2)), []), TypeError, r"^params must be a dict \(see layer_params\), got list$"),
    (lambda: encoder_layer(np.ones((2, 2)), {"num_heads": 1}), ValueError,
     r"^params is missing the key\(s\) \['activation', 'eps', 'self_attn', 'ffn', 'norm1', 'norm2'\]; "
     r"expected keys \['num_heads', 'activation', 'eps', 'self_attn', 'ffn', 'norm1', 'norm2'\]$"),
], ids=["x strings", "x scalar", "x NaN", "gamma shape", "beta shape", "gamma strings", "beta strings", "eps",
        "activation", "W1", "b1", "W2", "b2", "params list", "params keys"])
def test_layer_norm_feed_forward_and_layers_name_a_bad_argument(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_swiglu_of_one_vector_by_hand_and_rms_norm_keeps_float32():
    # W1 = W3 = W2 = I: (SiLU(x) * x) with SiLU(z) = z / (1 + e^-z): x = (1, -1) -> (1/(1 + e^-1), 1/(1 + e))
    e = math.e
    np.testing.assert_allclose(swiglu(np.array([1.0, -1.0]), np.eye(2), np.eye(2), np.eye(2)),
                               [1 / (1 + 1 / e), 1 / (1 + e)], rtol=1e-15)
    with pytest.raises(ValueError, match=r"^x must have at least 1 dimension"):
        swiglu(np.float64(1.0), np.eye(1), np.eye(1), np.eye(1))
    # a float32 input stays float32 with a float64 gain
    assert rms_norm(np.ones(2, dtype=np.float32), np.ones(2)).dtype == np.float32


@pytest.mark.parametrize("kwargs, exc, message", [
    ({"mask": np.ones((2, 3))}, TypeError, r"^mask must be boolean with True meaning 'may attend', got dtype float64$"),
    ({"mask": np.ones((2, 4), dtype=bool)}, ValueError,
     r"^mask must be broadcastable to the scores' shape \(2, 3\) \(\.\.\., L_q, L_k\), got \(2, 4\)$"),
    ({"mask": np.ones((2, 2, 3), dtype=bool)}, ValueError,     # broadcasts, but to more than the scores
     r"^mask must be broadcastable to the scores' shape \(2, 3\) \(\.\.\., L_q, L_k\), got \(2, 2, 3\)$"),
    ({"block_size": 0}, ValueError, r"^block_size must be an integer >= 1, got 0$"),
    ({"causal": 1}, TypeError, r"^causal must be True or False, got int 1$"),
], ids=["float mask", "mask shape", "mask grows", "block_size", "causal"])
def test_tiled_attention_names_a_bad_argument(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        tiled_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4)), **kwargs)


def test_apply_rope_rotates_float32_rows_in_float32():
    # the angles' cosines and sines are rounded to the input's float32, then each pair turned in float32:
    # bit for bit (a float64 cos or sin would round the products once instead, and differ in the last bit)
    x = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
    theta = rope_angles(64, 8)
    c, s = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    expected = np.stack([x[:, 0::2] * c - x[:, 1::2] * s, x[:, 0::2] * s + x[:, 1::2] * c], axis=-1).reshape(64, 8)
    y = apply_rope(x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, expected)


def test_tiled_attention_tiles_by_64_by_default():
    # tiles of 64 (FlashAttention's usual B_r = B_c): 130 rows are cut 64 + 64 + 2; the running sums are
    # rescaled at each tile border, so another tiling rounds differently and would not be equal bit for bit
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((130, 16)) for _ in range(3))
    np.testing.assert_array_equal(tiled_attention(Q, K, V), tiled_attention(Q, K, V, block_size=64))


def test_tiled_attention_of_float32_inputs_computes_in_float32():
    # one tile (L <= 64): float32 softmax attention with the scale applied to Q first, every step in float32;
    # a float64 scale, running maximum, running sum or accumulator would round differently
    rng = np.random.default_rng(2)
    Q, K, V = (rng.standard_normal((8, 16)).astype(np.float32) for _ in range(3))
    s = (Q * np.float32(1 / math.sqrt(16))) @ K.T
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    expected = (p @ V) / p.sum(axis=-1, keepdims=True)
    assert expected.dtype == np.float32
    np.testing.assert_array_equal(tiled_attention(Q, K, V), expected)


def test_tiled_attention_of_float32_inputs_rescales_in_float32_across_two_key_tiles():
    # 8 keys in tiles of 4, FlashAttention's recurrence unrolled by hand, every step in float32:
    # tile 1 gives m1, l1 = sum exp(s1 - m1), a1 = exp(s1 - m1) V1; tile 2 rescales them by exp(m1 - m2)
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((4, 16)).astype(np.float32), *(rng.standard_normal((8, 16)).astype(np.float32)
                                                                  for _ in range(2))
    s = (Q * np.float32(1 / math.sqrt(16))) @ K.T
    s1, s2 = s[:, :4], s[:, 4:]
    m1 = s1.max(axis=-1, keepdims=True)
    p1 = np.exp(s1 - m1)
    m2 = np.maximum(m1, s2.max(axis=-1, keepdims=True))
    p2, c = np.exp(s2 - m2), np.exp(m1 - m2)
    ell = c * p1.sum(axis=-1, keepdims=True) + p2.sum(axis=-1, keepdims=True)
    acc = c * (p1 @ V[:4]) + p2 @ V[4:]
    assert (acc / ell).dtype == np.float32
    np.testing.assert_array_equal(tiled_attention(Q, K, V, block_size=4), acc / ell)


def _zero_layer_params(d=2, decoder=False):
    zero_attn = {k: np.zeros((d, d)) for k in ("W_Q", "W_K", "W_V", "W_O")}
    norm = {"gamma": np.ones(d), "beta": np.zeros(d)}
    p = {"num_heads": 1, "activation": "relu", "eps": 1e-5, "self_attn": zero_attn,
         "ffn": {"W1": np.zeros((d, 3)), "b1": None, "W2": np.zeros((3, d)), "b2": None}, "norm1": norm, "norm2": norm}
    if decoder:
        p.update(cross_attn=zero_attn, norm3=norm)
    return p


def test_layers_are_post_ln_by_default_and_the_decoder_names_its_memory():
    # every weight 0: each sublayer adds 0, so pre-LN returns x, and post-LN (the 2017 default) layer-normalises
    # x = (1, 3) once per sublayer: (-a, a) with a = 1 / sqrt(1 + eps), then (-a, a) / sqrt(a^2 + eps), ...
    x = np.array([[1.0, 3.0]])
    a = 1 / math.sqrt(1 + 1e-5)
    twice = a / math.sqrt(a * a + 1e-5)
    thrice = twice / math.sqrt(twice * twice + 1e-5)
    np.testing.assert_allclose(encoder_layer(x, _zero_layer_params()), [[-twice, twice]], rtol=1e-12)
    np.testing.assert_allclose(decoder_layer(x, x, _zero_layer_params(decoder=True)), [[-thrice, thrice]], rtol=1e-12)
    with pytest.raises(ValueError, match=r"^memory must have at least 2 dimension"):
        decoder_layer(x, np.ones(2), _zero_layer_params(decoder=True))


def test_linear_names_a_bad_weight_or_bias_and_casts_the_bias_to_the_inputs_dtype():
    x, W = np.ones(2), np.eye(2)
    names = ("X", "W_Q", "b_Q")
    with pytest.raises(ValueError, match=r"^W_Q contains NaN"):
        linear(x, _nan_at_0((2, 2)), names=names)
    with pytest.raises(TypeError, match=r"^b_Q must be an array of real numbers"):
        linear(x, W, ["a", "b"], names=names)
    with pytest.raises(ValueError, match=r"^b_Q contains NaN"):
        linear(x, W, _nan_at_0(2), names=names)
    y = linear(np.ones(2, dtype=np.float32), W, np.array([0.5, 0.25]))   # float64 bias, float32 input
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [1.5, 1.25])


def test_the_decoder_layers_feed_forward_uses_the_activation_of_its_params():
    # pre-LN, attention weights 0, W1 = W2 = I: y + GELU(LN(y)); LN((1, 3)) = (-a, a) with a = 1 / sqrt(1 + eps),
    # GELU(z) = z * Phi(z) with Phi(z) = (1 + erf(z / sqrt 2)) / 2 (ReLU would give (0, a))
    p = _zero_layer_params(decoder=True)
    p.update(activation="gelu", ffn={"W1": np.eye(2), "b1": None, "W2": np.eye(2), "b2": None})
    a = 1 / math.sqrt(1 + 1e-5)
    phi = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2   # noqa: E731
    y = np.array([[1.0, 3.0]])
    np.testing.assert_allclose(decoder_layer(y, y, p, norm_first=True), [[1 - a * phi(-a), 3 + a * phi(a)]],
                               rtol=1e-7)


def test_the_layers_normalise_with_the_eps_of_their_params():
    # eps = 0.1, not LayerNorm's default 1e-5: LN((1, 3)) = (-a, a) with a = 1 / sqrt(1 + 0.1)
    p = _zero_layer_params()
    p["eps"] = 0.1
    a = 1 / math.sqrt(1.1)
    x = np.array([[1.0, 3.0]])
    # post-LN, every weight 0: LN twice
    np.testing.assert_allclose(encoder_layer(x, p), [[-a / math.sqrt(a * a + 0.1), a / math.sqrt(a * a + 0.1)]],
                               rtol=1e-12)
    # pre-LN, zero attention, identity ReLU feed-forward: x + relu(LN x) = (1 + 0, 3 + a)
    p["ffn"] = {"W1": np.eye(2), "b1": None, "W2": np.eye(2), "b2": None}
    np.testing.assert_allclose(encoder_layer(x, p, norm_first=True), [[1.0, 3.0 + a]], rtol=1e-12)


# ---- course_lib.models.attention: KVCache and MultiHeadAttention.from_torch ----

def test_kv_cache_starts_empty_and_grows_along_the_positions():
    from course_lib.models.attention import KVCache

    cache = KVCache()
    assert cache.K is None and cache.V is None and len(cache) == 0          # kills __init__ 2 (V = "")
    K1, V1 = torch.zeros(1, 2, 3, 4), torch.ones(1, 2, 3, 4)
    K2, V2 = torch.full((1, 2, 1, 4), 2.0), torch.full((1, 2, 1, 4), 3.0)
    cache.update(K1, V1)
    K, V = cache.update(K2, V2)
    assert K.shape == V.shape == (1, 2, 4, 4) and len(cache) == 4
    assert torch.equal(K[:, :, 3], K2[:, :, 0]) and torch.equal(V[:, :, :3], V1)


@pytest.mark.parametrize("bad, got", [(torch.zeros(2, 3, 4), "(2, 3, 4)"), (torch.zeros(1, 1, 2, 3, 4), "(1, 1, 2, 3, 4)"),
                                      ("K", "str")])
def test_kv_cache_names_a_key_or_value_that_is_not_4d(bad, got):
    from course_lib.models.attention import KVCache

    good = torch.zeros(1, 2, 3, 4)
    for name, args in (("K", (bad, good)), ("V", (good, bad))):
        with pytest.raises(ValueError) as err:
            KVCache().update(*args)
        assert str(err.value) == f"{name} must be a (B, num_heads, L_new, d_k) tensor, got {got}"


def test_from_torch_refuses_add_zero_attn_alone_with_the_whole_message():
    from torch import nn

    from course_lib.models.attention import MultiHeadAttention

    m = nn.MultiheadAttention(8, 2, add_zero_attn=True)                     # no bias_k: kills `or` -> `and` (4)
    message = ("m must have kdim == vdim == embed_dim and no add_bias_kv or add_zero_attn; "
               "those variants are not covered by the book")
    with pytest.raises(ValueError) as err:
        MultiHeadAttention.from_torch(m)
    assert str(err.value) == message                                          # kills 9, 11, 12


def test_from_torch_keeps_the_dtype_and_the_dropout():
    from torch import nn

    from course_lib.models.attention import MultiHeadAttention

    torch.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.25).double()
    ours = MultiHeadAttention.from_torch(m)
    assert ours.q_proj.weight.dtype == torch.float64                          # kills 16 (.to(None))
    assert ours.dropout == 0.25                                               # kills 23 (dropout not passed)
    assert torch.equal(ours.q_proj.weight, m.in_proj_weight[:8])


# ---- course_lib.models.attention: MultiHeadAttention ----

def test_multi_head_attention_has_biases_by_default_and_none_when_asked():
    from course_lib.models.attention import MultiHeadAttention

    with_bias, without = MultiHeadAttention(8, 2), MultiHeadAttention(8, 2, bias=False)
    for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):               # kills __init__ 2 (bias=False)
        assert getattr(with_bias, proj).bias.shape == (8,)
        assert getattr(without, proj).bias is None


@pytest.mark.parametrize("d_model, message", [
    (0, "d_model must be an integer >= 1, got 0"),
    (8.0, "d_model must be an integer >= 1, got float 8.0"),
])
def test_multi_head_attention_names_a_bad_d_model(d_model, message):
    from course_lib.models.attention import MultiHeadAttention

    with pytest.raises((ValueError, TypeError)) as err:
        MultiHeadAttention(d_model, 2)
    assert str(err.value) == message                                          # kills __init__ 5, 8, 9


@pytest.mark.parametrize("which, L", [("key", "L_k"), ("value", "L_k"), ("query", "L_q")])
def test_multi_head_attention_names_the_layout_of_a_bad_input(which, L):
    from course_lib.models.attention import MultiHeadAttention

    mha = MultiHeadAttention(8, 2)
    args = {"query": torch.zeros(1, 3, 8), "key": torch.zeros(1, 4, 8), "value": torch.zeros(1, 4, 8)}
    args[which] = torch.zeros(1, 4, 6)
    with pytest.raises(ValueError) as err:
        mha(**args)
    assert str(err.value) == f"{which} must have last dimension 8 of shape (B, {L}, d_model=8), got shape (1, 4, 6)"


def test_multi_head_attention_names_key_and_value_of_different_lengths_whole():
    from course_lib.models.attention import MultiHeadAttention

    with pytest.raises(ValueError) as err:
        MultiHeadAttention(8, 2)(torch.zeros(1, 3, 8), torch.zeros(1, 4, 8), torch.zeros(1, 5, 8))
    assert str(err.value) == ("query (B, L_q, d_model), key and value (B, L_k, d_model) must share B, "
                              "and key and value must share L_k; got query (1, 3, 8), key (1, 4, 8), "
                              "value (1, 5, 8)")                             # kills _check_inputs 38-41


def test_multi_head_attention_returns_no_weights_by_default():
    from course_lib.models.attention import MultiHeadAttention

    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    out, weights = MultiHeadAttention(8, 2)(x, x, x)
    assert weights is None and out.shape == (1, 3, 8)                         # kills forward 1


def test_multi_head_attention_drops_weights_in_training_under_a_mask_too():
    from course_lib.models.attention import MultiHeadAttention

    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 5, 8)
    mask = torch.ones(2, 1, 5, 5, dtype=torch.bool).tril()
    torch.manual_seed(1)
    train_out = mha(x, x, x, mask=mask)[0]
    mha.eval()
    eval_out = mha(x, x, x, mask=mask)[0]
    assert not torch.allclose(train_out, eval_out)                            # kills forward 88 (no dropout_p)
    mha.train()
    torch.manual_seed(1)
    assert torch.equal(mha(x, x, x, mask=mask)[0], train_out)                 # the same draws, the same output
