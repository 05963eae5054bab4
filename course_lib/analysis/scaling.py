"""Why attention divides its scores by sqrt(d_k): the measurements of chapter 3.

For a query ``q`` and a key ``k`` whose ``d_k`` components are independent
with mean 0 and variance 1,

.. math::

    \\operatorname{Var}(q \\cdot k) = \\sum_{i=1}^{d_k} \\operatorname{Var}(q_i k_i) = d_k,

so unscaled scores spread out like ``sqrt(d_k)``. A softmax of widely spread
logits is nearly one-hot, and its Jacobian

.. math::

    \\frac{\\partial p_i}{\\partial z_j} = p_i (\\delta_{ij} - p_j)

is then nearly zero: the gradient that should teach the queries and keys
vanishes. Dividing by ``sqrt(d_k)`` brings the variance back to 1.

- :func:`dot_product_variance` measures ``Var(q·k)`` for several ``d_k``;
- :func:`softmax_jacobian` and :func:`softmax_gradient_norm` measure how much
  gradient a softmax lets through;
- :func:`saturation_curve` puts both together: random queries and keys,
  with and without the scaling.

Chapter 3 (*Multi-head attention*), section "Why divide by √d_k".
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validate import as_real_array, check_finite, check_positive_int
from ..scratch.attention import softmax

__all__ = ["dot_product_variance", "softmax_jacobian", "softmax_gradient_norm",
           "saturation_curve"]

#: At most this many random numbers are drawn at once (bounds the memory used).
_CHUNK = 2_000_000


def _check_d_k_values(d_k_values) -> np.ndarray:
    if isinstance(d_k_values, numbers.Integral) and not isinstance(d_k_values, bool):
        d_k_values = [d_k_values]
    try:
        values = list(d_k_values)
    except TypeError:
        raise TypeError("d_k_values must be a list of integers >= 1, "
                        f"got {type(d_k_values).__name__}") from None
    if not values:
        raise ValueError("d_k_values must hold at least one integer >= 1, got an empty list")
    return np.array([check_positive_int(v, f"d_k_values[{i}]") for i, v in enumerate(values)])


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise TypeError(f"seed must be an integer >= 0, got {seed!r}")
    return int(seed)


def dot_product_variance(d_k_values, n_samples: int = 50_000, seed: int = 0) -> dict:
    """Sample variance of ``q·k`` and of ``q·k / sqrt(d_k)`` for N(0, 1) components.

    For each ``d_k``, draws ``n_samples`` independent pairs ``(q, k)`` with
    ``q, k`` of shape ``(d_k,)`` and i.i.d. N(0, 1) components.

    Args:
        d_k_values: ``(n,)`` integers >= 1, the head widths to try.
        n_samples: number of ``(q, k)`` pairs per ``d_k`` (>= 2).
        seed: seed of ``np.random.default_rng``.

    Returns:
        dict of ``(n,)`` arrays: ``"d_k"``, ``"var"`` (variance of ``q·k``,
        close to ``d_k``) and ``"var_scaled"`` (variance of ``q·k/sqrt(d_k)``,
        close to 1).

    Chapter 3.
    """
    d_ks = _check_d_k_values(d_k_values)
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    rng = np.random.default_rng(_check_seed(seed))
    var = np.empty(len(d_ks))
    for i, d_k in enumerate(d_ks):
        dots = np.empty(n_samples)
        step = max(1, _CHUNK // (2 * d_k))
        for start in range(0, n_samples, step):
            n = min(step, n_samples - start)
            q, k = rng.standard_normal((2, n, d_k))
            dots[start:start + n] = np.einsum("nd,nd->n", q, k)
        var[i] = dots.var(ddof=1)
    return {"d_k": d_ks, "var": var, "var_scaled": var / d_ks}


def softmax_jacobian(z) -> np.ndarray:
    """Jacobian of the softmax over the last axis, ``diag(p) - p pᵀ``.

    Args:
        z: ``(..., n)`` logits (finite).

    Returns:
        ``(..., n, n)``: entry ``[..., i, j]`` is ``∂p_i / ∂z_j`` with
        ``p = softmax(z)``.

    Chapter 3.
    """
    z = as_real_array(z, "z", min_ndim=1)
    check_finite(z, "z")
    p = softmax(z, axis=-1)
    return p[..., :, None] * np.eye(z.shape[-1], dtype=p.dtype) - p[..., :, None] * p[..., None, :]


def softmax_gradient_norm(z) -> np.ndarray:
    """How much gradient a softmax lets through: the Frobenius norm of its Jacobian.

    Zero for a one-hot softmax, ``sqrt(n - 1) / n`` when all ``n`` logits are
    equal, and at most ``1/2`` (an even split between two logits).

    Args:
        z: ``(..., n)`` logits (finite).

    Returns:
        ``(...)`` norms ``‖∂p/∂z‖_F``.

    Chapter 3.
    """
    return np.linalg.norm(softmax_jacobian(z), axis=(-2, -1))


def saturation_curve(d_k_values, L_k: int = 16, n_samples: int = 1000, seed: int = 0) -> dict:
    """Softmax saturation of random attention scores, with and without scaling.

    For each ``d_k``, draws ``n_samples`` queries ``q`` ``(d_k,)`` and key sets
    ``K`` ``(L_k, d_k)`` with N(0, 1) components, forms the logits ``K q``
    (unscaled) and ``K q / sqrt(d_k)`` (scaled), then summarises over the
    samples: the mean of the largest softmax weight, and the median of
    :func:`softmax_gradient_norm` (the gradient a typical query gets).

    Args:
        d_k_values: ``(n,)`` integers >= 1.
        L_k: number of keys each query attends over (>= 2).
        n_samples: queries per ``d_k``.
        seed: seed of ``np.random.default_rng``.

    Returns:
        dict of ``(n,)`` arrays: ``"d_k"``; ``"max_weight"`` (mean) and
        ``"grad_norm"`` (median) for the unscaled logits; ``"max_weight_scaled"``
        and ``"grad_norm_scaled"`` for the logits divided by ``sqrt(d_k)``.

    Chapter 3.
    """
    d_ks = _check_d_k_values(d_k_values)
    L_k = check_positive_int(L_k, "L_k", minimum=2)
    n_samples = check_positive_int(n_samples, "n_samples")
    rng = np.random.default_rng(_check_seed(seed))
    keys = ("max_weight", "grad_norm", "max_weight_scaled", "grad_norm_scaled")
    out = {k: np.empty(len(d_ks)) for k in keys}
    for i, d_k in enumerate(d_ks):
        q = rng.standard_normal((n_samples, 1, d_k))
        K = rng.standard_normal((n_samples, L_k, d_k))
        logits = (K * q).sum(axis=-1)                      # (n_samples, L_k)
        for suffix, z in (("", logits), ("_scaled", logits / np.sqrt(d_k))):
            out["max_weight" + suffix][i] = softmax(z, axis=-1).max(axis=-1).mean()
            out["grad_norm" + suffix][i] = np.median(softmax_gradient_norm(z))
    return {"d_k": d_ks, **out}
