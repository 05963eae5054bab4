"""Chapter 8's source code (``ch08_gpt``): a faithful small copy of the source documents'
GPT generator, as printed, with the tutorial ``PositionalEncoding`` it calls.

:mod:`course_lib.chapters.ch08.errata` runs it and shows, computed, what goes wrong.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["SourcePositionalEncoding", "SourceGPTGenerator"]


# ---------------------------------------------------------------- GPT (source 003, §4.1)

class SourcePositionalEncoding(nn.Module):
    """The usual PyTorch-tutorial ``PositionalEncoding`` the source's code calls but
    does not define: it adds ``pe[:x.size(0)]``, i.e. it expects ``(L, B, d_model)``."""

    def __init__(self, d_model, max_len=5000):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:x.size(0)]


class SourceGPTGenerator(nn.Module):
    """The source's ``GPTGenerator``, copied as printed (only the class name changed)."""

    def __init__(self, vocab_size, d_model, nhead, num_layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.pos_encoding = SourcePositionalEncoding(d_model)
        self.transformer = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d_model, nhead),
            num_layers
        )
        self.output_proj = nn.Linear(d_model, vocab_size)

    def forward(self, input_ids):
        seq_len = input_ids.size(1)
        mask = torch.triu(torch.ones(seq_len, seq_len), diagonal=1).bool()
        x = self.embedding(input_ids) + self.pos_encoding(input_ids)
        x = self.transformer(x, memory=None, tgt_mask=mask)
        logits = self.output_proj(x)
        return logits
