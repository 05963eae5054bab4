"""Why recurrent networks struggle: vanishing gradients and sequential time.

Chapter 1 (*Why attention*, ``ch01_why_attention``) measures two of the
three limits of RNNs named by the source documents:

- **vanishing gradients**: with ``h_t = tanh(x_t W_x + h_{t-1} W_h + b)``,
  the gradient of a loss on the last state reaches the first one through a
  product of Jacobians,

  .. math::

      \\frac{\\partial L}{\\partial h_1} = \\frac{\\partial L}{\\partial h_T}
      \\prod_{t=2}^{T} \\frac{\\partial h_t}{\\partial h_{t-1}}, \\qquad
      \\frac{\\partial h_t}{\\partial h_{t-1}} = \\operatorname{diag}(1 - h_t^2)\\, W_h^\\top
      \\ \\text{(column-vector form)},

  and :func:`rnn_gradient_norms` measures its size at every step;
- **sequential processing**: :func:`sequential_vs_parallel_times` times an
  RNN, which must take its ``L`` steps one after the other, against one
  self-attention pass, which handles all ``L`` positions in the same
  matrix products.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np
import torch

from .._validate import check_choice, check_positive_int

__all__ = ["rnn_gradient_norms", "jacobian_product_norms", "min_time", "sequential_vs_parallel_times"]

CELLS = ("tanh", "gru")


def _cell(cell: str, hidden: int):
    check_choice(cell, "cell", CELLS)
    return torch.nn.RNNCell(hidden, hidden, nonlinearity="tanh") if cell == "tanh" \
        else torch.nn.GRUCell(hidden, hidden)


def rnn_gradient_norms(T: int, hidden: int = 64, batch_size: int = 32, cell: str = "tanh",
                       seed: int = 0) -> np.ndarray:
    """``‖∂L/∂h_t‖`` for ``t = 1 … T`` in a freshly initialised RNN (chapter 1).

    A cell with PyTorch's default initialisation reads ``T`` standard-normal
    inputs (width ``hidden``) from ``h_0 = 0``, in float64 so that tiny
    norms do not underflow to zero. The loss is
    ``L = h_T · u`` with a fixed random unit vector ``u``, so
    ``‖∂L/∂h_T‖ = 1`` and every earlier norm says how much of that gradient
    is left after flowing back ``T - t`` steps.

    Args:
        T: sequence length (``>= 1``).
        hidden: state width (inputs have the same width).
        batch_size: independent sequences; norms are averaged over them.
        cell: ``"tanh"`` (the plain RNN of the source documents) or ``"gru"``.
        seed: seeds the weights, inputs and ``u``.

    Returns:
        ``(T,)`` array; entry ``t - 1`` is the mean of ``‖∂L/∂h_t‖`` over the batch.
    """
    T = check_positive_int(T, "T")
    hidden = check_positive_int(hidden, "hidden")
    batch_size = check_positive_int(batch_size, "batch_size")
    seed = check_positive_int(seed, "seed", minimum=0)
    torch.manual_seed(seed)
    rnn = _cell(cell, hidden).double()       # float64: the norms fall below float32's range
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, T, hidden, generator=g, dtype=torch.float64)
    u = torch.randn(hidden, generator=g, dtype=torch.float64)
    u = u / u.norm()
    h, states = torch.zeros(batch_size, hidden, dtype=torch.float64), []
    for t in range(T):
        h = rnn(x[:, t], h)
        h.retain_grad()
        states.append(h)
    (h @ u).sum().backward()
    return np.array([s.grad.norm(dim=-1).mean().item() for s in states])


def jacobian_product_norms(W_h, states, grad_T) -> np.ndarray:
    """The source's product of Jacobians for a tanh RNN, in NumPy (chapter 1).

    Walks the gradient back with ``g_{t-1} = (g_t ⊙ (1 - h_t²)) W_h``
    (row vectors, ``h_t = tanh(x_t W_x + h_{t-1} W_h + b)``).

    Args:
        W_h: ``(d_h, d_h)`` recurrent weights in the row-vector form above
            (for ``torch.nn.RNNCell`` this is ``weight_hh.T``).
        states: ``(T, d_h)`` states ``h_1 … h_T``.
        grad_T: ``(d_h,)`` gradient ``∂L/∂h_T``.

    Returns:
        ``(T,)`` norms ``‖∂L/∂h_t‖``, ``t = 1 … T``.
    """
    W_h, states, g = (np.asarray(a, dtype=float) for a in (W_h, states, grad_T))
    if W_h.ndim != 2 or W_h.shape[0] != W_h.shape[1]:
        raise ValueError(f"W_h must be a square (d_h, d_h) matrix, got shape {W_h.shape}")
    if states.ndim != 2 or states.shape[1] != W_h.shape[0]:
        raise ValueError(f"states must have shape (T, d_h={W_h.shape[0]}), got {states.shape}")
    if g.shape != (W_h.shape[0],):
        raise ValueError(f"grad_T must have shape (d_h={W_h.shape[0]},), got {g.shape}")
    norms = [np.linalg.norm(g)]
    for t in range(states.shape[0] - 1, 0, -1):
        g = (g * (1 - states[t] ** 2)) @ W_h.T
        norms.append(np.linalg.norm(g))
    return np.array(norms[::-1])


def min_time(fn: Callable[[], object], repeats: int = 5) -> float:
    """Fastest of ``repeats`` timed calls of ``fn()``, in seconds, after one warm-up call.

    The minimum is the measurement least disturbed by other programs; it is
    still machine-dependent, so the book only plots it (chapter 1).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    repeats = check_positive_int(repeats, "repeats")
    fn()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@torch.no_grad()
def sequential_vs_parallel_times(lengths, d_model: int = 64, batch_size: int = 1,
                                 repeats: int = 5, seed: int = 0) -> dict:
    """Time an RNN's ``L`` dependent steps against one self-attention pass (chapter 1).

    For each ``L``, both read the same ``(batch_size, L, d_model)`` input:

    - ``"rnn"``: ``h_t = tanh(x_t W_x + h_{t-1} W_h + b)``, one
      ``torch.nn.RNNCell`` call per step: step ``t`` needs ``h_{t-1}``;
    - ``"attention"``: ``softmax(Q Kᵀ / √d) V`` with ``Q, K, V = X W_Q, X W_K, X W_V``,
      a handful of matrix products covering all positions at once.

    Each is timed ``repeats`` times, alternating, and the fastest run is kept.

    Returns:
        ``{"lengths": (n,), "rnn": (n,), "attention": (n,)}``: seconds,
        machine-dependent.
    """
    d_model = check_positive_int(d_model, "d_model")
    batch_size = check_positive_int(batch_size, "batch_size")
    if isinstance(lengths, int) or len(lengths) == 0:
        raise TypeError("lengths must be a non-empty list of sequence lengths")
    lengths = [check_positive_int(int(L), "lengths[i]") for L in lengths]
    torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    cell = torch.nn.RNNCell(d_model, d_model)
    W_Q, W_K, W_V = (torch.randn(d_model, d_model) / math.sqrt(d_model) for _ in range(3))
    out = {"lengths": np.array(lengths), "rnn": [], "attention": []}
    for L in lengths:
        x = torch.randn(batch_size, L, d_model)

        def rnn():
            h = torch.zeros(batch_size, d_model)
            for t in range(L):
                h = cell(x[:, t], h)
            return h

        def attention():
            Q, K, V = x @ W_Q, x @ W_K, x @ W_V
            return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_model), dim=-1) @ V

        # interleaved, so that a busy moment of the machine slows both alike
        best = {"rnn": math.inf, "attention": math.inf}
        for _ in range(repeats):
            for key, fn in (("rnn", rnn), ("attention", attention)):
                best[key] = min(best[key], min_time(fn, 1))
        out["rnn"].append(best["rnn"])
        out["attention"].append(best["attention"])
    out["rnn"], out["attention"] = np.array(out["rnn"]), np.array(out["attention"])
    return out
