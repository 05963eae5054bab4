"""Copying Hugging Face weights into the book's models, name by name.

Chapters 7 and 8 (``ch07_bert``, ``ch08_gpt``) check the book's BERT and GPT against
``transformers`` by loading the *same* weights into both
(``tests/unit/test_hf_equivalence.py`` does the same for ViT), and chapters 7
and 8 run the pretrained all-MiniLM-L6-v2 in the book's BERT. The copy is
a renaming: a table maps each of our module
paths to the Hugging Face module path that holds the same matrix, e.g.

=============================  ======================================
ours                           Hugging Face BERT
=============================  ======================================
``layers.0.self_attn.q_proj``  ``encoder.layer.0.attention.self.query``
``layers.0.linear1``           ``encoder.layer.0.intermediate.dense``
=============================  ======================================

Every parameter of our model must be covered exactly once and every shape
must match, so a wrong table fails loudly instead of leaving random weights.
This module never imports ``transformers``: it only reads ``state_dict()``
and ``config`` from a model object, or tensors from a ``.safetensors`` file.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from .._validate import shape_str

__all__ = ["encoder_layer_names", "gather", "hf_state", "load_parameters", "only_parameter"]

# Our EncoderLayer's sub-modules, in the order the layer uses them.
_ENCODER_LAYER_PARTS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                        "self_attn.out_proj", "norm1", "linear1", "linear2", "norm2")


def hf_state(hf_model, prefix: str = "") -> dict[str, torch.Tensor]:
    """Return ``hf_model``'s tensors with a leading ``prefix`` removed.

    A task model (``BertForMaskedLM``, ``GPT2LMHeadModel``, ...) stores its
    backbone under a prefix such as ``"bert."`` or ``"transformer."``; the
    bare backbone (``BertModel``, ``GPT2Model``) has none. Both are accepted.

    Args:
        hf_model: a ``torch.nn.Module`` with ``state_dict()``, or a mapping
            ``name -> tensor`` (e.g. read from ``model.safetensors``).
        prefix: the backbone prefix, e.g. ``"bert."``; names without it are
            kept as they are.
    """
    state = hf_model if isinstance(hf_model, Mapping) else hf_model.state_dict()
    return {(k[len(prefix):] if prefix and k.startswith(prefix) else k): v
            for k, v in state.items()}


def encoder_layer_names(ours: str, theirs: str, parts: tuple[str, ...]) -> dict[str, str]:
    """Pair our ``EncoderLayer`` sub-modules with Hugging Face's.

    Args:
        ours: our layer's path, e.g. ``"layers.3"``.
        theirs: the Hugging Face layer's path, e.g. ``"encoder.layer.3"``.
        parts: eight Hugging Face sub-module names, in the order
            q, k, v, attention output, first norm, FFN in, FFN out, second
            norm (our ``norm1`` is the norm of the attention sub-layer in both
            post-LN and pre-LN layers).

    Returns:
        ``{our module path: Hugging Face module path}``.
    """
    if len(parts) != len(_ENCODER_LAYER_PARTS):
        raise ValueError(f"parts must name {len(_ENCODER_LAYER_PARTS)} sub-modules "
                         f"{_ENCODER_LAYER_PARTS}, got {len(parts)}")
    return {f"{ours}.{o}": f"{theirs}.{t}" for o, t in zip(_ENCODER_LAYER_PARTS, parts)}


def gather(state: Mapping[str, torch.Tensor], names: Mapping[str, str]) -> dict[str, torch.Tensor]:
    """Rename tensors: ``theirs.weight`` / ``theirs.bias`` become ``ours.weight`` / ``ours.bias``.

    Args:
        state: Hugging Face tensors by name.
        names: ``{our module path: their module path}`` (see
            :func:`encoder_layer_names`). A module without a bias in ``state``
            simply contributes no bias.

    Returns:
        ``{our parameter name: tensor}``, ready for :func:`load_parameters`.
    """
    out = {}
    for ours, theirs in names.items():
        if f"{theirs}.weight" not in state:
            raise KeyError(f"the Hugging Face weights have no '{theirs}.weight' "
                           f"(needed for our '{ours}')")
        for suffix in ("weight", "bias"):
            if f"{theirs}.{suffix}" in state:
                out[f"{ours}.{suffix}"] = state[f"{theirs}.{suffix}"]
    return out


@torch.no_grad()
def load_parameters(model: nn.Module, tensors: Mapping[str, torch.Tensor]) -> nn.Module:
    """Copy ``tensors`` into ``model``'s parameters, checking names and shapes.

    Tied parameters (GPT's ``lm_head.weight`` is ``tok_emb.weight``) appear
    once in ``named_parameters()`` and are copied once.

    Args:
        model: the book's model, freshly built with the matching config.
        tensors: ``{parameter name: tensor}`` covering every parameter of
            ``model``; a tensor with the same number of elements but extra
            singleton axes (ViT's ``(1, N + 1, d_model)`` positions) is reshaped.

    Returns:
        ``model``, so that ``from_hf`` can end with ``return load_parameters(...)``.
    """
    params = dict(model.named_parameters())
    missing = sorted(set(params) - set(tensors))
    unknown = sorted(set(tensors) - set(params))
    if missing or unknown:
        raise KeyError(f"weight table does not match {type(model).__name__}: "
                       f"missing {missing[:5]}, unknown {unknown[:5]}")
    for name, p in params.items():
        src = tensors[name]
        if src.shape != p.shape and src.squeeze().shape != p.squeeze().shape:
            raise ValueError(f"{name}: expected shape {shape_str(p.shape)}, "
                             f"got {shape_str(src.shape)} from the checkpoint")
        p.copy_(src.reshape(p.shape).to(p.dtype))   # e.g. (1, N + 1, d_model) -> (N + 1, d_model)
    return model


def only_parameter(module: nn.Module, path: str) -> str:
    """The full name of the single parameter of ``module`` found at ``path``.

    Used for one-tensor modules such as a learned position table, whose
    internal name (``weight`` or ``pe``) is the positional module's business.
    """
    names = [n for n, _ in module.named_parameters()]
    if len(names) != 1:
        raise ValueError(f"{path} should hold exactly one parameter, found {names}")
    return f"{path}.{names[0]}"
