"""A small CLIP: contrastive training of an image encoder and a text encoder (chapter 6, ``ch06_vit``).

CLIP (Radford et al., 2021) trains two encoders side by side. A batch holds
``B`` images and ``B`` texts, where text ``i`` describes image ``i``. Each
encoder maps its input to a unit vector in one shared space of width
``embed_dim``; the ``B x B`` matrix of cosine similarities, divided by a
learned temperature ``tau``, is read twice as classification logits: each
image must pick its own text among the ``B`` texts (rows), and each text its
own image (columns). The loss is the mean of the two cross-entropies, the
symmetric InfoNCE loss:

.. math::

    s_{ij} = \\frac{u_i^\\top v_j}{\\tau}, \\qquad
    \\mathcal{L} = \\frac{1}{2B} \\sum_{i=1}^{B} \\Big[
        -\\log \\frac{e^{s_{ii}}}{\\sum_j e^{s_{ij}}}
        -\\log \\frac{e^{s_{ii}}}{\\sum_j e^{s_{ji}}} \\Big]

with ``u_i = f(x_i) / ||f(x_i)||`` and ``v_j = g(t_j) / ||g(t_j)||``.

* :func:`clip_loss` is that formula;
* :class:`TextEncoder` is a small Transformer encoder over characters
  (the chapter-5 :class:`~course_lib.models.layers.EncoderLayer`, pre-LN,
  mean-pooled over the real tokens);
* :class:`CLIP` joins chapter 6's :class:`~course_lib.models.vit.ViT`
  (its final [CLS] vector) and a :class:`TextEncoder`, each followed by a
  linear projection, with the learned temperature (clamped from below);
* :func:`recall_at_1` measures retrieval in both directions.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import check_tensor, shape_str
from ._inputs import ConfigChecks, check_padding_mask, check_token_ids, resolve_config
from .layers import EncoderLayer
from .positional import LearnedPositionalEncoding
from .vit import ViT

__all__ = ["clip_loss", "recall_at_1", "TextEncoder", "CLIP", "CLIPConfig"]


def _check_temperature(temperature, name: str = "temperature") -> torch.Tensor | float:
    if isinstance(temperature, torch.Tensor):
        if temperature.ndim != 0 or not temperature.is_floating_point():
            raise TypeError(f"{name} must be a positive number or a 0-d floating tensor, "
                            f"got a tensor of shape {shape_str(temperature.shape)}, dtype {temperature.dtype}")
        value = float(temperature.detach())
    elif isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(temperature).__name__}")
    else:
        value = float(temperature)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value}")
    return temperature


def clip_loss(image_emb: torch.Tensor, text_emb: torch.Tensor, temperature) -> torch.Tensor:
    """The symmetric InfoNCE loss of CLIP (chapter 6).

    Args:
        image_emb: ``(B, D)`` image embeddings; row ``i`` belongs with text ``i``.
        text_emb: ``(B, D)`` text embeddings. Both are L2-normalised here, so
            raw encoder outputs may be passed.
        temperature: ``tau > 0``, a number or a 0-d tensor (a learned one
            keeps its gradient).

    Returns:
        A scalar tensor: the mean of the image -> text cross-entropy (each row
        of ``S = u v^T / tau`` must pick its diagonal entry) and the text ->
        image one (each column of ``S``).
    """
    check_tensor(image_emb, "image_emb", ndim=2, layout="(B, D)")
    check_tensor(text_emb, "text_emb", ndim=2, layout="(B, D)")
    if image_emb.shape != text_emb.shape:
        raise ValueError(f"image_emb and text_emb must have the same shape (B, D), "
                         f"got {shape_str(image_emb.shape)} and {shape_str(text_emb.shape)}")
    if image_emb.shape[0] < 2:
        raise ValueError(f"image_emb must hold at least B = 2 pairs (the others are the negatives), "
                         f"got {shape_str(image_emb.shape)}")
    temperature = _check_temperature(temperature)
    u = F.normalize(image_emb, dim=-1)                      # (B, D)
    v = F.normalize(text_emb, dim=-1)                       # (B, D)
    logits = u @ v.T / temperature                          # (B, B): row = image, column = text
    target = torch.arange(len(u), device=u.device)
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))


def recall_at_1(similarity: torch.Tensor, image_labels: torch.Tensor, text_labels: torch.Tensor
                ) -> tuple[float, float]:
    """Retrieval recall@1 in both directions, by class (chapter 6).

    Args:
        similarity: ``(N_img, N_txt)`` scores, row = image, column = text.
        image_labels: ``(N_img,)`` integer class of each image.
        text_labels: ``(N_txt,)`` integer class of each text.

    Returns:
        ``(image_to_text, text_to_image)``: the fraction of images whose
        highest-scoring text has the image's class, and the fraction of texts
        whose highest-scoring image has the text's class. A tie goes to the
        first index (``argmax``).
    """
    check_tensor(similarity, "similarity", ndim=2, layout="(N_img, N_txt)")
    check_tensor(image_labels, "image_labels", ndim=1, floating=False, layout="(N_img,)")
    check_tensor(text_labels, "text_labels", ndim=1, floating=False, layout="(N_txt,)")
    n_img, n_txt = similarity.shape
    if n_img == 0 or n_txt == 0:
        raise ValueError(f"similarity must have at least one row and one column, got {shape_str(similarity.shape)}")
    if len(image_labels) != n_img:
        raise ValueError(f"image_labels must have one label per row of similarity ({n_img}), got {len(image_labels)}")
    if len(text_labels) != n_txt:
        raise ValueError(f"text_labels must have one label per column of similarity ({n_txt}), "
                         f"got {len(text_labels)}")
    i2t = (text_labels[similarity.argmax(1)] == image_labels).double().mean()   # (N_img,) -> scalar
    t2i = (image_labels[similarity.argmax(0)] == text_labels).double().mean()   # (N_txt,) -> scalar
    return float(i2t), float(t2i)


@dataclass(frozen=True)
class CLIPConfig(ConfigChecks):
    """The settings of a :class:`CLIP` (chapter 6). Defaults: chapter 6's digit model.

    Args:
        vocab_size: size of the text vocabulary (characters and specials).
        max_len: longest text in tokens (``<sos>`` and ``<eos>`` included).
        image_size, patch_size, in_channels: the images, as in :class:`~course_lib.models.vit.ViTConfig`.
        d_model, num_heads, d_ff: width, heads (``d_k = d_model / num_heads``)
            and feed-forward width of both encoders.
        image_layers, text_layers: encoder layers of each tower.
        embed_dim: width of the shared embedding space.
        temperature: the initial ``tau`` (CLIP: 0.07).
        min_temperature: the clamp: ``tau`` never goes below it (CLIP: 0.01,
            i.e. logits at most 100 times the cosine).
        dropout: dropout probability in both encoders.
    """

    vocab_size: int = 64
    max_len: int = 32
    image_size: int = 8
    patch_size: int = 2
    in_channels: int = 1
    d_model: int = 64
    num_heads: int = 4
    d_ff: int = 128
    image_layers: int = 2
    text_layers: int = 2
    embed_dim: int = 32
    temperature: float = 0.07
    min_temperature: float = 0.01
    dropout: float = 0.0

    def __post_init__(self):
        self._check_ints("vocab_size", "max_len", "image_size", "patch_size", "in_channels", "d_model",
                         "num_heads", "d_ff", "image_layers", "text_layers", "embed_dim")
        self._check_heads()
        self._check_positive_number("temperature")
        self._check_positive_number("min_temperature")
        if self.temperature < self.min_temperature:
            raise ValueError(f"CLIPConfig.temperature = {self.temperature} must be >= "
                             f"CLIPConfig.min_temperature = {self.min_temperature}")
        self._check_probability("dropout")


class TextEncoder(nn.Module):
    """A small Transformer encoder over token ids, mean-pooled (chapter 6).

    Token embedding + learned positions, ``num_layers`` pre-LN
    :class:`~course_lib.models.layers.EncoderLayer` (padding masked out),
    a final LayerNorm, then the mean of the real tokens' vectors.

    Args:
        vocab_size, max_len, d_model, num_heads, d_ff, num_layers, dropout:
            as in :class:`CLIPConfig`; ``pad_id`` is the id of ``<pad>`` (0 in
            the book's :class:`~course_lib.text.Vocab`).

    ``forward(ids (B, L))`` returns ``(B, d_model)``.
    """

    def __init__(self, vocab_size: int, max_len: int, d_model: int, num_heads: int, d_ff: int,
                 num_layers: int, dropout: float = 0.0, pad_id: int = 0):
        super().__init__()
        self.vocab_size, self.max_len, self.pad_id = vocab_size, max_len, pad_id
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos_emb = LearnedPositionalEncoding(d_model, max_len, dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout=dropout, activation="gelu", norm_first=True)
            for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Encode token ids ``(B, L)`` (``pad_id`` = padding) to ``(B, d_model)`` (chapter 6)."""
        check_token_ids(ids, "ids", vocab_size=self.vocab_size, max_len=self.max_len)
        real = ids != self.pad_id                                             # (B, L)
        mask = check_padding_mask(real, "ids != pad_id", ids.shape)           # (B, 1, 1, L)
        x = self.pos_emb(self.embed(ids))                                     # (B, L, d_model)
        for layer in self.layers:
            x, _ = layer(x, mask)                                             # (B, L, d_model)
        x = self.norm(x)
        w = real.to(x.dtype)[..., None]                                       # (B, L, 1)
        return (x * w).sum(1) / w.sum(1)                                      # (B, d_model)


class CLIP(nn.Module):
    """Image and text encoders with a shared embedding space (chapter 6).

    Args:
        config: a :class:`CLIPConfig`, or its fields as keyword arguments.

    Attributes:
        image_encoder: a :class:`~course_lib.models.vit.ViT` without head
            (``num_classes=0``): its final [CLS] vector ``(B, d_model)``.
        image_proj, text_proj: ``nn.Linear(d_model, embed_dim, bias=False)``.
        text_encoder: a :class:`TextEncoder`.
        log_inv_temperature: the learned ``log(1 / tau)`` (CLIP's
            ``logit_scale``); :meth:`temperature` clamps it.

    ``forward(images (B_i, C, H, W), ids (B_t, L))`` returns the logits
    ``(B_i, B_t)``: cosine similarity divided by the temperature.
    """

    def __init__(self, config: CLIPConfig | None = None, **settings):
        super().__init__()
        self.config = c = resolve_config(CLIPConfig, "CLIP", config, settings)
        self.image_encoder = ViT(image_size=c.image_size, patch_size=c.patch_size, in_channels=c.in_channels,
                                 num_classes=0, d_model=c.d_model, num_heads=c.num_heads,
                                 num_layers=c.image_layers, d_ff=c.d_ff, dropout=c.dropout)
        self.image_proj = nn.Linear(c.d_model, c.embed_dim, bias=False)
        self.text_encoder = TextEncoder(c.vocab_size, c.max_len, c.d_model, c.num_heads, c.d_ff,
                                        c.text_layers, c.dropout)
        self.text_proj = nn.Linear(c.d_model, c.embed_dim, bias=False)
        self.log_inv_temperature = nn.Parameter(torch.tensor(math.log(1 / c.temperature)))

    def temperature(self) -> torch.Tensor:
        """``tau = exp(-log_inv_temperature)``, never below ``config.min_temperature`` (0-d tensor)."""
        top = math.log(1 / self.config.min_temperature)
        return torch.exp(-self.log_inv_temperature.clamp(max=top))

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        """Unit image embeddings ``(B, embed_dim)`` of images ``(B, C, H, W)`` (chapter 6)."""
        return F.normalize(self.image_proj(self.image_encoder(images)), dim=-1)   # (B, embed_dim)

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        """Unit text embeddings ``(B, embed_dim)`` of token ids ``(B, L)`` (chapter 6)."""
        return F.normalize(self.text_proj(self.text_encoder(ids)), dim=-1)        # (B, embed_dim)

    def forward(self, images: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Logits ``(B_i, B_t)``: ``u_i . v_j / tau`` (chapter 6)."""
        return self.encode_image(images) @ self.encode_text(ids).T / self.temperature()

    def loss(self, images: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """:func:`clip_loss` of ``B`` matching pairs (image ``i`` with text ``i``)."""
        return clip_loss(self.encode_image(images), self.encode_text(ids), self.temperature())
