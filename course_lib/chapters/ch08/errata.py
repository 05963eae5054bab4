"""Errata of chapter 8 (GPT): an error in the source documents' *code*.

The erratum runs a faithful small copy of the source's code
(:mod:`course_lib.chapters.ch08.source`) and shows, computed, what goes wrong
(``evidence``); the chapter shows a working version. Its id keeps the prefix
``ch07-`` it was created under.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from ...display import Table
from .._errata import Erratum
from .source import SourceGPTGenerator

__all__ = ["ERRATA", "run_source_gpt"]

CH08 = "book/ch08_gpt"


def _error(fn) -> str:
    """``ok`` and the output shape, or the exception ``fn()`` raises, as text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
        return f"ok, shape {tuple(out.shape)}"
    except Exception as e:  # the point is to show the error
        return f"{type(e).__name__}: {e}"


def run_source_gpt(B: int = 2, L: int = 7, d_model: int = 16) -> Table:
    """Run the source's GPT step by step; each row shows what one step does (chapter 8)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SourceGPTGenerator(50, d_model, 2, 2).eval()
    ids = torch.randint(50, (B, L))
    x = m.embedding(ids)
    mask = torch.triu(torch.ones(L, L), diagonal=1).bool()
    fixed_pe = lambda: x + m.pos_encoding.pe[:L, 0]          # positions 0..L-1, added to x
    batch_first = nn.TransformerDecoder(nn.TransformerDecoderLayer(d_model, 2, batch_first=True), 1)
    rows = [
        [f"model(input_ids), input_ids {tuple(ids.shape)}", _error(lambda: m(ids))],
        ["1. pos_encoding(input_ids)", _error(lambda: m.pos_encoding(ids))],
        [f"2. transformer(x, memory=None, tgt_mask), x {tuple(x.shape)} = (B, L, d)",
         _error(lambda: m.transformer(fixed_pe(), memory=None, tgt_mask=mask))],
        ["3. the same, the layer built batch-first · 把层改为 batch-first",
         _error(lambda: batch_first(fixed_pe(), memory=None, tgt_mask=mask))],
    ]
    return Table(["call · 调用", "result · 结果"], rows,
                 f"the source's GPTGenerator, B = {B}, L = {L}, d_model = {d_model}")


ERRATA = [
    Erratum(
        "ch07-gpt-decoder", CH08, None, None,
        "the source's GPT cannot run: positions from token ids, a (L, B) layer fed (B, L), "
        "and memory=None",
        "原始资料的 GPT 无法运行：用词元 id 算位置编码、把 (B, L) 输入喂给 (L, B) 的层，以及 memory=None",
        "Three separate errors. (1) self.pos_encoding(input_ids) adds the encoding to the token "
        "ids, integers of shape (B, L), instead of using the positions 0…L−1 and adding the "
        "result to the embeddings; the tutorial encoding also indexes its table by the first "
        "dimension, which here is the batch. (2) nn.TransformerDecoderLayer expects "
        "(L, B, d_model) unless `batch_first=True`, so the (L, L) causal mask does not fit. "
        "(3) nn.TransformerDecoder is the encoder–decoder decoder: every layer cross-attends to "
        "memory, the encoder's output, and memory=None fails. A decoder-only model has no "
        "encoder and no cross-attention: it is a stack of self-attention blocks with a causal "
        "mask (nn.TransformerEncoder with mask=causal, or course_lib.models.GPT).",
        "三处独立的错误。(1) self.pos_encoding(input_ids) 把位置编码加在词元 id（形状为 (B, L) 的"
        "整数）上，而不是用位置 0…L−1 算出编码再加到嵌入上；教程里的位置编码还按第一个维度取表，"
        "而这里第一个维度是批大小。(2) nn.TransformerDecoderLayer 默认输入是 (L, B, d_model)，"
        "除非 `batch_first=True`，所以 (L, L) 的因果掩码对不上。(3) nn.TransformerDecoder 是编码器–"
        "解码器结构里的解码器：每一层都要对 memory（编码器的输出）做交叉注意力，memory=None 直接"
        "报错。只有解码器的模型没有编码器，也没有交叉注意力：它就是一叠带因果掩码的自注意力块"
        "（nn.TransformerEncoder 加 mask=因果掩码，或 course_lib.models.GPT）。",
        evidence=run_source_gpt),
]
