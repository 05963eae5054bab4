"""The Transformer's encoder and decoder layers in NumPy.

An encoder layer is two *sublayers*, self-attention and a position-wise
feed-forward network; a decoder layer has a third, cross-attention over the
encoder output, between them. Each sublayer is wrapped in a residual
connection and a layer norm, either after the sum (post-LN, the 2017 paper,
BERT) or before the sublayer (pre-LN, GPT-2, ViT)::

    post-LN:  x = LayerNorm(x + Sublayer(x))
    pre-LN:   x = x + Sublayer(LayerNorm(x))

Chapter 5 (*The full Transformer*, ``ch05_transformer``) explains them and
uses their PyTorch twins, :mod:`course_lib.models.layers`;
``tests/test_scratch_layers.py`` checks that both compute the same thing.

``params`` is a plain dict of NumPy arrays, as
:func:`course_lib.models.to_numpy.layer_params` copies it from a PyTorch layer::

    {"num_heads": int, "activation": "relu" | "gelu" | "gelu_tanh", "eps": float,
     "self_attn":  {"W_Q", "b_q", "W_K", "b_k", "W_V", "b_v", "W_O", "b_o"},
     "cross_attn": {... the same keys ...},            # decoder layers only
     "ffn":   {"W1": (d_model, d_ff), "b1": (d_ff,), "W2": (d_ff, d_model), "b2": (d_model,)},
     "norm1": {"gamma": (d_model,), "beta": (d_model,)}, "norm2": {...},
     "norm3": {...}}                                    # decoder layers only

Biases may be ``None``. Weights are ``(d_in, d_out)``: ``W = linear.weight.T``.
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import as_real_array, check_choice, check_finite, check_positive_number, shape_str
from .linear import linear
from .multihead import multi_head_attention

__all__ = ["ACTIVATIONS", "layer_norm", "feed_forward", "encoder_layer", "decoder_layer"]

_erf = np.vectorize(math.erf, otypes=[np.float64])

ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: (0.5 * x * (1 + _erf(x / math.sqrt(2)))).astype(x.dtype),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
}
"""Activation functions of the feed-forward network, by name. ``gelu_tanh`` is
the tanh approximation of GELU used by GPT-2 (chapter 7)."""


def layer_norm(x, gamma, beta, eps: float = 1e-5) -> np.ndarray:
    """Layer normalisation over the last axis.

    ``gamma * (x - mean) / sqrt(var + eps) + beta``, with the mean and the
    (biased) variance taken over the ``d_model`` features of each position.

    Args:
        x: ``(..., d_model)``.
        gamma: ``(d_model,)`` scale (``nn.LayerNorm.weight``).
        beta: ``(d_model,)`` shift (``nn.LayerNorm.bias``).
        eps: small positive number added to the variance.

    Returns:
        ``(..., d_model)``.

    Chapter 5.
    """
    x = as_real_array(x, "x", min_ndim=1)
    check_finite(x, "x")
    d_model = x.shape[-1]
    for name, a in (("gamma", gamma), ("beta", beta)):
        if as_real_array(a, name).shape != (d_model,):
            raise ValueError(f"{name} must have shape (d_model,) = ({d_model},), "
                             f"got {shape_str(np.shape(a))}")
    eps = check_positive_number(eps, "eps")
    mean = x.mean(axis=-1, keepdims=True)             # (..., 1)
    var = x.var(axis=-1, keepdims=True)               # (..., 1)
    return np.asarray(gamma) * (x - mean) / np.sqrt(var + eps) + np.asarray(beta)


def feed_forward(x, W1, b1, W2, b2, activation: str = "relu") -> np.ndarray:
    """Position-wise feed-forward network ``act(x W1 + b1) W2 + b2``.

    Args:
        x: ``(..., d_model)``.
        W1: ``(d_model, d_ff)``; b1: ``(d_ff,)`` or None.
        W2: ``(d_ff, d_model)``; b2: ``(d_model,)`` or None.
        activation: ``"relu"``, ``"gelu"`` or ``"gelu_tanh"``.

    Returns:
        ``(..., d_model)``: every position is transformed independently.

    Chapter 5.
    """
    act = ACTIVATIONS[check_choice(activation, "activation", ACTIVATIONS)]
    hidden = act(linear(x, W1, b1, names=("x", "W1", "b1")))                 # (..., d_ff)
    return linear(hidden, W2, b2, names=("the hidden layer", "W2", "b2"))    # (..., d_model)


_ATTN_KEYS = ("W_Q", "b_q", "W_K", "b_k", "W_V", "b_v", "W_O", "b_o")
_COMMON_KEYS = ("num_heads", "activation", "eps", "self_attn", "ffn", "norm1", "norm2")


def _check_params(params, keys) -> dict:
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict (see layer_params), got {type(params).__name__}")
    missing = [k for k in keys if k not in params]
    if missing:
        raise ValueError(f"params is missing the key(s) {missing}; expected keys {list(keys)}")
    return params


def _sublayer(x, fn, norm: dict, eps: float, norm_first: bool) -> np.ndarray:
    """Residual connection and layer norm around ``fn`` (post-LN or pre-LN)."""
    if norm_first:
        return x + fn(layer_norm(x, norm["gamma"], norm["beta"], eps))
    return layer_norm(x + fn(x), norm["gamma"], norm["beta"], eps)


def _attend(X_q, X_kv, attn: dict, num_heads: int, mask) -> np.ndarray:
    return multi_head_attention(X_q, X_kv, num_heads=num_heads, mask=mask,
                                **{k: attn.get(k) for k in _ATTN_KEYS})[0]


def encoder_layer(x, params: dict, mask=None, norm_first: bool = False) -> np.ndarray:
    """One encoder layer: self-attention, then feed-forward.

    Args:
        x: ``(..., L, d_model)`` input sequence.
        params: the layer's weights, laid out as in the module docstring.
        mask: optional boolean, broadcastable to ``(..., num_heads, L, L)``,
            True = may attend (e.g. a padding mask).
        norm_first: False for post-LN (2017 paper), True for pre-LN.

    Returns:
        ``(..., L, d_model)``.

    Chapter 5.
    """
    p = _check_params(params, _COMMON_KEYS)
    h, eps = p["num_heads"], p["eps"]
    x = _sublayer(x, lambda z: _attend(z, z, p["self_attn"], h, mask), p["norm1"], eps, norm_first)
    return _sublayer(x, lambda z: feed_forward(z, **p["ffn"], activation=p["activation"]),
                     p["norm2"], eps, norm_first)


def decoder_layer(y, memory, params: dict, self_mask=None, cross_mask=None,
                  norm_first: bool = False) -> np.ndarray:
    """One decoder layer: masked self-attention, cross-attention, feed-forward.

    Args:
        y: ``(..., L_t, d_model)`` target sequence so far.
        memory: ``(..., L_s, d_model)`` encoder output.
        params: the layer's weights (with ``cross_attn`` and ``norm3``).
        self_mask: optional boolean, broadcastable to ``(..., num_heads, L_t,
            L_t)``; usually a causal mask (and target padding).
        cross_mask: optional boolean, broadcastable to ``(..., num_heads,
            L_t, L_s)``; usually the source padding mask.
        norm_first: False for post-LN, True for pre-LN.

    Returns:
        ``(..., L_t, d_model)``.

    Chapter 5.
    """
    p = _check_params(params, _COMMON_KEYS + ("cross_attn", "norm3"))
    h, eps = p["num_heads"], p["eps"]
    memory = as_real_array(memory, "memory", min_ndim=2)
    y = _sublayer(y, lambda z: _attend(z, z, p["self_attn"], h, self_mask), p["norm1"], eps, norm_first)
    y = _sublayer(y, lambda z: _attend(z, memory, p["cross_attn"], h, cross_mask),
                  p["norm2"], eps, norm_first)
    return _sublayer(y, lambda z: feed_forward(z, **p["ffn"], activation=p["activation"]),
                     p["norm3"], eps, norm_first)

