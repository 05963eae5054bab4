"""Muon: momentum made orthogonal before each step (chapter 9, the long Chinese run).

AdamW steps every weight on its own, scaled by that weight's gradient history. Muon
(Jordan et al., 2024) treats a weight matrix ``W`` (``m × n``) as a matrix. It keeps a
momentum ``M`` of the gradient ``G`` (Nesterov's, as in SGD) and steps along the
semi-orthogonal matrix nearest to it::

    M ← μ M + G,      D = G + μ M,      D = U Σ Vᵀ (its SVD),      W ← W − η s (U Vᵀ)

``U Vᵀ`` keeps the directions of ``D`` and sets all its singular values to one, so a
direction the gradient rarely pushes along moves as far as the dominant one. The SVD is
replaced by five steps of a Newton–Schulz iteration (:func:`newton_schulz`), matrix
products only: ``X ← a X + b (X Xᵀ) X + c (X Xᵀ)² X`` from ``X = D / ‖D‖_F``. Each step maps
every singular value ``σ`` of ``X`` to ``p(σ) = a σ + b σ³ + c σ⁵`` and leaves ``U`` and ``V``
alone; with ``(a, b, c) = (3.4445, −4.7750, 2.0315)`` five steps send every ``σ`` in
``[0.01, 1]`` into ``[0.68, 1.14]`` (chapter 9 computes the band and draws the curves).

The scale ``s = 0.2 · sqrt(max(m, n))`` (Liu et al., 2025, *Muon is Scalable for LLM
Training*) gives the step about the root-mean-square size of an AdamW step, so the
learning rate ``η`` and the decoupled weight decay ``λ`` (``W ← W − η λ W``) of an AdamW
run carry over. Muon is only for the matrices inside the blocks; embeddings, the output
layer tied to them, biases and norms stay with AdamW (:func:`split_for_muon`).

Everything here runs in the gradient's own dtype (float32 in training): PyTorch's
``torch.optim.Muon`` rounds the iteration to bfloat16, whose matrix products differ more
between CPUs than the course's checks allow.
"""

from __future__ import annotations

import math

import torch

from .._validate import check_positive_int

__all__ = ["NS_COEFFICIENTS", "newton_schulz", "muon_scale", "Muon", "split_for_muon"]

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
"""``(a, b, c)`` of the quintic ``p(σ) = a σ + b σ³ + c σ⁵`` (Jordan et al., 2024)."""


def newton_schulz(D: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """Approximately orthogonalise a matrix: ``U p⁽ˢᵗᵉᵖˢ⁾(Σ / ‖D‖_F) Vᵀ`` for ``D = U Σ Vᵀ``.

    Args:
        D: a matrix ``(m, n)``, floating point.
        steps: iterations of ``X ← a X + b (X Xᵀ) X + c (X Xᵀ)² X`` (:data:`NS_COEFFICIENTS`).
        eps: added to ``‖D‖_F`` so that a zero matrix stays zero.

    Returns:
        ``(m, n)``, same dtype: singular vectors of ``D``, singular values near one.
    """
    if not isinstance(D, torch.Tensor) or D.dim() != 2 or not D.is_floating_point():
        raise ValueError(f"D must be a floating-point matrix (m, n), got "
                         f"{tuple(D.shape) if isinstance(D, torch.Tensor) else type(D).__name__}")
    steps = check_positive_int(steps, "steps")
    a, b, c = NS_COEFFICIENTS
    tall = D.shape[0] > D.shape[1]
    X = D.T if tall else D                                   # (r, k) with r <= k: X Xᵀ is the small Gram matrix
    X = X / (X.norm() + eps)                                 # every singular value now in [0, 1]
    for _ in range(steps):
        A = X @ X.T                                          # (r, r)
        X = a * X + (b * A + c * A @ A) @ X                  # σ -> a σ + b σ³ + c σ⁵
    return X.T if tall else X                                # (m, n)


def muon_scale(shape) -> float:
    """``0.2 · sqrt(max(m, n))`` for a matrix ``(m, n)``: Muon's step at AdamW's size."""
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"shape must be that of a matrix (m, n), got {tuple(shape)}")
    return 0.2 * math.sqrt(max(shape))


class Muon(torch.optim.Optimizer):
    """Muon for weight matrices: Nesterov momentum, :func:`newton_schulz`, decoupled weight decay.

    Args:
        params: matrices ``(m, n)`` only (see :func:`split_for_muon`).
        lr: the learning rate ``η`` (the AdamW rate of the same run; :func:`muon_scale` adapts it).
        weight_decay: ``λ``: each step first multiplies ``W`` by ``1 − η λ``.
        momentum: ``μ``.
        ns_steps: Newton–Schulz iterations.
    """

    def __init__(self, params, lr: float, weight_decay: float = 0.0, momentum: float = 0.95, ns_steps: int = 5):
        if not (isinstance(lr, (int, float)) and not isinstance(lr, bool) and lr > 0):
            raise ValueError(f"lr must be a positive number, got {lr!r}")
        if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) or weight_decay < 0:
            raise ValueError(f"weight_decay must be a number >= 0, got {weight_decay!r}")
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 <= momentum < 1:
            raise ValueError(f"momentum must be a number in [0, 1), got {momentum!r}")
        ns_steps = check_positive_int(ns_steps, "ns_steps")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, ns_steps=ns_steps))
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon steps matrices only; got a parameter of shape {tuple(p.shape)} "
                                     "(give it to AdamW: split_for_muon)")

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, wd, mu = group["lr"], group["weight_decay"], group["momentum"]
            for W in group["params"]:
                if W.grad is None:
                    continue
                G = W.grad
                state = self.state[W]
                if "momentum" not in state:
                    state["momentum"] = torch.zeros_like(G)
                M = state["momentum"]
                M.mul_(mu).add_(G)                               # M ← μ M + G
                D = G + mu * M                                   # Nesterov: look one step ahead
                W.mul_(1 - lr * wd)                              # decoupled weight decay
                W.add_(newton_schulz(D, group["ns_steps"]), alpha=-lr * muon_scale(W.shape))
        return loss


def split_for_muon(model: torch.nn.Module) -> tuple[list, list]:
    """``(matrices, rest)`` of ``model``'s trainable parameters: Muon's and AdamW's.

    ``matrices``: the two-dimensional weights of every module except ``nn.Embedding`` (so the
    projections and feed-forward layers of the blocks). ``rest``: embeddings (with an output
    layer tied to them), biases and norms. Each parameter appears once, in the order of
    ``model.parameters()``.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    embedded = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    matrices, rest = [], []
    for p in model.parameters():
        if p.requires_grad:
            (matrices if p.dim() == 2 and id(p) not in embedded else rest).append(p)
    return matrices, rest
