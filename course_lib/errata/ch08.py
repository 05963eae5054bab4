"""Errata of chapter 8 (the capstone): errors in the source document's *code* and claims.

Each erratum runs a faithful small copy of the source's code
(:mod:`course_lib.errata.ch08_source`) and shows, computed, what goes wrong;
the chapter builds and measures a working version.
"""

from __future__ import annotations

from ._core import Erratum

__all__ = ["ERRATA"]

CH08 = "book/ch08_capstone"


def _untrained():
    from .ch08_source import run_untrained_classifier
    return run_untrained_classifier()


def _quant():
    from .ch08_source import run_source_quantization
    return run_source_quantization()


def _prune():
    from .ch08_source import run_source_pruning
    return run_source_pruning()


def _claims():
    from .ch08_source import run_size_claims
    return run_size_claims()


def _claims_details():
    from .ch08_source import size_claims
    c = size_claims()
    return {"int8": f"{100 * c['int8']:.0f}%", "src": f"{100 * c['src_pruned']:.0f}%"}


ERRATA = [
    Erratum(
        "ch08-untrained", CH08, None, None,
        "the platform demo predicts with weights that were never trained",
        "平台演示用从未训练过的权重做预测",
        "TransformerTextClassifier draws every weight with np.random.randn(...) * 0.1 and the demo "
        "calls analyze() without a single training step, so the printed sentiment and confidence "
        "say nothing about the text. Worse, the source pads every text to 128 ids and mean-pools "
        "all positions, padding included: the pooled vector is almost the same for every input, "
        "so one random classifier gives every sentence the same label with nearly the same "
        "probability, and its accuracy is simply the share of that label in the test set. "
        "A classifier must be trained (and evaluated on held-out text) before its predictions "
        "mean anything; padding must be masked out of the pooling.",
        "TransformerTextClassifier 的每个权重都用 np.random.randn(...) * 0.1 随机生成，演示在没有任何"
        "训练的情况下就调用 analyze()，所以打印出的情感和置信度与文本毫无关系。更糟的是，原文把每个文本"
        "填充到 128 个 id，再对包括填充在内的所有位置取平均：池化后的向量对每个输入几乎都一样，于是一个"
        "随机分类器给每个句子同一个标签、几乎同样的概率，准确率就等于该标签在测试集中的比例。分类器必须"
        "先训练（并在留出文本上评估），它的预测才有意义；池化时还必须屏蔽填充位置。",
        evidence=_untrained),
    Erratum(
        "ch08-float32-quant", CH08, None, None,
        "the source's “8-bit quantisation” still stores float32",
        "原文的“8 位量化”存的仍是 float32",
        "quantize_weights rounds every weight to one of 2⁸ = 256 levels and then maps it back with "
        "* scale + min_val and .astype(np.float32): the values are coarser but each still takes "
        "four bytes, so nothing shrinks. Real int8 quantisation keeps the integers (one byte "
        "each) and the scale separately, and computes with them (torch.ao.quantization."
        "quantize_dynamic does this for nn.Linear).",
        "quantize_weights 把每个权重舍入到 2⁸ = 256 个等级之一，随后又用 * scale + min_val 和 "
        ".astype(np.float32) 映射回浮点数：数值变粗了，但每个仍占四个字节，所以什么也没有变小。真正的 "
        "int8 量化保留整数（每个一字节）并单独保存缩放因子，用它们来计算（torch.ao.quantization."
        "quantize_dynamic 对 nn.Linear 就是这样做的）。",
        evidence=_quant),
    Erratum(
        "ch08-prune-two-arrays", CH08, None, None,
        "the source's pruning touches only the embedding and the classifier",
        "原文的剪枝只动了嵌入层和分类层",
        "prune_model loops over ['embedding', 'classifier'] only: every attention and feed-forward "
        "matrix of the encoder, where most of the weights are, stays dense. Pruning meant to "
        "shrink a Transformer has to cover its linear layers (torch.nn.utils.prune over every "
        "nn.Linear, as this chapter does). Its threshold test `< threshold` also keeps ties, "
        "so the share zeroed in a matrix can be slightly below the requested sparsity.",
        "prune_model 只遍历 ['embedding', 'classifier']：编码器中所有注意力和前馈矩阵——大部分权重所在"
        "之处——都原封未动。要让 Transformer 变小，剪枝必须覆盖它的线性层（像本章这样，用 "
        "torch.nn.utils.prune 处理每个 nn.Linear）。它的阈值判断 `< threshold` 还会保留等于阈值的权重，"
        "所以一个矩阵中被置零的比例可能略低于要求的稀疏度。",
        evidence=_prune),
    Erratum(
        "ch08-size-claims", CH08, None, None,
        "“模型大小减少约75%” and “模型参数减少约50%” are printed, not measured",
        "“模型大小减少约75%”与“模型参数减少约50%”是打印出来的，不是测出来的",
        "Both messages are fixed strings printed whatever the code did. Measured: the source's own "
        "quantisation saves only what casting two float64 arrays to float32 saves, and its pruning "
        "zeroes {src} of all weights. Real int8 dynamic quantisation of this chapter's classifier "
        "shrinks the saved file by {int8}, not 75%: embeddings, positions, layer norms and biases "
        "stay float32 and each quantised layer stores a scale. Pruning sets weights to zero but "
        "keeps them in a dense tensor: the parameter count and the file size do not change "
        "unless the zeros are stored sparsely or whole rows/heads are removed.",
        "这两句话都是固定的字符串，无论代码做了什么都会打印。实测：原文自己的量化所节省的只是把两个 "
        "float64 数组转成 float32 省下的空间，它的剪枝把全部权重中的 {src} 置零。对本章分类器做真正的 "
        "int8 动态量化，保存的文件缩小 {int8}，而不是 75%：嵌入、位置编码、层归一化和偏置仍是 float32，"
        "且每个量化层还要保存缩放因子。剪枝把权重置零，但零仍存放在稠密张量里：除非以稀疏格式存储零，"
        "或整行/整个头地删除，参数个数和文件大小都不会变。",
        _claims_details, evidence=_claims),
]
