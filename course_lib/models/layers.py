"""Encoder and decoder layers of the Transformer as PyTorch modules.

The NumPy version, :mod:`course_lib.scratch.layers`, shows the formulas of
chapter 5 (*The full Transformer*, ``ch05_transformer``); these modules
train, run on batches, and copy their weights from
``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` with
``from_torch``. Every sublayer is wrapped
in a residual connection and a layer norm::

    post-LN (norm_first=False, 2017 paper, BERT):  x = norm(x + dropout(sublayer(x)))
    pre-LN  (norm_first=True, GPT-2, ViT):          x = x + dropout(sublayer(norm(x)))

BERT, GPT-2 and ViT (chapters 6 and 7) are stacks of :class:`EncoderLayer`.
"""

from __future__ import annotations

from functools import partial

import torch.nn as nn
import torch.nn.functional as F

from .._validate import (check_choice, check_positive_int, check_positive_number, check_probability,
                         check_tensor)
from .attention import MultiHeadAttention

__all__ = ["EncoderLayer", "DecoderLayer"]

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": partial(F.gelu, approximate="tanh")}
"""The PyTorch twins of :data:`course_lib.scratch.layers.ACTIVATIONS`."""


def _activation_name(act) -> str:
    """The name in :data:`ACTIVATIONS` of a torch layer's ``activation``."""
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu:
        return "gelu"
    if isinstance(act, nn.GELU):
        return "gelu_tanh" if act.approximate == "tanh" else "gelu"
    raise ValueError(f"layer.activation must be ReLU or GELU, got {act!r}")


class _Layer(nn.Module):
    """What encoder and decoder layers share: self-attention, the
    feed-forward network, two norms and the residual wiring."""

    _TORCH_CLASS: type = nn.Module
    _TORCH_NAMES: dict = {}        # our submodule -> the torch layer's submodule

    def __init__(self, d_model, num_heads, d_ff, dropout, activation, norm_first,
                 layer_norm_eps, bias):
        super().__init__()
        self.d_model = check_positive_int(d_model, "d_model")
        d_ff = check_positive_int(d_ff, "d_ff")
        dropout = check_probability(dropout, "dropout")
        self.activation = check_choice(activation, "activation", ACTIVATIONS)
        layer_norm_eps = check_positive_number(layer_norm_eps, "layer_norm_eps")
        self.norm_first = bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, bias)
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)                 # inside the feed-forward network
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _residual(self, x, norm, dropout, sublayer):
        """Wrap ``sublayer`` (returning ``(out, weights)``) in residual + norm."""
        out, weights = sublayer(norm(x) if self.norm_first else x)
        x = x + dropout(out)
        return (x if self.norm_first else norm(x)), weights

    def _feed_forward(self, x):
        """``linear2(dropout(act(linear1(x))))``, shaped like a sublayer."""
        hidden = self.dropout(ACTIVATIONS[self.activation](self.linear1(x)))   # (B, L, d_ff)
        return self.linear2(hidden), None                                       # (B, L, d_model)

    def _check_x(self, x, name: str, L: str):
        check_tensor(x, name, ndim=3, last_dim=self.d_model, layout=f"(B, {L}, d_model={self.d_model})")

    @classmethod
    def from_torch(cls, layer):
        """A copy of a ``torch.nn`` layer with its weights and settings (chapter 5).

        Args:
            layer: an ``nn.TransformerEncoderLayer`` (for
                :class:`EncoderLayer`) or ``nn.TransformerDecoderLayer`` (for
                :class:`DecoderLayer`). Its activation (ReLU/GELU),
                ``norm_first``, layer-norm eps, dropout and bias are read from
                it; ``batch_first`` does not matter.

        Returns:
            An :class:`EncoderLayer` / :class:`DecoderLayer` computing what
            ``layer`` computes (on batch-first ``(B, L, d_model)`` inputs).
        """
        if not isinstance(layer, cls._TORCH_CLASS):
            raise TypeError(f"layer must be a torch.nn.{cls._TORCH_CLASS.__name__}, "
                            f"got {type(layer).__name__}")
        ours = cls(d_model=layer.linear1.in_features, num_heads=layer.self_attn.num_heads,
                   d_ff=layer.linear1.out_features, dropout=layer.dropout.p,
                   activation=_activation_name(layer.activation), norm_first=layer.norm_first,
                   layer_norm_eps=layer.norm1.eps, bias=layer.linear1.bias is not None)
        ours = ours.to(layer.linear1.weight)
        for name, torch_name in cls._TORCH_NAMES.items():
            theirs = getattr(layer, torch_name)
            if isinstance(theirs, nn.MultiheadAttention):
                setattr(ours, name, MultiHeadAttention.from_torch(theirs))
            else:
                getattr(ours, name).load_state_dict(theirs.state_dict())
        return ours


_SHARED_NAMES = {n: n for n in ("self_attn", "linear1", "linear2", "norm1", "norm2")}


class EncoderLayer(_Layer):
    """Self-attention, then a feed-forward network (chapter 5).

    Args:
        d_model: width of the sequence vectors.
        num_heads: attention heads; must divide ``d_model``.
        d_ff: hidden width of the feed-forward network (often ``4 d_model``).
        dropout: dropout on attention weights, inside the feed-forward
            network and on each sublayer's output (training only).
        activation: ``"relu"`` (2017 paper), ``"gelu"`` (BERT, ViT) or
            ``"gelu_tanh"`` (GPT-2).
        norm_first: False for post-LN, True for pre-LN.
        layer_norm_eps: the ``eps`` of both layer norms (BERT uses 1e-12).
        bias: biases in the linear layers and the layer norms.

    Attributes:
        self_attn (:class:`MultiHeadAttention`), linear1, linear2, norm1,
        norm2, dropout1, dropout2, dropout, activation (a name),
        norm_first, d_model.

    ``forward(x (B, L, d_model), mask=None)`` returns ``(x (B, L, d_model), weights)``.
    BERT (chapter 7), GPT (chapter 8) and ViT (chapter 6) are stacks of this layer.
    """

    _TORCH_CLASS = nn.TransformerEncoderLayer
    _TORCH_NAMES = _SHARED_NAMES

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1,
                 activation: str = "relu", norm_first: bool = False,
                 layer_norm_eps: float = 1e-5, bias: bool = True):
        super().__init__(d_model, num_heads, d_ff, dropout, activation, norm_first,
                         layer_norm_eps, bias)

    def forward(self, x, mask=None, need_weights: bool = False, cache=None):
        """Run the layer (chapter 5).

        Args:
            x: ``(B, L, d_model)``.
            mask: optional boolean, broadcastable to ``(B, num_heads, L,
                L_k)``; True = may attend (padding mask for BERT, causal mask
                for GPT).
            need_weights: also return the self-attention weights.
            cache: optional :class:`~course_lib.models.attention.KVCache` for
                incremental (GPT-style) decoding; ``L_k`` then includes the
                cached positions.

        Returns:
            ``(x, weights)``: ``x`` is ``(B, L, d_model)``; ``weights`` is
            ``(B, num_heads, L, L_k)`` or None.
        """
        self._check_x(x, "x", "L")
        x, weights = self._residual(x, self.norm1, self.dropout1,            # (B, L, d_model)
                                    lambda h: self.self_attn(h, h, h, mask, need_weights, cache))
        x, _ = self._residual(x, self.norm2, self.dropout2, self._feed_forward)  # (B, L, d_model)
        return x, weights


class DecoderLayer(_Layer):
    """Masked self-attention, cross-attention, feed-forward (chapter 5).

    Args:
        d_model, num_heads, d_ff, dropout, activation, norm_first,
        layer_norm_eps, bias: as for :class:`EncoderLayer`.

    Attributes:
        self_attn, cross_attn (:class:`MultiHeadAttention`), linear1,
        linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3, dropout.

    ``forward(y (B, L_t, d_model), memory (B, L_s, d_model), ...)`` returns
    ``(y (B, L_t, d_model), weights)``.
    """

    _TORCH_CLASS = nn.TransformerDecoderLayer
    _TORCH_NAMES = {**_SHARED_NAMES, "cross_attn": "multihead_attn", "norm3": "norm3"}

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1,
                 activation: str = "relu", norm_first: bool = False,
                 layer_norm_eps: float = 1e-5, bias: bool = True):
        super().__init__(d_model, num_heads, d_ff, dropout, activation, norm_first,
                         layer_norm_eps, bias)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, self.dropout.p, bias)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout3 = nn.Dropout(self.dropout.p)

    def forward(self, y, memory, self_mask=None, cross_mask=None, need_weights: bool = False,
                cache=None):
        """Run the layer (chapter 5).

        Args:
            y: ``(B, L_t, d_model)`` target sequence so far.
            memory: ``(B, L_s, d_model)`` encoder output.
            self_mask: optional boolean, broadcastable to ``(B, num_heads,
                L_t, L_t)`` (causal and target padding); True = may attend.
            cross_mask: optional boolean, broadcastable to ``(B, num_heads,
                L_t, L_s)`` (source padding).
            need_weights: also return both attention maps.
            cache: optional ``KVCache`` for the self-attention (cached
                decoding); the cross-attention is recomputed from ``memory``.

        Returns:
            ``(y, weights)``: ``y`` is ``(B, L_t, d_model)``; ``weights`` is
            ``(self_weights, cross_weights)`` of shapes ``(B, num_heads, L_t,
            L_t)`` and ``(B, num_heads, L_t, L_s)``, or None.
        """
        self._check_x(y, "y", "L_t")
        self._check_x(memory, "memory", "L_s")
        y, self_weights = self._residual(                                  # (B, L_t, d_model)
            y, self.norm1, self.dropout1,
            lambda h: self.self_attn(h, h, h, self_mask, need_weights, cache))
        y, cross_weights = self._residual(                                 # (B, L_t, d_model)
            y, self.norm2, self.dropout2,
            lambda h: self.cross_attn(h, memory, memory, cross_mask, need_weights))
        y, _ = self._residual(y, self.norm3, self.dropout3, self._feed_forward)  # (B, L_t, d_model)
        return y, ((self_weights, cross_weights) if need_weights else None)
