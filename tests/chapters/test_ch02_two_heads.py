"""Chapter 2's two heads, recomputed by another route (issue #20.6).

The chapter shows the two-head example through ``worked.two_head_steps``
(scores, weights, outputs per head), which calls
``course_lib.scratch.scaled_dot_product_attention``; chapter 3 runs the same
computation as one ``multi_head_attention`` call with the heads' weights side
by side. Here each head is recomputed with plain loops from the source's
``X``, ``W₁`` and ``W₂``, and both library routes must agree with it.

The weights are one-hot to 1e-25, so comparing them directly could not tell a
missing ``1/√d_k`` apart; their logarithms (the log-softmax of the scores)
can, and stay finite in float64 (the smallest is about e^-410).

The source's W₂ is W₁ with its columns swapped, so [W₁ W₂] = [a b b a]: cut
into heads the wrong way (interleaved, columns 0, 2 and 1, 3), it still gives
W₁ and W₂. One more pair of unrelated random heads catches that slip.
"""

import math

import numpy as np
import pytest

from course_lib.chapters.ch02 import source, worked
from course_lib.scratch import multi_head_attention

X, W1, W2 = (source.TWO_HEAD[k] for k in ("X", "W1", "W2"))
D_K = 2


def by_hand(W, X=X):
    """One head with Q = K = V = X W, written out entry by entry."""
    L, d_model = X.shape
    Q = np.array([[sum(X[i, m] * W[m, c] for m in range(d_model)) for c in range(D_K)]
                  for i in range(L)])
    scores = np.array([[sum(Q[i, c] * Q[j, c] for c in range(D_K)) / math.sqrt(D_K)
                        for j in range(L)] for i in range(L)])
    log_weights = np.array([[scores[i, j] - math.log(sum(math.exp(scores[i, k] - scores[i].max())
                                                         for k in range(L))) - scores[i].max()
                             for j in range(L)] for i in range(L)])
    weights = np.exp(log_weights)
    output = np.array([[sum(weights[i, j] * Q[j, c] for j in range(L)) for c in range(D_K)]
                       for i in range(L)])
    return {"Q": Q, "scores": scores, "log_weights": log_weights, "weights": weights, "output": output}


HEADS = {1: by_hand(W1), 2: by_hand(W2)}


def test_by_hand_agrees_with_the_hand_computed_products():
    # Q₁ and Q₁K₁ᵀ worked out on paper (the erratum ch02-q1: row 2 is 5·0.2 + 6·0.4 + 7·0.6 + 8·0.8 = 14.0).
    np.testing.assert_allclose(HEADS[1]["Q"], [[5.0, 6.0], [11.4, 14.0], [17.8, 22.0]], atol=1e-12)
    np.testing.assert_allclose(HEADS[1]["scores"] * math.sqrt(2),
                               [[61.0, 141.0, 221.0], [141.0, 325.96, 510.92], [221.0, 510.92, 800.84]],
                               atol=1e-9)


@pytest.mark.parametrize("h", [1, 2])
def test_the_chapter_steps_match_the_hand_route(h):
    steps = worked.two_head_steps()
    hand = HEADS[h]
    np.testing.assert_allclose(steps[f"Q{h}"], hand["Q"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(steps[f"scores{h}"], hand["scores"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.log(steps[f"A{h}"]), hand["log_weights"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(steps[f"head{h}"], hand["output"], rtol=0, atol=1e-9)


_RNG = np.random.default_rng(2)
UNRELATED = (_RNG.normal(size=(4, D_K)), _RNG.normal(size=(4, D_K)))


@pytest.mark.parametrize("X_in, Ws", [(X, (W1, W2)), (X / 4, UNRELATED)], ids=["source", "unrelated-heads"])
def test_one_multi_head_call_matches_the_hand_route_per_head(X_in, Ws):
    # Head h owns columns (h-1)·d_k … h·d_k of W_Q = W_K = W_V; W_O = I keeps the concatenation.
    W = np.hstack(Ws)
    output, weights = multi_head_attention(X_in, X_in, W, W, W, np.eye(2 * D_K), num_heads=2)
    assert weights.shape == (2, 3, 3) and output.shape == (3, 2 * D_K)
    for h, W_h in enumerate(Ws, start=1):
        hand = by_hand(W_h, X_in)
        np.testing.assert_allclose(np.log(weights[h - 1]), hand["log_weights"], rtol=0, atol=1e-9)
        np.testing.assert_allclose(output[:, (h - 1) * D_K:h * D_K], hand["output"], rtol=0, atol=1e-9)


def test_the_two_heads_differ_only_by_swapped_columns():
    # What the chapter claims, on the hand route: same scores and weights, outputs' columns swapped.
    np.testing.assert_allclose(HEADS[2]["scores"], HEADS[1]["scores"], atol=1e-9)
    np.testing.assert_allclose(HEADS[2]["log_weights"], HEADS[1]["log_weights"], atol=1e-9)
    np.testing.assert_allclose(HEADS[2]["output"], HEADS[1]["output"][:, ::-1], atol=1e-9)
