"""From PyTorch to NumPy: a layer's weights as the ``params`` dict of :mod:`course_lib.scratch.layers`.

It needs both sides, so it lives here: ``scratch`` imports nothing from
``models``. The tests use it to check the NumPy layers against the PyTorch
ones (chapter 5).
"""

from __future__ import annotations

import torch.nn as nn

from .layers import DecoderLayer, EncoderLayer

__all__ = ["layer_params"]


def layer_params(layer) -> dict:
    """Copy a PyTorch layer's weights into the ``params`` dict of :mod:`course_lib.scratch.layers`.

    Args:
        layer: a ``course_lib.models.EncoderLayer`` / ``DecoderLayer``, or a
            ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer``.

    Returns:
        ``params`` as described in :mod:`course_lib.scratch.layers` (float32 arrays when
        the layer is float32). Pass ``norm_first=layer.norm_first`` to
        :func:`encoder_layer` / :func:`decoder_layer` along with it.
    """
    if isinstance(layer, nn.TransformerEncoderLayer):
        layer = EncoderLayer.from_torch(layer)
    elif isinstance(layer, nn.TransformerDecoderLayer):
        layer = DecoderLayer.from_torch(layer)
    if not isinstance(layer, (EncoderLayer, DecoderLayer)):
        raise TypeError("layer must be an EncoderLayer, DecoderLayer, nn.TransformerEncoderLayer "
                        f"or nn.TransformerDecoderLayer, got {type(layer).__name__}")

    def arr(t, transpose=False):
        return None if t is None else (t.T if transpose else t).detach().cpu().numpy()

    def attn(m):
        projections = {"q": m.q_proj, "k": m.k_proj, "v": m.v_proj, "o": m.out_proj}
        return {key: arr(getattr(lin, "weight" if key[0] == "W" else "bias"), key[0] == "W")
                for name, lin in projections.items() for key in (f"W_{name.upper()}", f"b_{name}")}

    params = {
        "num_heads": layer.self_attn.num_heads, "activation": layer.activation,
        "eps": layer.norm1.eps, "self_attn": attn(layer.self_attn),
        "ffn": {"W1": arr(layer.linear1.weight, True), "b1": arr(layer.linear1.bias),
                "W2": arr(layer.linear2.weight, True), "b2": arr(layer.linear2.bias)},
    }
    norms = ("norm1", "norm2") + (("norm3",) if isinstance(layer, DecoderLayer) else ())
    for name in norms:
        norm = getattr(layer, name)
        params[name] = {"gamma": arr(norm.weight), "beta": arr(norm.bias)}
    if isinstance(layer, DecoderLayer):
        params["cross_attn"] = attn(layer.cross_attn)
    return params
