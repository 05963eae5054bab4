"""Errata of chapter 7 (BERT and GPT): errors in the source documents' *code*.

Each erratum runs a faithful small copy of the source's code
(:mod:`course_lib.errata.ch07_source`) and shows, computed, what goes wrong
(``evidence``); the chapter shows a working version.
"""

from __future__ import annotations

from ._core import Erratum

__all__ = ["ERRATA"]

CH07 = "book/ch07_bert_gpt"


def run_source_gpt():
    from .ch07_source import run_source_gpt as run
    return run()


def run_source_bert_classifier():
    from .ch07_source import run_source_bert_classifier as run
    return run()


def run_source_tokenizer():
    from .ch07_source import run_source_tokenizer as run
    return run()


def _tokenizer_details():
    from .ch07_source import SOURCE_SAMPLE_TEXTS, SourceTextProcessor
    p = SourceTextProcessor()
    p.build_vocab(SOURCE_SAMPLE_TEXTS)
    return {"n": str(len(SOURCE_SAMPLE_TEXTS)), "size": str(len(p.word_to_idx))}


ERRATA = [
    Erratum(
        "ch07-gpt-decoder", CH07, None, None,
        "the source's GPT cannot run: positions from token ids, a (L, B) layer fed (B, L), "
        "and memory=None",
        "原文的 GPT 无法运行：用词元 id 算位置编码、把 (B, L) 输入喂给 (L, B) 的层，以及 memory=None",
        "Three separate errors. (1) self.pos_encoding(input_ids) adds the encoding to the token "
        "ids, integers of shape (B, L), instead of using the positions 0…L−1 and adding the "
        "result to the embeddings; the tutorial encoding also indexes its table by the first "
        "dimension, which here is the batch. (2) nn.TransformerDecoderLayer expects "
        "(L, B, d_model) unless batch_first=True, so the (L, L) causal mask does not fit. "
        "(3) nn.TransformerDecoder is the encoder–decoder decoder: every layer cross-attends to "
        "memory, the encoder's output, and memory=None fails. A decoder-only model has no "
        "encoder and no cross-attention: it is a stack of self-attention blocks with a causal "
        "mask (nn.TransformerEncoder with mask=causal, or course_lib.models.GPT).",
        "三处独立的错误。(1) self.pos_encoding(input_ids) 把位置编码加在词元 id（形状为 (B, L) 的"
        "整数）上，而不是用位置 0…L−1 算出编码再加到嵌入上；教程里的位置编码还按第一个维度取表，"
        "而这里第一个维度是批大小。(2) nn.TransformerDecoderLayer 默认输入是 (L, B, d_model)，"
        "除非 batch_first=True，所以 (L, L) 的因果掩码对不上。(3) nn.TransformerDecoder 是编码器–"
        "解码器结构里的解码器：每一层都要对 memory（编码器的输出）做交叉注意力，memory=None 直接"
        "报错。只有解码器的模型没有编码器，也没有交叉注意力：它就是一叠带因果掩码的自注意力块"
        "（nn.TransformerEncoder 加 mask=因果掩码，或 course_lib.models.GPT）。",
        evidence=run_source_gpt),
    Erratum(
        "ch07-bert-768", CH07, None, None,
        "the source's BERT classifier hard-codes the width 768",
        "原文的 BERT 分类器把宽度 768 写死了",
        "nn.Linear(768, num_classes) only fits BERT-base. Any other BERT — the 384-wide "
        "all-MiniLM-L6-v2 used later in this chapter, or the 1024-wide BERT-large — fails at "
        "the first batch. Take the width from the model: "
        "nn.Linear(bert_model.config.hidden_size, num_classes). BERT's own classifier also puts "
        "dropout before this layer (course_lib.models.BertClassifier does both). Using "
        "pooler_output (tanh of a linear map of the [CLS] vector, trained by next-sentence "
        "prediction) is what BERT does; it is absent only if the encoder was built without "
        "its pooling layer.",
        "nn.Linear(768, num_classes) 只适用于 BERT-base。换成别的 BERT——本章后面用到的 384 维 "
        "all-MiniLM-L6-v2，或 1024 维的 BERT-large——第一批数据就会报错。宽度应从模型中读取："
        "nn.Linear(bert_model.config.hidden_size, num_classes)。BERT 自己的分类器还在这一层之前"
        "加了 dropout（course_lib.models.BertClassifier 两者都做了）。使用 pooler_output"
        "（[CLS] 向量经线性变换再取 tanh，由下一句预测任务训练）正是 BERT 的做法；只有在构建"
        "编码器时去掉了池化层，它才不存在。",
        evidence=run_source_bert_classifier),
    Erratum(
        "ch07-tokenizer", CH07, None, None,
        "the source's tokenizer turns every Chinese sentence into one unknown word",
        "原文的分词器把每个中文句子变成一个未知词",
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
