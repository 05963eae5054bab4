"""An exponential moving average of a model's weights (chapter 9, "Averaging the weights").

Late in a run the weights still move from step to step: each update follows one batch, and the
batches disagree. The average

    W̄ ← β · W̄ + (1 − β) · W        after every step, from a chosen step on,

weighs the last ``1 / (1 − β)`` steps or so (β = 0.998: about 500) and so cancels much of that
batch-to-batch noise. It costs one copy of the weights and one multiply-add per step, and it does not
touch training: the run itself goes on with ``W``. Chapter 9's People's Daily GPT stores the average.
"""

from __future__ import annotations

import copy

import torch

__all__ = ["ExponentialAverage"]


class ExponentialAverage:
    """The exponential moving average of ``model``'s parameters, started at their present values.

    Args:
        model: a ``torch.nn.Module``; its parameters (every floating-point tensor of
            ``named_parameters()``, any shape) are averaged, its buffers are not.
        decay: β in ``(0, 1)``, the weight the old average keeps at every :meth:`update`.
    """

    def __init__(self, model: torch.nn.Module, decay: float):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0 < decay < 1:
            raise ValueError(f"decay must be a number in (0, 1), got {decay!r}")
        self.decay = float(decay)
        self.names = [n for n, p in model.named_parameters() if p.is_floating_point()]
        if not self.names:
            raise ValueError("model has no floating-point parameters to average")
        self.average = {n: p.detach().clone() for n, p in model.named_parameters() if n in self.names}
        self.updates = 0

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        """``W̄ ← β W̄ + (1 − β) W`` for every averaged parameter ``W`` of ``model`` (the same architecture)."""
        params = dict(model.named_parameters())
        if sorted(n for n in params if n in self.average) != sorted(self.names):
            raise ValueError("model must have the parameters this average was started from")
        for n in self.names:
            self.average[n].mul_(self.decay).add_(params[n].detach(), alpha=1 - self.decay)
        self.updates += 1

    def averaged_copy(self, model: torch.nn.Module) -> torch.nn.Module:
        """A deep copy of ``model`` holding the averaged parameters (``model`` itself is left as it is)."""
        twin = copy.deepcopy(model)
        self.copy_to(twin)
        return twin

    @torch.no_grad()
    def copy_to(self, model: torch.nn.Module) -> None:
        """Overwrite ``model``'s averaged parameters with the average."""
        params = dict(model.named_parameters())
        for n in self.names:
            if n not in params or params[n].shape != self.average[n].shape:
                raise ValueError(f"model has no parameter {n!r} of shape {tuple(self.average[n].shape)}")
            params[n].copy_(self.average[n])
