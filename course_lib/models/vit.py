"""The Vision Transformer (ViT) of chapter 6 (``ch06_vit``).

An image is cut into ``N = (H / P) * (W / P)`` patches of ``P x P`` pixels;
each patch is flattened to a vector of length ``P * P * C`` and projected to
``d_model``. A learned [CLS] token is prepended, learned positions are added,
and the ``N + 1`` tokens go through pre-LN encoder layers (Dosovitskiy et al.,
2021, eq. 1-4):

.. math::

    z_0 &= [x_\\text{class};\\, x_p^1 E;\\, \\dots;\\, x_p^N E] + E_\\text{pos} \\\\
    z'_\\ell &= \\operatorname{MSA}(\\operatorname{LN}(z_{\\ell-1})) + z_{\\ell-1} \\\\
    z_\\ell &= \\operatorname{MLP}(\\operatorname{LN}(z'_\\ell)) + z'_\\ell \\\\
    y &= \\operatorname{LN}(z_L^0)

The class logits are a linear layer on ``y``, the final [CLS] vector.

As in nanoGPT, the settings live in a frozen dataclass, :class:`ViTConfig`,
and the model takes it: ``ViT(ViTConfig(image_size=8, patch_size=2, ...))``.
``ViT(image_size=8, patch_size=2, ...)`` builds the same config.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .._validate import check_positive_int, check_tensor, shape_str
from ._hf import encoder_layer_names, gather, hf_state, load_parameters, only_parameter
from ._inputs import ConfigChecks, resolve_config
from .layers import EncoderLayer
from .positional import LearnedPositionalEncoding

__all__ = ["patchify", "PatchEmbedding", "ViT", "ViTConfig"]

# Hugging Face (transformers 5) names of one ViT layer's parts, in the order
# of ``_hf.encoder_layer_names``.
_HF_VIT_LAYER = ("attention.q_proj", "attention.k_proj", "attention.v_proj", "attention.o_proj",
                 "layernorm_before", "mlp.fc1", "mlp.fc2", "layernorm_after")


def _check_patch_grid(image_size: int, patch_size: int, prefix: str = "") -> int:
    """Number of patches per side; the image must tile exactly.

    ``prefix`` goes before the field names, e.g. ``"ViTConfig."``.
    """
    if image_size % patch_size:
        raise ValueError(f"{prefix}image_size = {image_size} must be divisible by "
                         f"{prefix}patch_size = {patch_size} so that the patches tile the image")
    return image_size // patch_size


def _check_images(images, in_channels: int | None = None,
                  image_size: int | None = None) -> torch.Tensor:
    """A finite floating tensor ``(B, C, H, W)``, optionally of a fixed size."""
    layout = f"(B, {in_channels}, {image_size}, {image_size})" if image_size else "(B, C, H, W)"
    check_tensor(images, "images", ndim=4, layout=layout)
    if image_size is not None and tuple(images.shape[1:]) != (in_channels, image_size, image_size):
        raise ValueError(f"images must have shape {layout}, got {shape_str(images.shape)}")
    if not torch.isfinite(images).all():
        raise ValueError("images contains NaN or infinite values")
    return images


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut images into flattened patches, as the ViT paper writes ``x_p``.

    Chapter 6 uses it to show that the strided convolution of
    :class:`PatchEmbedding` is "flatten each patch, then one linear layer".

    Args:
        images: float tensor ``(B, C, H, W)``; ``H`` and ``W`` divisible by
            ``patch_size``.
        patch_size: ``P``, the side of a square patch in pixels.

    Returns:
        Tensor ``(B, N, P * P * C)`` with ``N = (H / P) * (W / P)`` patches in
        raster order (left to right, then top to bottom); each patch is
        flattened row by row, the ``C`` channel values of a pixel together.
    """
    images = _check_images(images)
    p = check_positive_int(patch_size, "patch_size")
    B, C, H, W = images.shape
    rows = _check_patch_grid(H, p)
    cols = _check_patch_grid(W, p)
    x = images.reshape(B, C, rows, p, cols, p)    # (B, C, H/P, P, W/P, P)
    x = x.permute(0, 2, 4, 3, 5, 1)               # (B, H/P, W/P, P, P, C)
    return x.reshape(B, rows * cols, p * p * C)   # (B, N, P*P*C)


class PatchEmbedding(nn.Module):
    """Patches to tokens: a ``P x P`` convolution with stride ``P`` (chapter 6).

    Args:
        image_size: side of the square input image in pixels.
        patch_size: ``P``; must divide ``image_size``.
        in_channels: ``C``, e.g. 3 for RGB.
        d_model: width of each token.

    Attributes:
        proj: ``nn.Conv2d(C, d_model, P, stride=P)``, weight ``(d_model, C, P, P)``.
        patch_size, num_patches (``N = (image_size / P) ** 2``).

    ``forward(images)`` maps ``(B, C, H, W)`` to ``(B, N, d_model)``.
    """

    def __init__(self, image_size: int, patch_size: int, in_channels: int, d_model: int):
        super().__init__()
        self.patch_size = check_positive_int(patch_size, "patch_size")
        per_side = _check_patch_grid(check_positive_int(image_size, "image_size"), self.patch_size)
        self.num_patches = per_side * per_side
        self.proj = nn.Conv2d(check_positive_int(in_channels, "in_channels"),
                              check_positive_int(d_model, "d_model"),
                              kernel_size=self.patch_size, stride=self.patch_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Embed images as patch tokens (chapter 6).

        Args:
            images: float tensor ``(B, C, H, W)``.

        Returns:
            ``(B, N, d_model)`` patch tokens in raster order.
        """
        x = self.proj(images)                    # (B, d_model, H/P, W/P)
        return x.flatten(2).transpose(1, 2)      # (B, d_model, N) -> (B, N, d_model)

    def linear_weight(self) -> torch.Tensor:
        """The convolution as a matrix ``E`` of shape ``(d_model, P * P * C)`` (chapter 6).

        ``patchify(images, P) @ E.T + proj.bias`` equals ``forward(images)``:
        the columns follow :func:`patchify`'s order (row, column, channel).
        Chapter 6 checks this.
        """
        W = self.proj.weight.permute(0, 2, 3, 1)          # (d_model, C, P, P) -> (d_model, P, P, C)
        return W.reshape(self.proj.out_channels, -1)      # (d_model, P*P*C)


@dataclass(frozen=True)
class ViTConfig(ConfigChecks):
    """The settings of a :class:`ViT` (chapter 6). Defaults: ViT-B/16 on ImageNet.

    Args:
        image_size: side of the square input image (224).
        patch_size: ``P`` (16); must divide ``image_size``.
        in_channels: ``C`` (3 for RGB).
        num_classes: number of output logits (1000); 0 means no head, and
            ``forward`` returns the final [CLS] vector ``y`` ``(B, d_model)``.
        d_model: token width ``D`` (768 for ViT-B).
        num_heads: attention heads per layer; must divide ``d_model``; each
            head has width ``d_k = d_model / num_heads``.
        num_layers: number of encoder layers ``L``.
        d_ff: hidden width of the MLP (``4 * d_model`` in the paper).
        dropout: dropout probability in ``[0, 1)`` after the embeddings and
            in each layer.
        layer_norm_eps: ``eps`` of every LayerNorm, positive (1e-12 as in
            Hugging Face ViT).

    Raises:
        TypeError: a field of the wrong type (e.g. ``patch_size=2.0``).
        ValueError: a value out of range, ``image_size`` not divisible by
            ``patch_size`` or ``d_model`` by ``num_heads``; the message names
            the field.
    """

    image_size: int = 224
    patch_size: int = 16
    in_channels: int = 3
    num_classes: int = 1000
    d_model: int = 768
    num_heads: int = 12
    num_layers: int = 12
    d_ff: int = 3072
    dropout: float = 0.0
    layer_norm_eps: float = 1e-12

    def __post_init__(self):
        self._check_ints("image_size", "patch_size", "in_channels", "d_model", "num_heads",
                         "num_layers", "d_ff")
        self._check_ints("num_classes", minimum=0)
        _check_patch_grid(self.image_size, self.patch_size, prefix="ViTConfig.")
        self._check_heads()
        self._check_probability("dropout")
        self._check_positive_number("layer_norm_eps")


class ViT(nn.Module):
    """Vision Transformer classifier (chapter 6, ``ch06_vit``).

    Args:
        config: a :class:`ViTConfig`. Instead of it, its fields may be given
            as keyword arguments (``ViT(image_size=8, patch_size=2, ...)``),
            never by position.

    Attributes:
        config: the :class:`ViTConfig`.
        patch_embed (:class:`PatchEmbedding`), cls_token (``(1, 1, d_model)``),
        pos_emb (:class:`LearnedPositionalEncoding` with ``N + 1`` rows),
        layers (``num_layers`` pre-LN :class:`EncoderLayer`), norm (final
        LayerNorm), head (``nn.Linear(d_model, num_classes)`` or Identity);
        image_size, in_channels, num_classes (copied from ``config``).

    ``forward(images (B, C, H, W))`` returns logits ``(B, num_classes)``.
    """

    def __init__(self, config: ViTConfig | None = None, **settings):
        super().__init__()
        self.config = c = resolve_config(ViTConfig, "ViT", config, settings)
        self.image_size, self.in_channels, self.num_classes = c.image_size, c.in_channels, c.num_classes
        self.patch_embed = PatchEmbedding(c.image_size, c.patch_size, c.in_channels, c.d_model)
        self.cls_token = nn.Parameter(torch.randn(1, 1, c.d_model) * 0.02)
        self.pos_emb = LearnedPositionalEncoding(c.d_model, self.patch_embed.num_patches + 1,
                                                 c.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.num_heads, c.d_ff, dropout=c.dropout, activation="gelu",
                         norm_first=True, layer_norm_eps=c.layer_norm_eps)
            for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.head = nn.Linear(c.d_model, c.num_classes) if c.num_classes else nn.Identity()

    def encode(self, images: torch.Tensor, need_weights: bool = False):
        """Run the encoder and return all ``N + 1`` final tokens (chapter 6).

        Args:
            images: float tensor ``(B, in_channels, image_size, image_size)``.
            need_weights: also return each layer's attention weights.

        Returns:
            ``(z, weights)``: ``z`` is ``LN(z_L)`` of shape ``(B, N + 1, d_model)``
            with the [CLS] token first; ``weights`` is a list of ``num_layers``
            tensors ``(B, num_heads, N + 1, N + 1)``, or None.
        """
        images = _check_images(images, self.in_channels, self.image_size)
        patches = self.patch_embed(images)                                # (B, N, d_model)
        cls = self.cls_token.expand(patches.shape[0], -1, -1)             # (B, 1, d_model)
        z = self.pos_emb(torch.cat([cls, patches], dim=1))                # (B, N + 1, d_model)
        weights = []
        for layer in self.layers:
            z, w = layer(z, need_weights=need_weights)  # (B, N + 1, d_model), (B, num_heads, N + 1, N + 1)
            weights.append(w)
        return self.norm(z), (weights if need_weights else None)

    def forward(self, images: torch.Tensor, need_weights: bool = False):
        """Classify ``images`` from the final [CLS] token (chapter 6).

        Args:
            images: float tensor ``(B, in_channels, image_size, image_size)``.
            need_weights: if True, also return the attention weights; chapter 6
                plots ``weights[l][:, :, 0, 1:]``, the [CLS] -> patch attention.

        Returns:
            ``logits`` ``(B, num_classes)`` (``(B, d_model)`` when
            ``num_classes == 0``), or ``(logits, weights)`` with ``weights`` a
            list of ``num_layers`` tensors ``(B, num_heads, N + 1, N + 1)``.
        """
        z, weights = self.encode(images, need_weights)                    # (B, N + 1, d_model)
        logits = self.head(z[:, 0])                                        # (B, num_classes)
        return (logits, weights) if need_weights else logits

    @classmethod
    def from_hf(cls, hf_model) -> "ViT":
        """Copy a ``transformers`` ``ViTModel`` or ``ViTForImageClassification``.

        Args:
            hf_model: the Hugging Face model (transformers 5 names). With a
                ``ViTModel`` (no classifier) the result has ``num_classes = 0``;
                its pooler is not part of the ViT paper's classifier and is
                ignored.

        Returns:
            A :class:`ViT` in eval mode with the same weights
            (``tests/unit/test_hf_equivalence.py`` compares the two; chapter 6
            does not use it).
        """
        c = hf_model.config
        if c.hidden_act != "gelu" or not c.qkv_bias:
            raise ValueError(f"only ViTs with hidden_act='gelu' and qkv_bias=True are "
                             f"supported, got hidden_act={c.hidden_act!r}, qkv_bias={c.qkv_bias}")
        head = getattr(hf_model, "classifier", None)
        model = cls(ViTConfig(image_size=c.image_size, patch_size=c.patch_size,
                              in_channels=c.num_channels,
                              num_classes=head.out_features if head is not None else 0,
                              d_model=c.hidden_size, num_heads=c.num_attention_heads,
                              num_layers=c.num_hidden_layers, d_ff=c.intermediate_size,
                              layer_norm_eps=c.layer_norm_eps))
        state = hf_state(hf_model, "vit.")
        names = {"patch_embed.proj": "embeddings.patch_embeddings.projection", "norm": "layernorm"}
        if head is not None:
            names["head"] = "classifier"
        for i in range(c.num_hidden_layers):
            names.update(encoder_layer_names(f"layers.{i}", f"layers.{i}", _HF_VIT_LAYER))
        tensors = gather(state, names)
        tensors["cls_token"] = state["embeddings.cls_token"]
        tensors[only_parameter(model.pos_emb, "pos_emb")] = state["embeddings.position_embeddings"]
        return load_parameters(model, tensors).eval()
