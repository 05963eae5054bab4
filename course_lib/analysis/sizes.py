"""How big are the famous Transformers, and where do their parameters go?

Chapter 7 (``ch07_bert``) compares ViT, BERT and GPT-2 by size; chapter
6 (``ch06_vit``) asks what a ViT forward pass costs, next to ResNet-50. The published
configurations are kept here as data, each with its source.
:func:`build_on_meta` builds the book's own model from one of them on
PyTorch's ``meta`` device, where tensors have a shape but no storage, so even
ViT-L/16 (300 M parameters) costs no memory; :func:`count_parameters` and
:func:`parameter_breakdown` count it, and :func:`vit_flops` derives the
multiply-adds by hand.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import check_choice, check_positive_int
from ..models.bert import BERT
from ..models.gpt import GPT
from ..models.vit import ViT
from ..models.resnet import ResNet

__all__ = ["CONFIGS", "PUBLISHED", "build_on_meta", "count_parameters",
           "parameter_breakdown", "vit_flops"]

CONFIGS = {
    # Dosovitskiy et al. (2021), "An Image is Worth 16x16 Words", Table 1:
    # Layers, Hidden size D, MLP size, Heads; 224 x 224 ImageNet images, 1000 classes.
    "ViT-B/16": ("vit", dict(image_size=224, patch_size=16, in_channels=3, num_classes=1000,
                             d_model=768, num_heads=12, num_layers=12, d_ff=3072)),
    "ViT-L/16": ("vit", dict(image_size=224, patch_size=16, in_channels=3, num_classes=1000,
                             d_model=1024, num_heads=16, num_layers=24, d_ff=4096)),
    # He et al. (2016), "Deep Residual Learning", Table 1: ResNet-50 has 3, 4, 6, 3
    # bottleneck blocks; stride in the 3x3 convolutions as in torchvision's resnet50.
    "ResNet-50": ("resnet", dict(blocks=(3, 4, 6, 3), num_classes=1000, in_channels=3)),
    # Devlin et al. (2019), "BERT", section 3: L = 12, H = 768, A = 12, FFN 4H;
    # vocabulary, positions and segments as in the released bert-base-uncased config.
    "BERT-base": ("bert", dict(vocab_size=30522, d_model=768, num_heads=12, num_layers=12,
                               d_ff=3072, max_len=512, type_vocab_size=2)),
    # Radford et al. (2019), "Language Models are Unsupervised Multitask Learners",
    # Table 2 (12 layers, d_model 768) and the released checkpoint's config
    # (vocabulary 50257, context 1024, 12 heads, tied head).
    "GPT-2 small": ("gpt", dict(vocab_size=50257, d_model=768, num_heads=12, num_layers=12,
                                d_ff=3072, max_len=1024)),
}
"""Name -> (family, keyword arguments of the book's ViT / ResNet / BERT / GPT)."""

PUBLISHED = {
    "ViT-B/16": {"params": 86e6, "gflops": 17.6,
                 "source": "ViT paper Table 1 (86M); torchvision vit_b_16 card (17.56 GFLOPS)"},
    "ViT-L/16": {"params": 307e6, "gflops": 61.6,
                 "source": "ViT paper Table 1 (307M); torchvision vit_l_16 card (61.55 GFLOPS)"},
    "ResNet-50": {"params": 25.6e6, "gflops": 4.1,
                  "source": "torchvision resnet50 card (25,557,032 parameters, 4.09 GFLOPS); "
                            "He et al. 2016 Table 1 prints 3.8e9 FLOPs for the original design"},
    "BERT-base": {"params": 110e6, "source": "BERT paper, section 3 (110M; with the 0.6M "
                                             "pooler, which the book keeps in BertClassifier)"},
    "GPT-2 small": {"params": 124e6, "source": "openai/gpt-2 README: the model the paper "
                                               "calls 117M has 124M parameters"},
}
"""The sizes the papers report, rounded as they print them."""

_FAMILIES = {"vit": ViT, "resnet": ResNet, "bert": BERT, "gpt": GPT}


def build_on_meta(name: str) -> nn.Module:
    """The book's model for a published configuration, on the ``meta`` device (chapter 7).

    Args:
        name: a key of :data:`CONFIGS`, e.g. ``"ViT-B/16"``.

    Returns:
        An ``nn.Module`` whose parameters have shapes but no data: it can be
        counted, not run.
    """
    family, kwargs = CONFIGS[check_choice(name, "name", CONFIGS)]
    with torch.device("meta"):
        return _FAMILIES[family](**kwargs)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable numbers in ``model``; a tied matrix counts once (chapter 7).

    Args:
        model: any ``nn.Module`` (e.g. from :func:`build_on_meta`).
    """
    return sum(p.numel() for p in model.parameters())


# Parameter-name fragments of each group; the first matching group wins, so
# BERT's emb_norm is a norm, and anything unmatched (ViT's head, an untied
# LM head, BERT's pooler and classifier) is "head".
_GROUPS = (("attention", (".self_attn.",)),
           ("FFN", (".linear1.", ".linear2.")),
           ("norms", ("norm",)),
           ("embeddings", ("tok_emb", "pos_emb", "seg_emb", "cls_token", "patch_embed")))


def parameter_breakdown(model: nn.Module) -> dict[str, int]:
    """Where the parameters go: the bars of chapter 7's chart.

    Args:
        model: the book's :class:`~course_lib.models.vit.ViT`,
            :class:`~course_lib.models.bert.BERT` or :class:`~course_lib.models.gpt.GPT`
            (or a module wrapping one).

    Returns:
        ``{"embeddings", "attention", "FFN", "norms", "head": count}``, in that
        order; the counts sum to :func:`count_parameters`. "embeddings"
        includes ViT's patch projection; a head tied to the token embeddings
        (GPT) adds nothing to "head".
    """
    counts = dict.fromkeys(("embeddings", "attention", "FFN", "norms", "head"), 0)
    for name, p in model.named_parameters():
        group = next((g for g, keys in _GROUPS if any(k in f".{name}" for k in keys)), "head")
        counts[group] += p.numel()
    return counts


def vit_flops(image_size: int, patch_size: int, in_channels: int, num_classes: int,
              d_model: int, num_layers: int, d_ff: int,
              num_heads: int | None = None) -> dict[str, int]:
    """Multiply-adds of one ViT forward pass on one image, term by term (chapter 6).

    With ``N = (image_size / P)^2`` patches and ``T = N + 1`` tokens:

    ====================  ===============================
    patch embedding       ``N * (P * P * C) * d_model``
    Q, K, V projections   ``L * 3 * T * d_model^2``
    Q K^T                 ``L * T^2 * d_model``  (all heads together)
    A V                   ``L * T^2 * d_model``
    output projection     ``L * T * d_model^2``
    MLP                   ``L * 2 * T * d_model * d_ff``
    head                  ``d_model * num_classes``  (on [CLS] only)
    ====================  ===============================

    One multiply-add counts as one FLOP, the convention of the "GFLOPS"
    columns of torchvision and timm. Biases, softmax, LayerNorm, GELU and
    residual additions cost ``O(T * d_model)`` per layer and are left out.

    Args:
        image_size, patch_size, in_channels, num_classes, d_model,
        num_layers, d_ff: as for :class:`~course_lib.models.vit.ViT`, so
        that ``vit_flops(**CONFIGS["ViT-B/16"][1])`` works.
        num_heads: accepted for the same reason and ignored: splitting
            ``d_model`` into heads does not change the count.

    Returns:
        ``{term: multiply-adds}`` for the rows above plus ``"total"``.
    """
    P = check_positive_int(patch_size, "patch_size")
    if check_positive_int(image_size, "image_size") % P:
        raise ValueError(f"image_size = {image_size} must be divisible by patch_size = {P}")
    N = (image_size // P) ** 2
    T, D, L = N + 1, d_model, num_layers
    terms = {
        "patch embedding": N * P * P * in_channels * D,
        "QKV projections": L * 3 * T * D * D,
        "QK^T": L * T * T * D,
        "AV": L * T * T * D,
        "output projection": L * T * D * D,
        "MLP": L * 2 * T * D * d_ff,
        "head": D * num_classes,
    }
    terms["total"] = sum(terms.values())
    return terms
