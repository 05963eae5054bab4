"""Errata of chapter 6 (Vision Transformer)."""

from __future__ import annotations

import warnings
from functools import lru_cache

import torch

from ...display import Table, fmt
from ...analysis.sizes import CONFIGS, build_on_meta, count_parameters
from .source import SourceVisionTransformer
from .worked import EXAMPLES
from .._errata import ROUNDING_LABELS, Erratum, rounds_to

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

    def yes_no(ok):
        return "yes · 是" if ok else "no · 否"

    def same_rows(x):
        return yes_no(torch.allclose(x, x[:1].expand_as(x), atol=1e-6))
    return Table(["question (4 random images, small config) · 问题（4 张随机图像，小配置）",
                  "as printed · 原始资料中的代码", "sequence-first input · 按序列优先输入"], [
        ["do all 4 images get the same logits? · 4 张图像的 logits 完全相同吗？",
         same_rows(as_printed), same_rows(fixed)],
        ["do new pixels change the logits? · 换一批像素后 logits 改变吗？",
         yes_no(not torch.allclose(as_printed, source_vit_logits(other), atol=1e-6)),
         yes_no(not torch.allclose(fixed, source_vit_logits(other, sequence_first=True), atol=1e-6))],
    ])


@lru_cache(maxsize=None)
def _source_default_params() -> int:
    return count_parameters(source_vit(meta=True))


def _mlp_evidence() -> Table:
    vit_b = count_parameters(build_on_meta("ViT-B/16"))
    d = _mlp_details()
    return Table(["model · 模型", "MLP width · MLP 宽度", "activation, norm · 激活、归一化",
                  "parameters · 参数"], [
        ["source's VisionTransformer() · 原始资料中的代码默认值", d["torch_ff"], "ReLU, post-LN",
         f"{_source_default_params():,}"],
        ["ViT-B/16 (paper Table 1 · 论文表 1)", d["vit_ff"], "GELU, pre-LN", f"{vit_b:,}"],
    ])


def _params_rows():
    steps_fn, data = EXAMPLES["vit_table"]
    exact = steps_fn()["params_m"]
    return [(name, printed, float(x), rounds_to(float(x), printed))
            for name, printed, x in zip(data["models"], data["claims"]["params_m"].printed, exact)]


def _params_evidence() -> Table:
    rows = [[name, f"{printed}M", f"{fmt(x, 3)}M",
             f"✓ {ROUNDING_LABELS[how]}" if how else "✗ no rounding gives it · 任何舍入都得不到"]
            for name, printed, x, how in _params_rows()]
    return Table(["model · 模型", "source · 原始资料", "counted · 计数", "a correct rounding? · 是正确的舍入吗？"],
                 rows, "published figures against exact counts · 公开数字与精确计数")


def _params_details():
    rows = _params_rows()
    ok = [(n, p) for n, p, _, how in rows if how]
    bad = [(n, p, x) for n, p, x, how in rows if not how]
    if len(bad) != 1:
        raise RuntimeError(f"expected one published figure that no rounding gives, got {bad}")
    name, printed, x = bad[0]
    vit_l = CONFIGS[name][1]
    return {"ok": " and ".join(f"{p}M" for _, p in ok), "ok_zh": " 和 ".join(f"{p}M" for _, p in ok),
            "ok_models": " and ".join(n for n, _ in ok), "ok_models_zh": "、".join(n for n, _ in ok),
            "name": name, "printed": printed, "l": fmt(x, 1), "gap": fmt(float(printed) - x, 1),
            "pct": fmt(100 * (float(printed) - x) / x, 1),
            "layers": str(vit_l["num_layers"]), "width": str(vit_l["d_model"]), "mlp": str(vit_l["d_ff"]),
            "patch": f"{vit_l['patch_size']} × {vit_l['patch_size']}",
            "image": f"{vit_l['image_size']} × {vit_l['image_size']}", "classes": str(vit_l["num_classes"])}


def _seq_len() -> int:
    """Tokens per image the source's model feeds its encoder: the patches plus [CLS]."""
    model = source_vit(meta=True)
    return int(model.pos_embed.shape[1])


def _batch_first_details():
    return {"L": str(_seq_len())}


def _defaults() -> dict:
    import inspect
    src = inspect.signature(SourceVisionTransformer).parameters
    layer = inspect.signature(torch.nn.TransformerEncoderLayer).parameters
    return {"d_model": src["d_model"].default, "nhead": src["nhead"].default,
            "num_layers": src["num_layers"].default,
            "torch_ff": layer["dim_feedforward"].default}


def _mlp_details():
    from ...analysis.sizes import CONFIGS
    d = _defaults()
    return {"d_model": str(d["d_model"]), "nhead": str(d["nhead"]), "num_layers": str(d["num_layers"]),
            "torch_ff": str(d["torch_ff"]), "vit_ff": str(CONFIGS["ViT-B/16"][1]["d_ff"]),"ours": fmt(_source_default_params() / 1e6, 1),
            "vit_b": fmt(count_parameters(build_on_meta("ViT-B/16")) / 1e6, 1)}


ERRATA = [
    Erratum(
        "ch06-params", CH06, "vit_table", "params_m",
        "the parameter column quotes the published figures; {name}'s {printed}M is not a rounding of its {l}M",
        "参数列引用的是公开数字；{name} 的 {printed}M 并不是其 {l}M 的舍入",
        "The parameter column quotes published, rounded figures, and a published figure counts as "
        "right when some correct rounding of the exact count gives it (course_lib.chapters._errata."
        "rounds_to: to nearest with ties to even, toward zero or away from zero). {ok} for {ok_models} pass: they "
        "are the exact counts rounded toward zero. "
        "{printed}M for {name} is also the paper's figure, but the architecture of that table "
        "({layers} layers, width {width}, MLP {mlp}, {patch} patches, {image} images, {classes} "
        "classes) has {l}M parameters: {gap}M ({pct}%) fewer, and no rounding gives {printed}. "
        "The paper does not say what its count includes. The difference is too small to change "
        "the comparison, and the source quotes the paper faithfully: ✓, with this note.",
        "参数列引用的是公开的、取整后的数字；只要精确计数经某种正确的舍入（course_lib.chapters._errata."
        "rounds_to：四舍六入五成双、舍去或进一）能得到它，公开数字就算正确。{ok_models_zh} 的 {ok_zh} 通过了："
        "它们是精确计数舍去小数的结果。{name} 的 {printed}M 同样来自论文，"
        "但该表中的结构（{layers} 层、宽度 {width}、MLP {mlp}、{patch} 的块、{image} 的图像、{classes} 类）"
        "只有 {l}M 个参数：少了 {gap}M（{pct}%），任何舍入都得不到 {printed}。论文没有说明它的计数包含了"
        "什么。这个差别很小，不影响比较的结论；原始资料如实引用了论文，因此判为 ✓，并附上这条说明。",
        _params_details, evidence=_params_evidence, practice="ch06-ex-count", kind="note"),
    Erratum(
        "ch06-batch-first", CH06, None, None,
        "the source's VisionTransformer attends across the batch, not across patches",
        "原始资料的 VisionTransformer 在批次之间而不是在块之间做注意力",
        "nn.TransformerEncoderLayer(d_model, nhead) expects its input as (sequence, batch, "
        "d_model) unless it is built with `batch_first=True`, but the source passes "
        "(B, {L}, d_model). The encoder therefore treats the {L} tokens as the batch and the "
        "B images as the sequence: tokens of one image never attend to each other, and "
        "x[:, 0] picks the [CLS] tokens of all images — which are identical copies of one "
        "parameter. The logits are the same for every image and do not depend on the pixels "
        "at all. Fix: pass `batch_first=True` to nn.TransformerEncoderLayer.",
        "nn.TransformerEncoderLayer(d_model, nhead) 默认输入形状为 (序列, 批次, d_model)，"
        "除非构造时传入 `batch_first=True`；而原始资料传入的是 (B, {L}, d_model)。于是编码器把 {L} "
        "个词元当作批次、把 B 张图像当作序列：同一张图像的词元之间从不互相注意，x[:, 0] 取出的是"
        "所有图像的 [CLS] 词元——它们都是同一个参数的拷贝。每张图像的 logits 都相同，完全不依赖于"
        "像素。修正：给 nn.TransformerEncoderLayer 传入 `batch_first=True`。",
        _batch_first_details, evidence=_batch_first_evidence),
    Erratum(
        "ch06-code-size", CH06, None, None,
        "the source's code with its defaults is not ViT-Base",
        "原始资料中的代码的默认配置并不是 ViT-Base",
        "The defaults (d_model = {d_model}, {nhead} heads, {num_layers} layers) look like ViT-Base, but "
        "nn.TransformerEncoderLayer brings PyTorch's own defaults: an MLP of width {torch_ff} "
        "instead of ViT's {vit_ff}, ReLU instead of GELU, and LayerNorm after each sub-layer "
        "instead of before. The model has {ours}M parameters, not the {vit_b}M of ViT-B/16 "
        "that the table beside it describes. Pass `dim_feedforward={vit_ff}`, `activation='gelu'` "
        "and `norm_first=True` (and `batch_first=True`) to build ViT-Base.",
        "默认参数（d_model = {d_model}、{nhead} 个头、{num_layers} 层）看起来像 ViT-Base，但 "
        "nn.TransformerEncoderLayer 带来了 PyTorch 自己的默认值：MLP 宽度为 {torch_ff} 而不是 ViT 的 "
        "{vit_ff}，激活函数为 ReLU 而不是 GELU，LayerNorm 放在每个子层之后而不是之前。这个模型有 "
        "{ours}M 个参数，而不是旁边表格所描述的 ViT-B/16 的 {vit_b}M。要构建 ViT-Base，需传入 "
        "`dim_feedforward={vit_ff}`、`activation='gelu'`、`norm_first=True`（以及 `batch_first=True`）。",
        _mlp_details, evidence=_mlp_evidence, practice="ch06-ex-count"),
]
