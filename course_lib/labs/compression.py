"""Chapter 10's lab (``ch10_capstone``): making a trained model smaller, measured: int8 dynamic
quantisation and magnitude pruning.

Dynamic int8 quantisation stores each ``nn.Linear`` weight ``W`` as int8 with one
float scale ``s`` and zero point per matrix, ``W ≈ s · round(W / s)``, and quantises
the activations on the fly. Magnitude pruning sets the ``amount`` smallest-magnitude
weights of every ``nn.Linear`` to zero (``torch.nn.utils.prune.l1_unstructured``).
"""

from __future__ import annotations

import copy
import os
import tempfile
import warnings
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils import prune

from .._validate import check_probability

__all__ = ["quantize_int8", "saved_size", "prune_linear", "linear_sparsity"]


def quantize_int8(model: nn.Module) -> nn.Module:
    """A copy of ``model`` whose ``nn.Linear`` layers use int8 weights (chapter 10).

    Uses ``torch.ao.quantization.quantize_dynamic`` (CPU inference only), with
    the integer kernels of ``torch.backends.quantized.engine`` (FBGEMM or
    oneDNN on x86, QNNPACK on ARM). The
    query projections ``q_proj`` of :class:`~course_lib.models.MultiHeadAttention`
    stay float32: the module reads ``q_proj.weight.dtype`` to check its inputs,
    and a quantised linear layer has no float weight. Every other linear layer
    (keys, values, output projection, feed-forward, pooler, classifier) is int8.

    Args:
        model: a float32 ``nn.Module``; it is not changed.

    Returns:
        The quantised copy, in eval mode.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    model = copy.deepcopy(model).eval()
    names = {name for name, m in model.named_modules()
             if isinstance(m, nn.Linear) and not name.endswith("q_proj")}
    with warnings.catch_warnings():          # torch.ao.quantization is deprecated in torch 2.10+
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(model, names, dtype=torch.qint8)
    if torch.backends.quantized.engine == "qnnpack":
        # QNNPACK (ARM's engine) has no reduced range: asked for one, as a dynamic Linear of
        # version 4 always does, it ignores it and warns on stderr, from C++. Version 3 does not
        # ask; the numbers are the same.
        for m in quantized.modules():
            if isinstance(m, torch.ao.nn.quantized.dynamic.Linear):
                m.version = 3
    return quantized


def saved_size(model: nn.Module, directory=None) -> int:
    """Bytes of ``torch.save(model.state_dict())`` on disk (chapter 10).

    Args:
        model: any module (quantised ones included).
        directory: where to write the file; None: a temporary folder, deleted after.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(directory if directory is not None else tmp) / "state.pt"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.save(model.state_dict(), path)
        return os.path.getsize(path)


def prune_linear(model: nn.Module, amount: float) -> nn.Module:
    """A copy of ``model`` with the smallest ``amount`` of each ``nn.Linear`` weight set to 0.

    Every linear layer is pruned (attention projections, feed-forward, pooler,
    classifier), each by L1 magnitude within the layer; the zeros are made
    permanent (``prune.remove``), so the result is an ordinary module.

    Args:
        model: the trained model; it is not changed.
        amount: share of each weight matrix to zero, in ``[0, 1]``.
    """
    amount = check_probability(amount, "amount")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    model = copy.deepcopy(model).eval()
    for m in model.modules():
        if isinstance(m, nn.Linear):
            prune.l1_unstructured(m, "weight", amount=amount)
            prune.remove(m, "weight")
    return model


def linear_sparsity(model: nn.Module) -> float:
    """Share of exactly-zero entries over all ``nn.Linear`` weights of ``model`` (0 to 1)."""
    ws = [m.weight for m in model.modules() if isinstance(m, nn.Linear)]
    if not ws:
        raise ValueError("model must contain at least one nn.Linear")
    return sum(int((w == 0).sum()) for w in ws) / sum(w.numel() for w in ws)
