"""Errata of chapter 7 (BERT): errors in the source documents' *code*.

Each erratum runs a faithful small copy of the source's code
(:mod:`course_lib.chapters.ch07.source`) and shows, computed, what goes wrong
(``evidence``); the chapter shows a working version.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from ...display import Table
from .._errata import Erratum
from .source import SOURCE_SAMPLE_TEXTS, SOURCE_TEST_TEXTS, SourceBERTClassifier, SourceTextProcessor

__all__ = ["ERRATA", "run_source_bert_classifier", "run_source_tokenizer"]

CH07 = "book/ch07_bert"


def _error(fn) -> str:
    """``ok`` and the output shape, or the exception ``fn()`` raises, as text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
        return f"ok, shape {tuple(out.shape)}"
    except Exception as e:  # the point is to show the error
        return f"{type(e).__name__}: {e}"


#: The encoder widths the source's classifier is tried on (BERT-base, all-MiniLM-L6-v2, BERT-large).
BERT_WIDTHS = (("BERT-base width · 宽度", 768), ("all-MiniLM-L6-v2 width · 宽度", 384),
               ("BERT-large width · 宽度", 1024))


def _bert_width_details():
    from ...analysis.sizes import CONFIGS
    width = SourceBERTClassifier(nn.Identity(), 2).classifier.in_features
    base = CONFIGS["BERT-base"][1]["d_model"]
    if width != base:
        raise RuntimeError(f"the source's classifier width {width} is not BERT-base's {base}: "
                           "this is then an error, not a note")
    widths = dict((name.split(" width")[0], w) for name, w in BERT_WIDTHS)
    return {"width": str(width), "minilm": str(widths["all-MiniLM-L6-v2"]),
            "large": str(widths["BERT-large"])}


def run_source_bert_classifier() -> Table:
    """The source's classifier on BERTs of three widths (random small HF models, chapter 7)."""
    with warnings.catch_warnings():           # transformers' first import may warn (tqdm)
        warnings.simplefilter("ignore")
        import transformers
    transformers.logging.set_verbosity_error()
    rows = []
    for name, hidden in BERT_WIDTHS:
        torch.manual_seed(0)
        config = transformers.BertConfig(vocab_size=50, hidden_size=hidden, num_hidden_layers=1,
                                         num_attention_heads=4, intermediate_size=32,
                                         max_position_embeddings=16)
        clf = SourceBERTClassifier(transformers.BertModel(config).eval(), 2)
        ids = torch.randint(50, (2, 5))
        with torch.no_grad():
            rows.append([f"{name} {hidden}", _error(lambda: clf(ids, torch.ones_like(ids)))])
    width = SourceBERTClassifier(nn.Identity(), 2).classifier.in_features
    return Table(["encoder · 编码器", "SourceBERTClassifier(...)(ids) → logits"], rows,
                 f"nn.Linear({width}, num_classes) on pooler_output")


def run_source_tokenizer() -> Table:
    """What the source's tokenizer makes of its own Chinese demo (chapter 7)."""
    p = SourceTextProcessor()
    p.build_vocab(SOURCE_SAMPLE_TEXTS)
    rows = [[f"vocabulary size · 词表大小", str(len(p.word_to_idx)), ""]]
    for t in SOURCE_TEST_TEXTS:
        seq = p.text_to_sequence(t)
        rows.append([t, str(p.tokenize(t)), f"{seq[:4].tolist()} … ({int((seq == 0).sum())} × <PAD>)"])
    return Table(["text · 文本", "tokens · 词元", "ids (max_len 128)"], rows,
                 "the source's TextProcessor on its own demo · 原始资料的 TextProcessor 处理它自己的示例")



def _tokenizer_details():
    p = SourceTextProcessor()
    p.build_vocab(SOURCE_SAMPLE_TEXTS)
    return {"n": str(len(SOURCE_SAMPLE_TEXTS)), "size": str(len(p.word_to_idx))}


ERRATA = [
    Erratum(
        "ch07-bert-768", CH07, None, None,
        "the source's BERT classifier is right for BERT-base, whose width is {width}",
        "原始资料的 BERT 分类器对 BERT-base 是对的，其宽度为 {width}",
        "nn.Linear({width}, num_classes) is correct for BERT-base, the model the source uses: its "
        "hidden size is {width}. The caveat is that the width is written into the code, so the "
        "classifier fits no other BERT — the {minilm}-wide all-MiniLM-L6-v2 used later in this "
        "chapter, or the {large}-wide BERT-large, fails at the first batch (above). Taking the "
        "width from the model, nn.Linear(bert_model.config.hidden_size, num_classes), works for "
        "all of them. BERT's own classifier also puts dropout before this layer "
        "(course_lib.models.BertClassifier does both). Using pooler_output (tanh of a linear map "
        "of the [CLS] vector, trained by next-sentence prediction) is what BERT does; it is absent "
        "only if the encoder was built without its pooling layer.",
        "nn.Linear({width}, num_classes) 对原始资料所用的 BERT-base 是正确的：它的隐藏层宽度就是 {width}。"
        "需要提醒的是宽度写死在代码里，所以这个分类器不适用于别的 BERT——本章后面用到的 {minilm} 维 "
        "all-MiniLM-L6-v2，或 {large} 维的 BERT-large，第一批数据就会报错（见上）。从模型中读取宽度，"
        "nn.Linear(bert_model.config.hidden_size, num_classes)，对它们都适用。BERT 自己的分类器还在这一层"
        "之前加了 dropout（course_lib.models.BertClassifier 两者都做了）。使用 pooler_output"
        "（[CLS] 向量经线性变换再取 tanh，由下一句预测任务训练）正是 BERT 的做法；只有在构建"
        "编码器时去掉了池化层，它才不存在。",
        _bert_width_details, evidence=run_source_bert_classifier, kind="note"),
    Erratum(
        "ch07-tokenizer", CH07, None, None,
        "the source's tokenizer turns every Chinese sentence into one unknown word",
        "原始资料的分词器把每个中文句子变成一个未知词",
        "The tokenizer splits on spaces. Chinese has none, so each of the {n} demo sentences "
        "is a single 'word' that occurs once; min_freq=2 drops them all, and the vocabulary "
        "holds only the {size} special tokens. Every sentence then becomes <UNK> followed by "
        "padding, so the classifier sees the same input for every text and must give every "
        "text the same answer, whatever it learns. Chinese needs characters (or a trained "
        "subword vocabulary) as tokens: see course_lib.text.tokenize.",
        "这个分词器按空格切分。中文没有空格，所以 {n} 个示例句子各自成为只出现一次的一个“词”；"
        "min_freq=2 把它们全部过滤掉，词表里只剩 {size} 个特殊标记。于是每个句子都变成 <UNK> "
        "加一串填充，分类器对所有文本看到的是同一个输入，无论学到什么，都只能给出同一个答案。"
        "中文需要以字（或训练得到的子词词表）为词元：见 course_lib.text.tokenize。",
        _tokenizer_details, evidence=run_source_tokenizer),
]
