"""Chapter 7's source code (``ch07_bert``): faithful small copies of the source
documents' BERT classifier and tokenizer, as printed (their GPT generator is chapter 8's,
:mod:`course_lib.chapters.ch08.source`).

:mod:`course_lib.chapters.ch07.errata` runs them and shows, computed, what goes wrong.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import torch
from torch import nn

__all__ = ["SourceBERTClassifier", "SourceTextProcessor", "SOURCE_SAMPLE_TEXTS", "SOURCE_TEST_TEXTS"]


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
