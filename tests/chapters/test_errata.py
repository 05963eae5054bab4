"""The worked examples and their errata: recomputed independently, and kept honest."""

import math

import numpy as np
import pytest

from course_lib import chapters
from course_lib.chapters import EXAMPLES, Claim
from course_lib.chapters.ch02 import worked


def test_single_query_by_hand():
    # The dot products and softmax written out with math, one number at a time.
    q = [0.2, 0.4, 0.6, 0.8]
    H = [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2]]
    e = [sum(a * b for a, b in zip(q, h)) for h in H]
    z = sum(math.exp(v) for v in e)
    alpha = [math.exp(v) / z for v in e]
    c = [sum(alpha[i] * H[i][j] for i in range(3)) for j in range(4)]
    steps = worked.single_query_steps()
    np.testing.assert_allclose(steps["scores"], e, rtol=1e-12)
    np.testing.assert_allclose(steps["sum"], z, rtol=1e-12)
    np.testing.assert_allclose(steps["weights"], alpha, rtol=1e-12)
    np.testing.assert_allclose(steps["context"], c, rtol=1e-12)


def test_two_head_by_hand():
    X = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    W1 = [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]
    Q = [[sum(X[i][k] * W1[k][j] for k in range(4)) for j in range(2)] for i in range(3)]
    steps = worked.two_head_steps()
    np.testing.assert_allclose(steps["Q1"], Q, rtol=1e-12)
    S = [[sum(Q[i][k] * Q[j][k] for k in range(2)) / math.sqrt(2) for j in range(3)]
         for i in range(3)]
    for i in range(3):
        m = max(S[i])
        z = sum(math.exp(s - m) for s in S[i])
        np.testing.assert_allclose(steps["A1"][i], [math.exp(s - m) / z for s in S[i]],
                                   rtol=1e-12, atol=1e-300)
    # Head 2 uses W1 with its columns swapped: identical weights, swapped outputs.
    np.testing.assert_allclose(steps["A2"], steps["A1"])
    np.testing.assert_allclose(steps["head2"], steps["head1"][:, ::-1])


def _all_steps():
    return [(name, step) for name, (_, data) in EXAMPLES.items() for step in data["claims"]]


@pytest.mark.parametrize("example,step", _all_steps())
def test_every_mismatch_has_an_erratum(example, step):
    covered = {(e.example, e.step) for e in chapters.ERRATA}
    if chapters.mismatches(example, step):
        assert (example, step) in covered, f"{example}/{step} differs from the source but has no erratum"


@pytest.mark.parametrize("e", chapters.ERRATA, ids=lambda e: e.key)
def test_every_erratum_points_at_a_real_mismatch(e):
    assert e.is_live(), f"{e.key}: the source now matches; drop the erratum"
    text = repr(chapters.show(e.key))
    assert e.title_en in text and e.title_zh in text
    assert e.example is None or "✗" in text
    assert "{" not in e.why_en.format(**e.details())  # every field was filled


def test_correct_steps_are_marked_as_matching():
    table = chapters.compare("single_query", "weights")
    assert [r[3] for r in table.rows] == ["✓", "✓", "✓"]


def test_keys_are_unique_and_markdown_links_back():
    keys = [e.key for e in chapters.ERRATA]
    assert len(keys) == len(set(keys))
    md = chapters.show_all()._repr_markdown_()
    assert md.count("{admonition}") == len(keys)
    assert "{doc}`/book/ch02_worked_qkv`" in md


def test_claim_decimals_follow_the_printed_text():
    assert Claim("attention", "x", ("0.60", "14.902", "5")).decimals() == [2, 3, 0]


@pytest.mark.parametrize("call,match", [
    (lambda: chapters.compare("nope", "scores"), r"example must be one of"),
    (lambda: chapters.compare("single_query", "nope"), r"step must be one of"),
    (lambda: chapters.show("nope"), r"key must be one of"),
    (lambda: chapters.show_all("book/nope"), r"chapter must be one of"),
    (lambda: worked.single_query_steps(q=[1.0, 2.0]), r"q must have shape \(d,\) and H shape"),
    (lambda: worked.two_head_steps(W1=np.ones((3, 2))), r"W1 must have shape \(d_model, d_k\) with d_model=4"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
