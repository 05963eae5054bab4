"""Chapter 9's checkers: right answers pass, typical mistakes get the right
message, and no learner code can make a checker raise."""

import numpy as np
import torch

from course_lib.chapters.ch09.exercises import (FLOPS_RUN, SLIDING, check_ema, check_min_context,
                                                check_newton_schulz, check_training_flops, reference_ema,
                                                reference_newton_schulz)
from course_lib.labs.language_model_long import training_flops
from course_lib.training import muon as muon_lib
from course_lib.training.averaging import ExponentialAverage
from conftest import raises, returns_none, tolerance_test, wrong_submissions_test, never_raises_test

N, S, B, T = (FLOPS_RUN[k] for k in ("params", "steps", "batch", "ctx"))
FLOPS = 6 * N * S * B * T
CTX, STRIDE = SLIDING["ctx"], SLIDING["stride"]
A, B_, C = 3.4445, -4.7750, 2.0315


def _ema_swapped(weights, beta):
    return reference_ema(weights, 1 - beta)


def _ema_from_zero(weights, beta):
    average = np.zeros(np.shape(weights)[1:])
    for W in np.asarray(weights, dtype=float):
        average = beta * average + (1 - beta) * W
    return average


def _ns_unnormalised(D, steps):
    X = np.asarray(D, dtype=float)
    for _ in range(steps):
        Y = X @ X.T
        X = A * X + (B_ * Y + C * Y @ Y) @ X
    return X


def _ns_no_transpose(D, steps):
    """Iterates on the tall matrix itself: XXᵀ is the larger product, the result the same but for rounding."""
    X = np.asarray(D, dtype=float)
    X = X / (np.linalg.norm(X) + 1e-7)
    for _ in range(steps):
        Y = X @ X.T
        X = A * X + (B_ * Y + C * Y @ Y) @ X
    return X


def _ns_cubic(D, steps):
    X = np.asarray(D, dtype=float)
    tall = X.shape[0] > X.shape[1]
    X = X.T if tall else X
    X = X / (np.linalg.norm(X) + 1e-7)
    for _ in range(steps):
        X = 1.5 * X - 0.5 * (X @ X.T) @ X
    return X.T if tall else X


WRONG = {
    "flops": (lambda fn: check_training_flops(fn()), [
        (lambda: 2 * N * S * B * T, r"that is the forward pass only"),
        (lambda: 6 * N * S * B, r"every window holds 128 tokens"),
        (lambda: 6 * N * S, r"count the tokens read, not the steps"),
        (lambda: N * S * B * T, r"multiply by six"),
        (lambda: FLOPS * 1.01, r"wrong value at position \(\)"),
        (lambda: None, r"returned None"),
        (lambda: ..., r"not implemented yet"),
    ]),
    "sliding": (lambda fn: check_min_context(fn()), [
        (lambda: CTX - STRIDE, r"off by one"),
        (lambda: STRIDE, r"that is the stride"),
        (lambda: 1, r"that is the disjoint reading"),
        (lambda: CTX, r"that is the most a target sees"),
        (lambda: CTX - STRIDE + 2, r"wrong value at position \(\)"),
        (lambda: ..., r"not implemented yet"),
    ]),
    "ema": (check_ema, [
        (_ema_swapped, r"β and 1 − β are swapped"),
        (lambda w, b: np.asarray(w, dtype=float).mean(axis=0), r"that is the plain mean"),
        (_ema_from_zero, r"the average starts at the first weights"),
        (lambda w, b: reference_ema(np.asarray(w)[:-1], b) if len(w) > 1 else reference_ema(w, b),
         r"the last row is missing"),
        (lambda w, b: reference_ema(w, b)[None], r"wrong shape"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
    "newton_schulz": (check_newton_schulz, [
        (lambda D, s: reference_newton_schulz(D, s - 1), r"one step short"),
        (_ns_unnormalised, r"divide D by its Frobenius norm first"),
        (_ns_cubic, r"wrong value"),
        (lambda D, s: reference_newton_schulz(D, s).T, r"wrong shape|wrong value"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_right_answers_pass():
    assert check_training_flops(training_flops(N, S * B * T)).ok
    assert "expected" not in repr(check_training_flops(FLOPS * 2))
    assert check_min_context(CTX - STRIDE + 1).ok
    assert check_ema(reference_ema).ok
    assert check_newton_schulz(reference_newton_schulz).ok
    assert check_newton_schulz(_ns_no_transpose).ok          # the transpose only saves work


def test_reference_newton_schulz_is_muons():
    """The checker's iteration is course_lib.training.muon.newton_schulz's (five steps), in float64."""
    for shape in ((6, 3), (3, 6), (4, 4)):
        D = torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        np.testing.assert_allclose(reference_newton_schulz(D.numpy(), 5), muon_lib.newton_schulz(D).numpy(),
                                   atol=1e-12)


def test_reference_ema_is_the_librarys():
    """The checker's average is course_lib.training.averaging.ExponentialAverage's, fed the same rows."""
    rows = torch.randn(20, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    net = torch.nn.Linear(3, 1, bias=False).double()
    with torch.no_grad():
        net.weight.copy_(rows[0][None])
    average = ExponentialAverage(net, 0.9)
    for row in rows[1:]:
        with torch.no_grad():
            net.weight.copy_(row[None])
        average.update(net)
    np.testing.assert_allclose(reference_ema(rows.numpy(), 0.9), average.average["weight"][0].numpy(), atol=1e-12)


test_no_checker_ever_raises = never_raises_test(coding=(check_ema, check_newton_schulz),
                                                by_hand=(check_training_flops, check_min_context))

test_the_tolerance_is_pinned = tolerance_test({
    "flops": (check_training_flops, FLOPS, 1e-6 * FLOPS),
})
