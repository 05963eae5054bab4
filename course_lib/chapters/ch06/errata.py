"""Errata of chapter 6 (Vision Transformer)."""

from __future__ import annotations

import warnings
from functools import lru_cache

import torch

from ...display import Table, fmt
from ...analysis.sizes import build_on_meta, count_parameters
from .source import SourceVisionTransformer
from .worked import EXAMPLES
from .._errata import Erratum

__all__ = ["ERRATA", "source_vit", "source_vit_logits"]

CH06 = "book/ch06_vit"

#: A small configuration of the source's class, cheap enough to run on a CPU.
SMALL = dict(img_size=32, patch_size=8, num_classes=10, d_model=64, nhead=4, num_layers=2)


def source_vit(meta: bool = False, **kwargs) -> SourceVisionTransformer:
    """The source's ``VisionTransformer`` (seeded, eval mode; on ``meta`` to count only).

    Construction warnings from PyTorch (nested tensors) are silenced. Chapter 6.
    """
    with warnings.catch_warnings(), torch.random.fork_rng():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        if meta:
            with torch.device("meta"):
                return SourceVisionTransformer(**kwargs)
        return SourceVisionTransformer(**kwargs).eval()


@torch.no_grad()
def source_vit_logits(images: torch.Tensor, sequence_first: bool = False) -> torch.Tensor:
    """Logits of the small source model (``SMALL``) for ``images`` ``(B, 3, 32, 32)``.

    ``sequence_first=True`` runs the same weights with the input transposed
    to the ``(L, B, d_model)`` layout its encoder expects: the fix. Chapter 6.
    """
    model = source_vit(**SMALL)
    if not sequence_first:
        return model(images)
    x = model.patch_embed(images).flatten(2).transpose(1, 2)
    x = torch.cat((model.cls_token.expand(len(images), -1, -1), x), dim=1) + model.pos_embed
    x = model.transformer(x.transpose(0, 1)).transpose(0, 1)       # (L, B, D) in and out
    return model.head(x[:, 0])


def _batch_first_evidence() -> Table:
    g = torch.Generator().manual_seed(0)
    images = torch.randn(4, 3, 32, 32, generator=g)
    other = torch.randn(4, 3, 32, 32, generator=g)
    as_printed, fixed = source_vit_logits(images), source_vit_logits(images, sequence_first=True)

    def same_rows(x):
        return str(bool(torch.allclose(x, x[:1].expand_as(x), atol=1e-6)))
    return Table(["check (4 random images, small config) · 检查（4 张随机图像，小配置）",
                  "as printed · 原文代码", "sequence-first input · 按序列优先输入"], [
        ["all 4 images get the same logits · 4 张图像的 logits 完全相同",
         same_rows(as_printed), same_rows(fixed)],
        ["new pixels change the logits · 换一批像素后 logits 改变",
         str(not torch.allclose(as_printed, source_vit_logits(other), atol=1e-6)),
         str(not torch.allclose(fixed, source_vit_logits(other, sequence_first=True), atol=1e-6))],
    ])


@lru_cache(maxsize=None)
def _source_default_params() -> int:
    return count_parameters(source_vit(meta=True))


def _mlp_evidence() -> Table:
    vit_b = count_parameters(build_on_meta("ViT-B/16"))
    return Table(["model · 模型", "MLP width · MLP 宽度", "activation, norm · 激活、归一化",
                  "parameters · 参数"], [
        ["source's VisionTransformer() · 原文代码默认值", "2048", "ReLU, post-LN",
         f"{_source_default_params():,}"],
        ["ViT-B/16 (paper Table 1 · 论文表 1)", "3072", "GELU, pre-LN", f"{vit_b:,}"],
    ])


def _params_details():
    p = EXAMPLES["vit_table"][0]()["params_m"]
    return {"r50": fmt(p[0], 1), "b": fmt(p[1], 1), "l": fmt(p[2], 1),
            "gap": fmt(307 - p[2], 1)}


def _mlp_details():
    return {"ours": fmt(_source_default_params() / 1e6, 1),
            "vit_b": fmt(count_parameters(build_on_meta("ViT-B/16")) / 1e6, 1)}


ERRATA = [
    Erratum(
        "ch06-params", CH06, "vit_table", "params_m",
        "the parameter column truncates, and ViT-Large has 304M, not 307M",
        "参数列是截断的，ViT-Large 是 304M 而不是 307M",
        "Counted exactly, ResNet-50 has {r50}M parameters and ViT-B/16 {b}M: the source "
        "prints 25M and 86M, cutting off the decimals instead of rounding (the ViT paper's "
        "Table 1 does the same for ViT-Base). Its 307M for ViT-Large is the figure of the ViT "
        "paper's Table 1, but the architecture of that table (24 layers, width 1024, MLP 4096, "
        "16 × 16 patches, 224 × 224 images, 1000 classes) has {l}M parameters, {gap}M fewer; "
        "the paper does not say what its count includes. The differences are around 1%, too "
        "small to matter for the comparison.",
        "精确计数时，ResNet-50 有 {r50}M 个参数，ViT-B/16 有 {b}M 个：原文印的 25M 和 86M "
        "是直接舍去小数，而不是四舍五入（ViT 论文表 1 对 ViT-Base 也是这样）。原文 ViT-Large 的 "
        "307M 来自 ViT 论文表 1，但该表中的结构（24 层、宽度 1024、MLP 4096、16 × 16 的块、"
        "224 × 224 的图像、1000 类）只有 {l}M 个参数，少了 {gap}M；论文没有说明它的计数包含了什么。"
        "这些差别约为 1%，不影响比较的结论。",
        _params_details, practice="ch06-ex-count"),
    Erratum(
        "ch06-batch-first", CH06, None, None,
        "the source's VisionTransformer attends across the batch, not across patches",
        "原文的 VisionTransformer 在批次之间而不是在块之间做注意力",
        "nn.TransformerEncoderLayer(d_model, nhead) expects its input as (sequence, batch, "
        "d_model) unless it is built with batch_first=True, but the source passes "
        "(B, 197, d_model). The encoder therefore treats the 197 tokens as the batch and the "
        "B images as the sequence: tokens of one image never attend to each other, and "
        "x[:, 0] picks the [CLS] tokens of all images — which are identical copies of one "
        "parameter. The logits are the same for every image and do not depend on the pixels "
        "at all. Fix: pass batch_first=True to nn.TransformerEncoderLayer.",
        "nn.TransformerEncoderLayer(d_model, nhead) 默认输入形状为 (序列, 批次, d_model)，"
        "除非构造时传入 batch_first=True；而原文传入的是 (B, 197, d_model)。于是编码器把 197 "
        "个词元当作批次、把 B 张图像当作序列：同一张图像的词元之间从不互相注意，x[:, 0] 取出的是"
        "所有图像的 [CLS] 词元——它们都是同一个参数的拷贝。每张图像的 logits 都相同，完全不依赖于"
        "像素。修正：给 nn.TransformerEncoderLayer 传入 batch_first=True。",
        evidence=_batch_first_evidence),
    Erratum(
        "ch06-code-size", CH06, None, None,
        "the source's code with its defaults is not ViT-Base",
        "原文代码的默认配置并不是 ViT-Base",
        "The defaults (d_model = 768, 12 heads, 12 layers) look like ViT-Base, but "
        "nn.TransformerEncoderLayer brings PyTorch's own defaults: an MLP of width 2048 "
        "instead of ViT's 3072, ReLU instead of GELU, and LayerNorm after each sub-layer "
        "instead of before. The model has {ours}M parameters, not the {vit_b}M of ViT-B/16 "
        "that the table beside it describes. Pass dim_feedforward=3072, activation='gelu' "
        "and norm_first=True (and batch_first=True) to build ViT-Base.",
        "默认参数（d_model = 768、12 个头、12 层）看起来像 ViT-Base，但 "
        "nn.TransformerEncoderLayer 带来了 PyTorch 自己的默认值：MLP 宽度为 2048 而不是 ViT 的 "
        "3072，激活函数为 ReLU 而不是 GELU，LayerNorm 放在每个子层之后而不是之前。这个模型有 "
        "{ours}M 个参数，而不是旁边表格所描述的 ViT-B/16 的 {vit_b}M。要构建 ViT-Base，需传入 "
        "dim_feedforward=3072、activation='gelu'、norm_first=True（以及 batch_first=True）。",
        _mlp_details, evidence=_mlp_evidence, practice="ch06-ex-count"),
]
