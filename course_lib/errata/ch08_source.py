"""Faithful small copies of the source document's capstone code (document 001, "核心项目"
and "性能优化与实际部署"), and runs that show what goes wrong (used by
:mod:`course_lib.errata.ch08` and chapter 8, ``ch08_capstone``).

The NumPy classes follow the printed code line by line (random weights
``randn * 0.1``, post-LN layers, sinusoidal positions, mean pooling);
only class names are prefixed with ``Source``.
"""

from __future__ import annotations

import numpy as np

from ..display import Table

__all__ = ["SourceTransformerTextClassifier", "source_quantize_weights", "source_prune_model",
           "source_quantization", "run_untrained_classifier", "run_source_quantization",
           "run_source_pruning", "run_size_claims"]


def _one_blas_thread():
    """A context in which NumPy's BLAS uses one thread (if threadpoolctl is installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                     # pragma: no cover
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


class _MHA:
    def __init__(self, d_model, num_heads):
        self.h, self.d_k = num_heads, d_model // num_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (np.random.randn(d_model, d_model) * 0.1 for _ in range(4))

    def forward(self, x):                          # x (..., L, d_model); the source: (L, d_model)
        L = x.shape[-2]
        Q, K, V = (np.swapaxes((x @ W).reshape(*x.shape[:-1], self.h, self.d_k), -2, -3)
                   for W in (self.W_q, self.W_k, self.W_v))
        out = _softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(self.d_k)) @ V
        return np.swapaxes(out, -2, -3).reshape(*x.shape[:-1], -1) @ self.W_o


def _layer_norm(x, eps=1e-6):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)


class _Layer:
    def __init__(self, d_model, num_heads, d_ff):
        self.self_attention = _MHA(d_model, num_heads)
        self.W1, self.b1 = np.random.randn(d_model, d_ff) * 0.1, np.zeros(d_ff)
        self.W2, self.b2 = np.random.randn(d_ff, d_model) * 0.1, np.zeros(d_model)

    def forward(self, x):
        x = _layer_norm(x + self.self_attention.forward(x))
        return _layer_norm(x + np.maximum(0, x @ self.W1 + self.b1) @ self.W2 + self.b2)


class SourceTransformerTextClassifier:
    """The source's ``TransformerTextClassifier`` (NumPy, random weights, never trained)."""

    def __init__(self, vocab_size, d_model=256, num_heads=8, num_layers=6, num_classes=2):
        self.embedding = np.random.randn(vocab_size, d_model) * 0.1
        self.layers = [_Layer(d_model, num_heads, 4 * d_model) for _ in range(num_layers)]
        pos = np.arange(5000)[:, None]
        div = np.exp(np.arange(0, d_model, 2) * -(np.log(10000.0) / d_model))
        self.pe = np.zeros((5000, d_model))
        self.pe[:, 0::2], self.pe[:, 1::2] = np.sin(pos * div), np.cos(pos * div)
        self.classifier = np.random.randn(d_model, num_classes) * 0.1
        self.bias = np.zeros(num_classes)

    def forward(self, input_ids):                  # ids (L,) as printed, or a batch (N, L)
        x = self.embedding[input_ids] + self.pe[:input_ids.shape[-1]]
        for layer in self.layers:
            x = layer.forward(x)
        return np.mean(x, axis=-2) @ self.classifier + self.bias

    def predict(self, input_ids):
        probs = _softmax(self.forward(input_ids))
        k = int(np.argmax(probs))
        return k, probs[k], probs


def source_quantize_weights(weights, bits):
    """The source's ``ModelOptimizer.quantize_weights``, as printed."""
    min_val, max_val = weights.min(), weights.max()
    scale = (max_val - min_val) / (2**bits - 1)
    quantized = np.round((weights - min_val) / scale) * scale + min_val
    return quantized.astype(np.float32)


def source_quantization(model, bits=8):
    """The source's ``ModelOptimizer.quantization`` (without its print)."""
    for name in ['embedding', 'classifier']:
        if hasattr(model, name):
            setattr(model, name, source_quantize_weights(getattr(model, name), bits))


def source_prune_model(model, sparsity=0.5):
    """The source's ``ModelOptimizer.prune_model`` (without its print)."""
    for name in ['embedding', 'classifier']:
        if hasattr(model, name):
            param = getattr(model, name)
            threshold = np.percentile(np.abs(param), sparsity * 100)
            pruned = param.copy()
            pruned[np.abs(pruned) < threshold] = 0
            setattr(model, name, pruned)


def _named_arrays(model):
    out = {"embedding": model.embedding, "classifier": model.classifier}
    for i, layer in enumerate(model.layers):
        a = layer.self_attention
        out.update({f"layers[{i}].W_q": a.W_q, f"layers[{i}].W_k": a.W_k, f"layers[{i}].W_v": a.W_v,
                    f"layers[{i}].W_o": a.W_o, f"layers[{i}].W1": layer.W1, f"layers[{i}].W2": layer.W2})
    return out


def _test_texts():
    from ..sentiment import DATA_FILE
    import csv
    with open(DATA_FILE, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return rows


def untrained_predictions(seeds=(0, 1, 2), max_len=128):
    """Predictions of randomly initialised source classifiers on the held-out sentences.

    The source's demo configuration (d_model 128, 4 heads, 2 layers) and its
    ``TextProcessor`` (vocabulary from the training sentences, ``min_freq=2``);
    sequences padded to ``max_len`` = 128, as the source does.

    Returns:
        list of ``(seed, labels (N,), predictions (N,), positive probabilities (N,))``.
    """
    from .ch07_source import SourceTextProcessor
    rows = _test_texts()
    train = [r for r in rows if r["split"] == "train"]
    test = [r for r in rows if r["split"] == "test"]
    proc = SourceTextProcessor()
    proc.build_vocab([r["text"] for r in train])
    y = np.array([int(r["label"]) for r in test])
    seqs = np.stack([proc.text_to_sequence(r["text"], max_len=max_len) for r in test])
    out = []
    with _one_blas_thread():               # many small float64 products: threads only contend
        for seed in seeds:
            out.append(_untrained_run(seed, len(proc.word_to_idx), y, seqs))
    return out


def _untrained_run(seed, vocab_size, y, seqs):
    np.random.seed(seed)
    clf = SourceTransformerTextClassifier(vocab_size, d_model=128, num_heads=4, num_layers=2)
    probs = _softmax(clf.forward(seqs))[:, 1]               # the same as predict(), row by row
    assert np.isclose(clf.predict(seqs[0])[2][1], probs[0])
    return seed, y, (probs > 0.5).astype(int), probs


def run_untrained_classifier() -> Table:
    """Accuracy and spread of the untrained source classifier on the held-out set (chapter 8)."""
    rows = []
    for seed, y, pred, p in untrained_predictions():
        rows.append([str(seed), f"{100 * (pred == y).mean():.0f}%",
                     f"{100 * max(pred.mean(), 1 - pred.mean()):.0f}%",
                     f"{p.min():.3f} … {p.max():.3f}"])
    return Table(["seed · 种子", "accuracy · 准确率", "texts given the most common label · 预测为同一类的比例",
                  "P(positive) over all texts · 所有文本的正面概率"], rows,
                 "the source's TransformerTextClassifier, random weights, on the 67 held-out "
                 "sentences · 原文分类器（随机权重）在 67 条留出句子上")


def run_source_quantization() -> Table:
    """What the source's 8-bit ``quantize_weights`` returns (chapter 8)."""
    rng = np.random.default_rng(0)
    W = (rng.standard_normal((175, 128)) * 0.1).astype(np.float32)
    Q = source_quantize_weights(W, 8)
    return Table(["", "before · 之前", "after quantize_weights(W, 8) · 之后"], [
        ["dtype", str(W.dtype), str(Q.dtype)],
        ["bytes · 字节数", str(W.nbytes), str(Q.nbytes)],
        ["bytes per weight · 每个权重的字节", str(W.itemsize), str(Q.itemsize)],
        ["distinct values · 不同取值个数", str(len(np.unique(W))), str(len(np.unique(Q)))],
    ], "the source's quantize_weights on a 175 × 128 float32 embedding · 原文 quantize_weights 作用于 "
       "175 × 128 的 float32 嵌入矩阵")


def run_source_pruning(sparsity=0.5) -> Table:
    """Which weights the source's ``prune_model`` changes (chapter 8)."""
    np.random.seed(0)
    model = SourceTransformerTextClassifier(175, d_model=128, num_heads=4, num_layers=2)
    before = {k: v.copy() for k, v in _named_arrays(model).items()}
    source_prune_model(model, sparsity)
    after = _named_arrays(model)
    rows, zero, total = [], 0, 0
    for k, v in before.items():
        z = int((after[k] == 0).sum())
        zero, total = zero + z, total + v.size
        if k in ("embedding", "classifier") or k.startswith("layers[0]"):
            rows.append([k, str(v.size), f"{100 * z / v.size:.0f}%"])
    rows.append(["… layers[1] alike · 同上", "", ""])
    rows.append(["all weights · 全部权重", str(total), f"{100 * zero / total:.0f}%"])
    return Table(["array · 数组", "weights · 权重数", "set to zero · 置零比例"], rows,
                 f"the source's prune_model(sparsity={sparsity}) on its demo classifier "
                 "(d_model 128, 2 layers) · 原文 prune_model 作用于其演示分类器")


def size_claims() -> dict:
    """Measured counterparts of the source's "75% smaller" and "50% fewer parameters"."""
    import torch
    from ..compression import prune_linear, quantize_int8, saved_size
    from ..sentiment import build_classifier
    np.random.seed(0)
    src = SourceTransformerTextClassifier(175, d_model=128, num_heads=4, num_layers=2)
    arrays = _named_arrays(src)
    src_bytes = sum(a.nbytes for a in arrays.values())
    source_quantization(src)
    src_after = sum(a.nbytes for a in _named_arrays(src).values())
    np.random.seed(0)
    src2 = SourceTransformerTextClassifier(175, d_model=128, num_heads=4, num_layers=2)
    n_all = sum(a.size for a in _named_arrays(src2).values())
    source_prune_model(src2, 0.5)
    n_zero = sum(int((a == 0).sum()) for a in _named_arrays(src2).values())
    torch.set_num_threads(min(2, torch.get_num_threads()))
    model = build_classifier(175)
    f32, i8 = saved_size(model), saved_size(quantize_int8(model))
    pruned = prune_linear(model, 0.5)
    return {"src_quant": 1 - src_after / src_bytes, "src_pruned": n_zero / n_all,
            "int8": 1 - i8 / f32, "f32": f32, "i8": i8,
            "pruned_size": 1 - saved_size(pruned) / f32,
            "pruned_params": sum(p.numel() for p in pruned.parameters()),
            "params": sum(p.numel() for p in model.parameters())}


def run_size_claims() -> Table:
    """The source's two size claims beside what is measured (chapter 8)."""
    c = size_claims()
    return Table(["claim · 原文说法", "measured · 实测", "what · 测的是什么"], [
        ["模型大小减少约75%", f"{100 * c['src_quant']:.0f}%",
         "the source's quantization(): bytes of all its arrays (NumPy float64; the cast of two of them to float32 is the only saving) · 原文 quantization() 后全部数组的字节数（NumPy float64；唯一的节省来自把其中两个数组转成 float32）"],
        ["模型大小减少约75%", f"{100 * c['int8']:.0f}%",
         f"real int8 (quantize_dynamic), saved file of the chapter's classifier, "
         f"{c['f32']} → {c['i8']} bytes · 真正的 int8，本章分类器保存文件的大小"],
        ["模型参数减少约50%", f"{100 * c['src_pruned']:.0f}%",
         "the source's prune_model(0.5): share of all weights set to zero · 原文剪枝后全部权重中零的比例"],
        ["模型参数减少约50%", f"{100 * (1 - c['pruned_params'] / c['params']):.0f}% / "
                        f"{100 * c['pruned_size']:.0f}%",
         "50% magnitude pruning of every Linear: fewer parameters / smaller file · "
         "对所有 Linear 做 50% 剪枝：参数个数减少 / 文件变小"],
    ], "size reduction claimed by the source vs measured · 原文声称的缩减与实测")
