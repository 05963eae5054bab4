"""Chapter 7's source code (``ch07_bert_gpt``): faithful small copies of the source
documents' GPT generator, BERT classifier and tokenizer, as printed.

:mod:`course_lib.chapters.ch07.errata` runs them and shows, computed, what goes wrong.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import torch
from torch import nn

__all__ = ["SourcePositionalEncoding", "SourceGPTGenerator", "SourceBERTClassifier", "SourceTextProcessor",
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
