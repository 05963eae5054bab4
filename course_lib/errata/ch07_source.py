"""Faithful small copies of the source documents' chapter-7 code, and runs that show
what goes wrong (used by the errata of ``course_lib.errata.ch07`` and chapter 7,
``ch07_bert_gpt``). Kept apart so that importing ``course_lib.errata`` does not import torch.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter

import numpy as np
import torch
from torch import nn

from ..display import Table

__all__ = ["SourceGPTGenerator", "SourceBERTClassifier", "SourceTextProcessor",
           "run_source_gpt", "run_source_bert_classifier", "run_source_tokenizer",
           "SOURCE_SAMPLE_TEXTS", "SOURCE_TEST_TEXTS"]


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
    """Run the source's GPT step by step; each row shows what one step does (chapter 7)."""
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
        ["3. … with batch_first=True", _error(lambda: batch_first(fixed_pe(), memory=None,
                                                                 tgt_mask=mask))],
    ]
    return Table(["call · 调用", "result · 结果"], rows,
                 f"the source's GPTGenerator, B = {B}, L = {L}, d_model = {d_model}")


# ---------------------------------------------------------------- BERT classifier (003, §4.1)

class SourceBERTClassifier(nn.Module):
    """The source's ``BERTClassifier``, copied as printed."""

    def __init__(self, bert_model, num_classes):
        super().__init__()
        self.bert = bert_model
        self.classifier = nn.Linear(768, num_classes)  # BERT-base hidden size

    def forward(self, input_ids, attention_mask):
        outputs = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        pooled_output = outputs.pooler_output  # [CLS] token representation
        logits = self.classifier(pooled_output)
        return logits


def run_source_bert_classifier() -> Table:
    """The source's classifier on BERTs of three widths (random small HF models, chapter 7)."""
    with warnings.catch_warnings():           # transformers' first import may warn (tqdm)
        warnings.simplefilter("ignore")
        import transformers
    transformers.logging.set_verbosity_error()
    rows = []
    for name, hidden in (("BERT-base width · 宽度", 768), ("all-MiniLM-L6-v2 width · 宽度", 384),
                         ("BERT-large width · 宽度", 1024)):
        torch.manual_seed(0)
        config = transformers.BertConfig(vocab_size=50, hidden_size=hidden, num_hidden_layers=1,
                                         num_attention_heads=4, intermediate_size=32,
                                         max_position_embeddings=16)
        clf = SourceBERTClassifier(transformers.BertModel(config).eval(), 2)
        ids = torch.randint(50, (2, 5))
        with torch.no_grad():
            rows.append([f"{name} {hidden}", _error(lambda: clf(ids, torch.ones_like(ids)))])
    return Table(["encoder · 编码器", "SourceBERTClassifier(...)(ids) → logits"], rows,
                 "nn.Linear(768, num_classes) on pooler_output")


# ---------------------------------------------------------------- tokenizer (001, project)

class SourceTextProcessor:
    """The vocabulary part of the source's ``TextProcessor`` (document 001), as printed."""

    def __init__(self):
        self.word_to_idx = {}

    def build_vocab(self, texts, min_freq=2):
        word_counts = Counter()
        for text in texts:
            word_counts.update(self.tokenize(text))
        vocab_words = [w for w, c in word_counts.items() if c >= min_freq]
        vocab_words = ['<PAD>', '<UNK>', '<START>', '<END>'] + vocab_words
        self.word_to_idx = {w: i for i, w in enumerate(vocab_words)}

    def tokenize(self, text):
        text = text.lower()
        text = re.sub(r'[^\w\s]', '', text)
        return text.split()

    def text_to_sequence(self, text, max_len=128):
        seq = [self.word_to_idx.get(w, self.word_to_idx['<UNK>']) for w in self.tokenize(text)]
        seq = seq + [self.word_to_idx['<PAD>']] * (max_len - len(seq))
        return np.array(seq[:max_len])


#: The source's demo: five training sentences and two test sentences.
SOURCE_SAMPLE_TEXTS = ["这部电影真的很棒，我非常喜欢！", "服务态度太差了，完全不推荐。",
                       "产品质量不错，价格也合理。", "快递速度太慢，包装也有问题。",
                       "这家餐厅的食物很美味，环境也很好。"]
SOURCE_TEST_TEXTS = ["这个产品质量很好，我很满意！", "服务态度恶劣，不会再来了。"]


def run_source_tokenizer() -> Table:
    """What the source's tokenizer makes of its own Chinese demo (chapter 7)."""
    p = SourceTextProcessor()
    p.build_vocab(SOURCE_SAMPLE_TEXTS)
    rows = [[f"vocabulary size · 词表大小", str(len(p.word_to_idx)), ""]]
    for t in SOURCE_TEST_TEXTS:
        seq = p.text_to_sequence(t)
        rows.append([t, str(p.tokenize(t)), f"{seq[:4].tolist()} … ({int((seq == 0).sum())} × <PAD>)"])
    return Table(["text · 文本", "tokens · 词元", "ids (max_len 128)"], rows,
                 "the source's TextProcessor on its own demo · 原文的 TextProcessor 处理它自己的示例")
