"""Where the book shows each core concept four ways: formula, code, diagram, words.

The source documents' point is that every idea should be seen as a formula,
as code, as a diagram and in words. This registry records, for each core
concept the book teaches, the section of the book that holds each of the four;
``tests/book/test_four_ways.py`` opens the chapter's ``.md``, finds the
section and checks that it really contains:

- ``formula``: a ``$$ … $$`` display formula that matches ``Concept.formula_has``;
- ``code``: a code cell that calls every name in ``Concept.calls``, each of
  which must resolve, through the chapter's own ``from course_lib… import``
  lines, to the ``course_lib`` object named in ``Concept.functions``;
- ``diagram``: a ```` ```mermaid ```` fence whose labels carry both languages
  and name the concept (``Concept.terms``);
- ``words``: an English prose cell tagged ``en`` followed by its Chinese twin
  tagged ``zh``, the English one matching ``terms[0]`` and the Chinese one
  ``terms[1]``.

A section is named by ``Loc(page, anchor)``: ``page`` is the chapter's file
name without ``.md`` (``"ch05_transformer"``), and ``anchor`` is either a MyST
label written as ``"(ch02-projections)="`` or the English half of a heading
(``"The feed-forward network"`` for ``### The feed-forward network · 前馈网络``).
A section is that heading's own text, up to the next heading of any level, so
a subsection's content never counts for its parent.

Adding a concept: add an entry below and, if the book lacks one of the four,
write it (CONTRIBUTING.md, "Four representations").
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Loc", "Concept", "CONCEPTS", "KINDS"]

#: The four representations, in the order the tests report them.
KINDS = ("formula", "code", "diagram", "words")


@dataclass(frozen=True)
class Loc:
    """A section of the book: ``page`` (``book/<page>.md``) and a label ``"(x)="`` or an English heading."""

    page: str
    anchor: str

    def __post_init__(self):
        if not isinstance(self.page, str) or not self.page.startswith("ch"):
            raise ValueError(f"page must be a chapter file name like 'ch05_transformer', got {self.page!r}")
        if not isinstance(self.anchor, str) or not self.anchor.strip():
            raise ValueError(f"anchor must be a MyST label '(name)=' or a heading's English title, got {self.anchor!r}")


@dataclass(frozen=True)
class Concept:
    """One core concept and the four places the book shows it.

    Attributes:
        en, zh: the concept's name in both languages.
        formula, code, diagram, words: where each representation is (:class:`Loc`).
        formula_has: a regular expression the display formula must match.
        functions: dotted paths of the ``course_lib`` objects the code calls.
        calls: how the chapter's code calls them (``"scratch.feed_forward"``),
            one per function, in the same order.
        terms: ``(English regex, Chinese regex)`` the words (and, either one,
            the diagram) must contain; matched case-insensitively.
    """

    en: str
    zh: str
    formula: Loc
    code: Loc
    diagram: Loc
    words: Loc
    formula_has: str
    functions: tuple[str, ...]
    calls: tuple[str, ...]
    terms: tuple[str, str]

    def __post_init__(self):
        if len(self.functions) != len(self.calls) or not self.calls:
            raise ValueError(f"{self.en}: functions and calls must be non-empty and of equal length, "
                             f"got {len(self.functions)} and {len(self.calls)}")
        if any(not f.startswith("course_lib.") for f in self.functions):
            raise ValueError(f"{self.en}: functions must be dotted paths inside course_lib, got {self.functions}")


CH02, CH03, CH04, CH05, CH06 = ("ch02_worked_qkv", "ch03_multi_head", "ch04_positional_encoding",
                                "ch05_transformer", "ch06_vit")
CH07, CH08, CH09 = "ch07_bert", "ch08_gpt", "ch09_training_lm"

CONCEPTS: dict[str, Concept] = {
    "scaled_dot_product_attention": Concept(
        "scaled dot-product attention", "缩放点积注意力",
        formula=Loc(CH02, "The formula"), code=Loc(CH02, "The code"),
        diagram=Loc(CH02, "The formula"), words=Loc(CH02, "The formula"),
        formula_has=r"\\operatorname\{softmax\}.*\\sqrt\{d_k\}",
        functions=("course_lib.scratch.attention.scaled_dot_product_attention",),
        calls=("scaled_dot_product_attention",),
        terms=(r"dot product", r"点积|softmax")),
    "self_attention_projections": Concept(
        "self-attention projections W_Q, W_K, W_V", "自注意力的投影 W_Q、W_K、W_V",
        formula=Loc(CH02, "(ch02-projections)="), code=Loc(CH02, "(ch02-projections)="),
        diagram=Loc(CH02, "(ch02-projections)="), words=Loc(CH02, "(ch02-projections)="),
        formula_has=r"Q\s*=\s*X\s*W_Q.*K\s*=\s*X\s*W_K.*V\s*=\s*X\s*W_V",
        functions=("course_lib.scratch.multihead.multi_head_attention",),
        calls=("multi_head_attention",),
        terms=(r"project", r"投影")),
    "multi_head_attention": Concept(
        "multi-head attention", "多头注意力",
        formula=Loc(CH03, "The formula"), code=Loc(CH03, "Multi-head attention in code"),
        diagram=Loc(CH03, "A team of experts"), words=Loc(CH03, "A team of experts"),
        formula_has=r"\\operatorname\{MultiHead\}.*\\operatorname\{Concat\}",
        functions=("course_lib.scratch.multihead.multi_head_attention",),
        calls=("multi_head_attention",),
        terms=(r"\bheads?\b", r"头")),
    "positional_encoding": Concept(
        "positional encoding", "位置编码",
        formula=Loc(CH04, "The formula"), code=Loc(CH04, "The code"),
        diagram=Loc(CH04, "Attention does not see order"), words=Loc(CH04, "Attention does not see order"),
        formula_has=r"\\sin.*10000",
        functions=("course_lib.scratch.positional.sinusoidal_positional_encoding",),
        calls=("sinusoidal_positional_encoding",),
        terms=(r"position", r"位置")),
    "feed_forward": Concept(
        "position-wise feed-forward network", "逐位置前馈网络",
        formula=Loc(CH05, "The feed-forward network"), code=Loc(CH05, "The feed-forward network"),
        diagram=Loc(CH05, "The feed-forward network"), words=Loc(CH05, "The feed-forward network"),
        formula_has=r"\\operatorname\{FFN\}\(x\)\s*=\s*\\max\(0,",
        functions=("course_lib.scratch.layers.feed_forward",),
        calls=("scratch.feed_forward",),
        terms=(r"feed-forward", r"前馈网络")),
    "layer_norm": Concept(
        "layer normalisation", "层归一化",
        formula=Loc(CH05, "Residual connection and layer norm"), code=Loc(CH05, "Residual connection and layer norm"),
        diagram=Loc(CH05, "Residual connection and layer norm"), words=Loc(CH05, "Residual connection and layer norm"),
        formula_has=r"\\operatorname\{LayerNorm\}\(x\)\s*&?=\s*\\gamma",
        functions=("course_lib.scratch.layers.layer_norm",),
        calls=("scratch.layer_norm",),
        terms=(r"layer ?norm", r"层归一化")),
    "residual_connection": Concept(
        "residual connection", "残差连接",
        formula=Loc(CH05, "Residual connection and layer norm"), code=Loc(CH05, "Residual connection and layer norm"),
        diagram=Loc(CH05, "Residual connection and layer norm"), words=Loc(CH05, "Residual connection and layer norm"),
        formula_has=r"x \+ \\operatorname\{Sublayer\}\(x\)",
        functions=("course_lib.scratch.layers.encoder_layer",),
        calls=("scratch.encoder_layer",),
        terms=(r"residual", r"残差")),
    "masking": Concept(
        "masking: padding and causal", "掩码：填充掩码与因果掩码",
        formula=Loc(CH05, "Three masks"), code=Loc(CH05, "Three masks"),
        diagram=Loc(CH05, "Three masks"), words=Loc(CH05, "Three masks"),
        formula_has=r"M\^\{\\text\{pad\}\}.*M\^\{\\text\{causal\}\}",
        functions=("course_lib.scratch.masks.padding_mask_from_ids", "course_lib.scratch.masks.causal_mask"),
        calls=("padding_mask_from_ids", "causal_mask"),
        terms=(r"causal mask", r"因果掩码")),
    "encoder_layer": Concept(
        "encoder layer", "编码器层",
        formula=Loc(CH05, "Residual connection and layer norm"), code=Loc(CH05, "Residual connection and layer norm"),
        diagram=Loc(CH05, "The architecture"), words=Loc(CH05, "The architecture"),
        formula_has=r"\\operatorname\{MultiHead\}\(x, x, x;.*\\operatorname\{FFN\}\(x\)",
        functions=("course_lib.scratch.layers.encoder_layer",),
        calls=("scratch.encoder_layer",),
        terms=(r"encoder", r"编码器")),
    "decoder_layer": Concept(
        "decoder layer", "解码器层",
        formula=Loc(CH05, "The decoder layer"), code=Loc(CH05, "The decoder layer"),
        diagram=Loc(CH05, "The architecture"), words=Loc(CH05, "The decoder layer"),
        formula_has=r"M\^\{\\text\{causal\}\}.*\\operatorname\{MultiHead\}\(y, m, m",
        functions=("course_lib.scratch.layers.decoder_layer",),
        calls=("scratch.decoder_layer",),
        terms=(r"decoder", r"解码器")),
    "vit_patching": Concept(
        "ViT patching", "ViT 的图像分块",
        formula=Loc(CH06, "Patch arithmetic"), code=Loc(CH06, "Patch embedding"),
        diagram=Loc(CH06, "An image as a sequence of patches"), words=Loc(CH06, "An image as a sequence of patches"),
        formula_has=r"N = \\frac\{H\}\{P\}",
        functions=("course_lib.models.vit.patchify",),
        calls=("patchify",),
        terms=(r"patch", r"块")),
    "bert_mlm": Concept(
        "BERT's masked language model", "BERT 的掩码语言模型",
        formula=Loc(CH07, "BERT: learning by filling in blanks"), code=Loc(CH07, "BERT: learning by filling in blanks"),
        diagram=Loc(CH07, "BERT: learning by filling in blanks"), words=Loc(CH07, "BERT: learning by filling in blanks"),
        formula_has=r"\\mathcal\{L\}_\{\\text\{MLM\}\}",
        functions=("course_lib.models.bert.mask_tokens",),
        calls=("mask_tokens",),
        terms=(r"mask", r"掩码")),
    "gpt_causal_lm": Concept(
        "GPT's causal language model", "GPT 的因果语言模型",
        formula=Loc(CH08, "GPT: predicting the next token"), code=Loc(CH08, "One block, in code"),
        diagram=Loc(CH08, "GPT: predicting the next token"), words=Loc(CH08, "GPT: predicting the next token"),
        formula_has=r"\\prod_\{t=1\}\^\{T\} p_\\theta\(x_t \\mid",
        functions=("course_lib.labs.language_model.build_gpt",),
        calls=("lm.build_gpt",),
        terms=(r"causal", r"因果")),
    "muon": Concept(
        "Muon: orthogonalised momentum", "Muon：正交化的动量",
        formula=Loc(CH09, "(ch09-muon)="), code=Loc(CH09, "(ch09-muon)="),
        diagram=Loc(CH09, "(ch09-muon)="), words=Loc(CH09, "(ch09-muon)="),
        formula_has=r"M_t = \\mu M_\{t-1\} \+ G_t.*U V\^\\top",
        functions=("course_lib.training.muon.newton_schulz", "course_lib.training.muon.Muon"),
        calls=("muon_lib.newton_schulz", "muon_lib.Muon"),
        terms=(r"orthogonal", r"正交")),
    "weight_averaging": Concept(
        "Averaging the weights: an exponential moving average", "权重平均：指数滑动平均",
        formula=Loc(CH09, "(ch09-ema)="), code=Loc(CH09, "(ch09-ema)="),
        diagram=Loc(CH09, "(ch09-ema)="), words=Loc(CH09, "(ch09-ema)="),
        formula_has=r"\\bar W_t = \\beta\\, \\bar W_\{t-1\} \+ \(1 - \\beta\)\\, W_t",
        functions=("course_lib.training.averaging.ExponentialAverage",),
        calls=("ExponentialAverage",),
        terms=(r"moving average", r"滑动平均")),
}
"""The core concepts, by key. ``tests/book/test_four_ways.py`` checks that all
fifteen core concepts are here and that every representation is where
its entry says."""
