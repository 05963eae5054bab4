"""course_lib.analysis.scaling (chapter 3): variance of q·k, softmax Jacobian, saturation."""

import numpy as np
import pytest
import torch

from course_lib.analysis import scaling


def test_variance_grows_like_d_k_and_scaling_restores_one():
    r = scaling.dot_product_variance([1, 4, 16, 64, 256], n_samples=20_000, seed=0)
    assert r["d_k"].tolist() == [1, 4, 16, 64, 256]
    np.testing.assert_allclose(r["var"] / r["d_k"], 1.0, atol=0.1)
    np.testing.assert_allclose(r["var_scaled"], r["var"] / r["d_k"])
    slope = np.polyfit(np.log(r["d_k"]), np.log(r["var"]), 1)[0]
    assert abs(slope - 1) < 0.02


def test_variance_is_seeded_and_works_in_small_chunks(monkeypatch):
    a = scaling.dot_product_variance([3, 8], n_samples=1000, seed=5)
    b = scaling.dot_product_variance([3, 8], n_samples=1000, seed=5)
    np.testing.assert_array_equal(a["var"], b["var"])
    assert scaling.dot_product_variance(7, n_samples=10)["d_k"].tolist() == [7]
    monkeypatch.setattr(scaling, "_CHUNK", 50)              # many chunks, one of them partial
    r = scaling.dot_product_variance([4, 16], n_samples=20_001, seed=1)
    np.testing.assert_allclose(r["var_scaled"], 1.0, atol=0.1)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 6)])
def test_jacobian_matches_autograd(shape):
    z = np.random.default_rng(0).normal(size=shape) * 3
    J = scaling.softmax_jacobian(z)
    assert J.shape == shape + shape[-1:]
    flat = torch.from_numpy(z.reshape(-1, shape[-1]))
    ref = np.stack([torch.autograd.functional.jacobian(lambda t: t.softmax(-1), row).numpy()
                    for row in flat]).reshape(J.shape)
    np.testing.assert_allclose(J, ref, atol=1e-12)


def test_gradient_norm_special_values():
    n = 16
    np.testing.assert_allclose(scaling.softmax_gradient_norm(np.zeros(n)), np.sqrt(n - 1) / n)
    np.testing.assert_allclose(scaling.softmax_gradient_norm(np.array([0.0, 0.0, -1e3])), 0.5)
    assert scaling.softmax_gradient_norm(np.array([0.0, 500.0, 1000.0])) < 1e-200
    assert scaling.softmax_gradient_norm(np.zeros((2, 3, 4))).shape == (2, 3)


def test_saturation_curve_unscaled_saturates_scaled_does_not():
    s = scaling.saturation_curve([1, 16, 256], L_k=8, n_samples=300, seed=0)
    assert set(s) == {"d_k", "max_weight", "grad_norm", "max_weight_scaled", "grad_norm_scaled"}
    assert all(v.shape == (3,) for v in s.values())
    assert np.all(np.diff(s["max_weight"]) > 0) and s["max_weight"][-1] > 0.85
    assert s["grad_norm"][-1] < 0.1 * s["grad_norm_scaled"][-1]
    assert np.ptp(s["max_weight_scaled"]) < 0.1
    assert s["max_weight"][0] == s["max_weight_scaled"][0]       # d_k = 1: nothing to scale


@pytest.mark.parametrize("call,exc,word", [
    (lambda: scaling.dot_product_variance([]), ValueError, "d_k_values"),
    (lambda: scaling.dot_product_variance([4, 0]), ValueError, "d_k_values[1]"),
    (lambda: scaling.dot_product_variance([2.5]), TypeError, "d_k_values[0]"),
    (lambda: scaling.dot_product_variance(None), TypeError, "d_k_values"),
    (lambda: scaling.dot_product_variance([4], n_samples=1), ValueError, "n_samples"),
    (lambda: scaling.dot_product_variance([4], seed=-1), TypeError, "seed"),
    (lambda: scaling.saturation_curve([4], L_k=1), ValueError, "L_k"),
    (lambda: scaling.saturation_curve([4], n_samples=0), ValueError, "n_samples"),
    (lambda: scaling.softmax_jacobian(np.array([1.0, np.nan])), ValueError, "z"),
    (lambda: scaling.softmax_jacobian("abc"), TypeError, "z"),
    (lambda: scaling.softmax_gradient_norm(3.0), ValueError, "z"),
])
def test_bad_arguments_are_named(call, exc, word):
    with pytest.raises(exc, match=word.replace("[", r"\[").replace("]", r"\]")):
        call()
