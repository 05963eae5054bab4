"""Chapter 2's worked examples, step by step, computed from the source data.

Each function returns a dict whose keys match the ``claims`` of the example
in ``source.py``, so every printed source number can be compared
with the value computed here (``course_lib.chapters.compare``).
"""

from __future__ import annotations

import numpy as np

from . import source
from ..._validate import as_real_array, shape_str
from ...scratch.attention import scaled_dot_product_attention, softmax

__all__ = ["single_query_steps", "two_head_steps", "EXAMPLES"]


def single_query_steps(q=None, H=None) -> dict:
    """One query attending over encoder states with ``K = V = H``.

    The source scores with the plain dot product ``e_i = q·h_i`` (no division
    by ``sqrt(d_k)``); so does this function, to reproduce it.

    Args:
        q: ``(d,)`` query (default: the source's).
        H: ``(n, d)`` encoder states, used as keys and values.

    Returns:
        dict with ``scores (n,)``, ``exp (n,)``, ``sum ()``, ``weights (n,)``,
        ``terms (n, d)`` (``alpha_i * h_i``) and ``context (d,)``.

    Chapter 2, section "One query, three states".
    """
    q = as_real_array(source.SINGLE_QUERY["q"] if q is None else q, "q")
    H = as_real_array(source.SINGLE_QUERY["H"] if H is None else H, "H", min_ndim=2)
    if q.ndim != 1 or H.ndim != 2 or H.shape[1] != q.shape[0]:
        raise ValueError(f"q must have shape (d,) and H shape (n, d); got q "
                         f"{shape_str(q.shape)} and H {shape_str(H.shape)}")
    scores = H @ q
    exp = np.exp(scores)
    weights = softmax(scores)
    terms = weights[:, None] * H
    return {"scores": scores, "exp": exp, "sum": exp.sum(), "weights": weights,
            "terms": terms, "context": terms.sum(axis=0)}


def two_head_steps(X=None, W1=None, W2=None) -> dict:
    """The source's two-head example: per head ``Q = K = V = X W_h``.

    Args:
        X: ``(L, d_model)`` input (default: the source's 3×4).
        W1, W2: ``(d_model, d_k)`` weights of heads 1 and 2 (each head uses
            the same matrix for queries, keys and values, as the source does).

    Returns:
        dict with, for ``h`` in 1 and 2: ``Q{h} (L, d_k)``, ``QKt{h} (L, L)``
        (before scaling), ``scores{h}`` (divided by ``sqrt(d_k)``),
        ``A{h} (L, L)`` (softmax of the scores) and ``head{h} (L, d_k)``.

    Chapter 2, section "Two heads"; chapter 3 takes it further.
    """
    d = source.TWO_HEAD
    X = as_real_array(d["X"] if X is None else X, "X", min_ndim=2)
    out = {}
    for h, W in ((1, d["W1"] if W1 is None else W1), (2, d["W2"] if W2 is None else W2)):
        W = as_real_array(W, f"W{h}", min_ndim=2)
        if W.shape[0] != X.shape[-1]:
            raise ValueError(f"W{h} must have shape (d_model, d_k) with d_model="
                             f"{X.shape[-1]}; got {shape_str(W.shape)}")
        Q = X @ W
        head, A = scaled_dot_product_attention(Q, Q, Q)
        out.update({f"Q{h}": Q, f"QKt{h}": Q @ Q.T, f"scores{h}": Q @ Q.T / np.sqrt(W.shape[1]),
                    f"A{h}": A, f"head{h}": head})
    return out


#: Chapter 2's worked examples: name -> (steps function, source data with claims).
EXAMPLES = {
    "single_query": (single_query_steps, source.SINGLE_QUERY),
    "two_head": (two_head_steps, source.TWO_HEAD),
}
