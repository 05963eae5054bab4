"""Errata of chapter 10 (the capstone): errors in the source document's *code* and claims.

Each erratum runs a faithful small copy of the source's code
(:mod:`course_lib.chapters.ch10.source`) and shows, computed, what goes wrong;
the chapter builds and measures a working version.
"""

from __future__ import annotations

import csv
import inspect

import numpy as np

from ...data import data_path
from ...display import Table
from .._errata import Erratum
from ..ch07.source import SOURCE_SAMPLE_TEXTS, SOURCE_TEST_TEXTS, SourceTextProcessor
from .source import (SourceModelDeployment, SourceTransformerTextClassifier, _softmax,
                     source_prune_model, source_quantization, source_quantize_weights)

__all__ = ["ERRATA", "untrained_predictions", "run_untrained_classifier", "run_source_quantization",
           "run_source_pruning", "size_claims", "run_size_claims", "run_source_benchmark"]

CH08 = "book/ch10_capstone"

#: The demo classifier the errata run the source's code on: the source's demo
#: configuration (d_model 128, 4 heads, 2 layers) with a vocabulary of
#: ``DEMO_VOCAB`` ids (an arbitrary size; nothing depends on it).
DEMO_VOCAB = 175
DEMO = dict(d_model=128, num_heads=4, num_layers=2)

#: The two messages the source's ModelOptimizer prints, verbatim.
SIZE_CLAIM, PARAMS_CLAIM = "模型大小减少约75%", "模型参数减少约50%"


def _claimed(message: str) -> str:
    """The percentage a printed message claims, e.g. ``"75%"``."""
    import re
    return re.search(r"\d+%", message).group()


def _one_blas_thread():
    """A context in which NumPy's BLAS uses one thread (if threadpoolctl is installed)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                     # pragma: no cover
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _named_arrays(model):
    out = {"embedding": model.embedding, "classifier": model.classifier}
    for i, layer in enumerate(model.layers):
        a = layer.self_attention
        out.update({f"layers[{i}].W_q": a.W_q, f"layers[{i}].W_k": a.W_k, f"layers[{i}].W_v": a.W_v,
                    f"layers[{i}].W_o": a.W_o, f"layers[{i}].W1": layer.W1, f"layers[{i}].W2": layer.W2})
    return out


def _test_texts():
    with open(data_path("sentiment_bilingual.tsv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return rows


#: ``TextProcessor.text_to_sequence``'s default length in the source: every text is padded to it.
SOURCE_MAX_LEN = inspect.signature(SourceTextProcessor.text_to_sequence).parameters["max_len"].default


def untrained_predictions(seeds=(0, 1, 2), max_len=SOURCE_MAX_LEN):
    """Predictions of randomly initialised source classifiers on the held-out sentences.

    The source's demo configuration (d_model 128, 4 heads, 2 layers) and its
    ``TextProcessor`` (vocabulary from the training sentences, ``min_freq=2``);
    sequences padded to ``max_len`` = 128, as the source does.

    Returns:
        list of ``(seed, labels (N,), predictions (N,), positive probabilities (N,))``.
    """
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
    """Accuracy and spread of the untrained source classifier on the held-out set (chapter 10)."""
    rows, n = [], 0
    for seed, y, pred, p in untrained_predictions():
        n = len(y)
        rows.append([str(seed), f"{100 * (pred == y).mean():.0f}%",
                     f"{100 * max(pred.mean(), 1 - pred.mean()):.0f}%",
                     f"{p.min():.3f} … {p.max():.3f}"])
    return Table(["seed · 种子", "accuracy · 准确率", "texts given the most common label · 预测为同一类的比例",
                  "P(positive) over all texts · 所有文本的正面概率"], rows,
                 f"the source's TransformerTextClassifier, random weights, on the {n} held-out "
                 f"sentences · 原始资料分类器（随机权重）在 {n} 条留出句子上")


def _source_quant_arrays(bits: int = 8):
    """The source demo's embedding (float64, as ``np.random.randn`` makes it), what the
    source's ``quantize_weights`` returns, and the ``bits``-bit integer codes it rounds to."""
    np.random.seed(0)
    W = SourceTransformerTextClassifier(DEMO_VOCAB, **DEMO).embedding
    Q = source_quantize_weights(W, bits)
    scale = (W.max() - W.min()) / (2 ** bits - 1)
    codes = np.round((W - W.min()) / scale).astype(np.uint8 if bits <= 8 else np.uint16)
    return W, Q, codes


def run_source_quantization() -> Table:
    """What the source's 8-bit ``quantize_weights`` returns, beside real 8-bit codes (chapter 10)."""
    W, Q, codes = _source_quant_arrays(8)
    return Table(["", "before (source) · 之前（原始资料）", "after quantize_weights(W, 8) · 之后",
                  "8-bit codes + scale · 8 位整数编码 + 缩放因子"], [
        ["dtype", str(W.dtype), str(Q.dtype), str(codes.dtype)],
        ["bytes · 字节数", str(W.nbytes), str(Q.nbytes), str(codes.nbytes)],
        ["bytes per weight · 每个权重的字节", str(W.itemsize), str(Q.itemsize), str(codes.itemsize)],
        ["distinct values · 不同取值个数", str(len(np.unique(W))), str(len(np.unique(Q))),
         str(len(np.unique(codes)))],
    ], f"the source's quantize_weights on its demo embedding, {W.shape[0]} × {W.shape[1]} · "
       f"原始资料 quantize_weights 作用于其演示嵌入矩阵，{W.shape[0]} × {W.shape[1]}")


def _quant_details():
    from fractions import Fraction
    W, Q, codes = _source_quant_arrays(8)
    return {"levels": str(2 ** 8), "kept": str(Fraction(Q.nbytes, W.nbytes)),
            "int8": str(Fraction(codes.nbytes, W.nbytes)), "src": str(W.dtype), "out": str(Q.dtype)}


def run_source_pruning(sparsity=0.5) -> Table:
    """Which weights the source's ``prune_model`` changes (chapter 10)."""
    np.random.seed(0)
    model = SourceTransformerTextClassifier(DEMO_VOCAB, **DEMO)
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
                 "(d_model 128, 2 layers) · 原始资料 prune_model 作用于其演示分类器")


def size_claims() -> dict:
    """Measured counterparts of the source's "75% smaller" and "50% fewer parameters"."""
    import torch
    from ...labs.compression import prune_linear, quantize_int8, saved_size
    from ...labs.serving import load_classifier
    np.random.seed(0)
    src = SourceTransformerTextClassifier(DEMO_VOCAB, **DEMO)
    arrays = _named_arrays(src)
    src_bytes = sum(a.nbytes for a in arrays.values())
    source_quantization(src)
    src_after = sum(a.nbytes for a in _named_arrays(src).values())
    np.random.seed(0)
    src2 = SourceTransformerTextClassifier(DEMO_VOCAB, **DEMO)
    n_all = sum(a.size for a in _named_arrays(src2).values())
    source_prune_model(src2, 0.5)
    n_zero = sum(int((a == 0).sum()) for a in _named_arrays(src2).values())
    torch.set_num_threads(min(2, torch.get_num_threads()))
    # the chapter's own sentiment classifier, as stored (float32): the file the chapter measures
    model = load_classifier("ch08-sentiment", dtype=torch.float32)["model"]
    f32, i8 = saved_size(model), saved_size(quantize_int8(model))
    pruned = prune_linear(model, 0.5)
    return {"src_quant": 1 - src_after / src_bytes, "src_pruned": n_zero / n_all,
            "int8": 1 - i8 / f32, "f32": f32, "i8": i8,
            "pruned_size": 1 - saved_size(pruned) / f32,
            "pruned_params": sum(p.numel() for p in pruned.parameters()),
            "params": sum(p.numel() for p in model.parameters())}


def run_size_claims() -> Table:
    """The source's two size claims beside what is measured (chapter 10)."""
    c = size_claims()
    return Table(["claim · 原始资料的说法", "measured · 实测", "what · 测的是什么"], [
        [SIZE_CLAIM, f"{100 * c['src_quant']:.0f}%",
         "the source's quantization(): bytes of all its arrays (NumPy float64; the cast of two of them to float32 is the only saving) · 原始资料 quantization() 后全部数组的字节数（NumPy float64；唯一的节省来自把其中两个数组转成 float32）"],
        [SIZE_CLAIM, f"{100 * c['int8']:.0f}%",
         f"real int8 (quantize_dynamic), saved file of the chapter's sentiment classifier (ch08-sentiment), "
         f"{c['f32']} → {c['i8']} bytes · 真正的 int8，本章情感分类器（ch08-sentiment）保存文件的大小"],
        [PARAMS_CLAIM, f"{100 * c['src_pruned']:.0f}%",
         "the source's prune_model(0.5): share of all weights set to zero · 原始资料剪枝后全部权重中零的比例"],
        [PARAMS_CLAIM, f"{100 * (1 - c['pruned_params'] / c['params']):.0f}% / "
                        f"{100 * c['pruned_size']:.0f}%",
         f"{_claimed(PARAMS_CLAIM)} magnitude pruning of every Linear: fewer parameters / smaller file · "
         f"对所有 Linear 做 {_claimed(PARAMS_CLAIM)} 剪枝：参数个数减少 / 文件变小"],
    ], "size reduction claimed by the source vs measured · 原始资料声称的缩减与实测")


def _untrained():
    return run_untrained_classifier()


def _quant():
    return run_source_quantization()


def _prune():
    return run_source_pruning()


def _claims():
    return run_size_claims()


def _untrained_details():
    return {"max_len": str(SOURCE_MAX_LEN)}


def _claims_details():
    c = size_claims()
    return {"int8": f"{100 * c['int8']:.0f}%", "src": f"{100 * c['src_pruned']:.0f}%",
            "size_claim": SIZE_CLAIM, "params_claim": PARAMS_CLAIM, "claimed": _claimed(SIZE_CLAIM)}


ERRATA = [
    Erratum(
        "ch08-untrained", CH08, None, None,
        "the platform demo predicts with weights that were never trained",
        "平台演示用从未训练过的权重做预测",
        "TransformerTextClassifier draws every weight with np.random.randn(...) * 0.1 and the demo "
        "calls analyze() without a single training step, so the printed sentiment and confidence "
        "say nothing about the text. Worse, the source pads every text to {max_len} ids and mean-pools "
        "all positions, padding included: the pooled vector is almost the same for every input, "
        "so one random classifier gives every sentence the same label with nearly the same "
        "probability, and its accuracy is simply the share of that label in the test set. "
        "A classifier must be trained (and evaluated on held-out text) before its predictions "
        "mean anything; padding must be masked out of the pooling.",
        "TransformerTextClassifier 的每个权重都用 np.random.randn(...) * 0.1 随机生成，演示在没有任何"
        "训练的情况下就调用 analyze()，所以打印出的情感和置信度与文本毫无关系。更糟的是，原始资料把每个文本"
        "填充到 {max_len} 个 id，再对包括填充在内的所有位置取平均：池化后的向量对每个输入几乎都一样，于是一个"
        "随机分类器给每个句子同一个标签、几乎同样的概率，准确率就等于该标签在测试集中的比例。分类器必须"
        "先训练（并在留出文本上评估），它的预测才有意义；池化时还必须屏蔽填充位置。",
        _untrained_details, evidence=_untrained),
    Erratum(
        "ch08-float32-quant", CH08, None, None,
        "the source's “8-bit quantisation” stores {out}: its {src} arrays keep {kept} of their "
        "bytes, not {int8}",
        "原始资料的“8 位量化”存的是 {out}：它的 {src} 数组保留了 {kept} 的字节，而不是 {int8}",
        "quantize_weights rounds every weight to one of 2⁸ = {levels} levels and then maps it back "
        "with * scale + min_val and .astype(np.{out}). The source's arrays are {src} "
        "(np.random.randn makes {src}), so the result does take {kept} of the bytes, as "
        "ch08-size-claims measures too; but that saving is the cast from {src} to {out}, which "
        "needs no rounding to levels at all, and the rounding itself saves nothing. Stored as "
        "8-bit codes, the same weights take {int8} of the bytes. Real int8 quantisation keeps "
        "the integers (one byte each) and the scale separately, and computes with them "
        "(torch.ao.quantization.quantize_dynamic does this for nn.Linear).",
        "quantize_weights 把每个权重舍入到 2⁸ = {levels} 个等级之一，随后又用 * scale + min_val 和 "
        ".astype(np.{out}) 映射回浮点数。原始资料的数组是 {src}（np.random.randn 生成的就是 {src}），"
        "所以结果确实只占 {kept} 的字节，ch08-size-claims 的实测也是如此；但这份节省来自从 {src} 到 "
        "{out} 的类型转换，根本不需要舍入到等级，舍入本身什么也没有省下。若存成 8 位整数编码，同样的权重"
        "只占 {int8} 的字节。真正的 int8 量化保留整数（每个一字节）并单独保存缩放因子，用它们来计算"
        "（torch.ao.quantization.quantize_dynamic 对 nn.Linear 就是这样做的）。",
        _quant_details, evidence=_quant, kind="code"),
    Erratum(
        "ch08-prune-two-arrays", CH08, None, None,
        "the source's pruning touches only the embedding and the classifier",
        "原始资料的剪枝只动了嵌入层和分类层",
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
        "“{size_claim}” and “{params_claim}” are printed, not measured",
        "“{size_claim}”与“{params_claim}”是打印出来的，不是测出来的",
        "Both messages are fixed strings printed whatever the code did. Measured: the source's own "
        "quantisation saves only what casting two float64 arrays to float32 saves, and its pruning "
        "zeroes {src} of all weights. Real int8 dynamic quantisation of this chapter's classifier "
        "shrinks the saved file by {int8}, not {claimed}: embeddings, positions, layer norms, biases and "
        "the query projections stay float32, and each quantised layer stores a scale. Pruning sets weights to zero but "
        "keeps them in a dense tensor: the parameter count and the file size do not change "
        "unless the zeros are stored sparsely or whole rows/heads are removed.",
        "这两句话都是固定的字符串，无论代码做了什么都会打印。实测：原始资料自己的量化所节省的只是把两个 "
        "float64 数组转成 float32 省下的空间，它的剪枝把全部权重中的 {src} 置零。对本章分类器做真正的 "
        "int8 动态量化，保存的文件缩小 {int8}，而不是 {claimed}：嵌入、位置编码、层归一化、偏置和查询投影仍是 "
        "float32，且每个量化层还要保存缩放因子。剪枝把权重置零，但零仍存放在稠密张量里：除非以稀疏格式存储零，"
        "或整行/整个头地删除，参数个数和文件大小都不会变。",
        _claims_details, evidence=_claims, kind="claim"),
]


# --- The source's benchmark (issue 20: a complete reading) ----------------------------------

#: Seconds of the simulated clock that each ``predict`` of the stand-in model takes.
BENCH_STEP = 0.01
#: ``num_runs`` for the verbatim benchmark (the source's default is larger; the clock is simulated).
BENCH_RUNS = 3


class _StandInModel:
    """A model whose every ``predict`` takes exactly ``step`` seconds of a simulated clock."""

    def __init__(self, clock: list, step: float):
        self.clock, self.step = clock, step

    def predict(self, sequence):
        self.clock[0] += self.step
        return 0, 1.0, np.array([0.0, 1.0])


def run_source_benchmark(texts, step: float = BENCH_STEP, num_runs: int = BENCH_RUNS) -> dict:
    """Run the source's ``ModelDeployment.benchmark_performance`` verbatim on a simulated clock.

    The method's ``import time`` is given a clock that advances only when the stand-in
    model predicts (``step`` seconds per text), so what it prints is exact and the same on
    every machine; nothing else is patched. The processor is the source's ``TextProcessor``.

    Returns:
        dict with ``printed`` (its two result lines), ``avg_time``, ``throughput`` (what
        it returns), ``per_text`` (``step``) and ``n`` (texts per pass). Chapter 10.
    """
    import builtins
    import contextlib
    import io
    import types

    clock = [0.0]
    fake_time = types.SimpleNamespace(time=lambda: clock[0])
    real_import = builtins.__import__

    def _import(name, *args, **kwargs):
        return fake_time if name == "time" else real_import(name, *args, **kwargs)

    method = SourceModelDeployment.benchmark_performance
    bench = types.FunctionType(method.__code__, {"__builtins__": {**vars(builtins), "__import__": _import}},
                               method.__name__, method.__defaults__)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        processor = SourceTextProcessor()
        processor.build_vocab(SOURCE_SAMPLE_TEXTS)
        start = out.tell()
        avg_time, throughput = bench(SourceModelDeployment(_StandInModel(clock, step), processor),
                                     list(texts), num_runs)
    printed = out.getvalue()[start:].splitlines()
    return {"printed": [l for l in printed if "平均延迟" in l or "吞吐量" in l], "avg_time": avg_time,
            "throughput": throughput, "per_text": step, "n": len(texts)}


def _bench_cases():
    return [run_source_benchmark(texts) for texts in
            (SOURCE_TEST_TEXTS[:1], SOURCE_TEST_TEXTS, SOURCE_SAMPLE_TEXTS)]


def _bench_evidence() -> Table:
    rows = []
    for r in _bench_cases():
        rows.append([str(r["n"]), r["printed"][0], r["printed"][1], f"{r['per_text']:.3f}秒",
                     f"{r['avg_time'] / r['per_text']:g}", f"{r['avg_time'] * r['throughput']:g}"])
    return Table(["texts per pass · 每轮文本数", "printed latency · 打印的延迟", "printed throughput · 打印的吞吐量",
                  "latency of one text · 单条文本的延迟", "平均延迟 ÷ latency · 倍数",
                  "平均延迟 × 吞吐量 (1 for one at a time · 逐条处理时应为 1)"], rows,
                 f"the source's benchmark_performance, verbatim, num_runs = {BENCH_RUNS}; every predict() "
                 f"takes {BENCH_STEP:g} s on a simulated clock · 原始资料的基准测试原样运行，"
                 f"每次 predict() 在模拟时钟上耗时 {BENCH_STEP:g} 秒")


def _bench_details():
    cases = _bench_cases()
    return {"step": f"{BENCH_STEP:g}", "n_max": str(cases[-1]["n"]),
            "printed": cases[-1]["printed"][0].split(": ")[1], "runs": str(BENCH_RUNS)}


ERRATA += [
    Erratum(
        "ch08-benchmark-latency", CH08, None, None,
        "the benchmark's “平均延迟” (average latency) is the time of a whole pass over the texts, "
        "not of one text",
        "基准测试的“平均延迟”是把全部文本跑一遍的时间，而不是单条文本的时间",
        "benchmark_performance times num_runs passes; each pass sends every text of test_texts "
        "through predict one after another. It then divides the total by num_runs only, so "
        "avg_time is the time of one pass over all the texts, and it prints that as the average "
        "latency. Run verbatim on a stand-in model whose every predict takes {step} s on a "
        "simulated clock (nothing else is changed), it prints {printed} for {n_max} texts: the "
        "latency of one text times the number of texts. Its throughput, len(test_texts) / "
        "avg_time, is right, so the two printed numbers multiply to the number of texts instead "
        "of to 1. The latency per text is total_time / (num_runs * len(test_texts)); time.perf_counter() "
        "is the clock meant for measuring intervals, and a single average hides the slow calls "
        "that p95 shows. Chapter 10 times each call and reports p50 and p95.",
        "benchmark_performance 计时 num_runs 轮；每一轮把 test_texts 中的每条文本依次送进 predict。"
        "然后它只用总时间除以 num_runs，所以 avg_time 是把全部文本跑一遍的时间，却被打印成平均延迟。"
        "换上一个替身模型（在模拟时钟上每次 predict 恰好耗时 {step} 秒，其他一概不改）原样运行，它对 "
        "{n_max} 条文本打印 {printed}：单条文本的延迟乘以文本条数。它的吞吐量 len(test_texts) / avg_time "
        "是对的，所以打印出的两个数相乘得到文本条数，而不是 1。每条文本的延迟应为 total_time / (num_runs * "
        "len(test_texts))；测量时间间隔应该用 time.perf_counter()；而且单个平均值会掩盖 p95 才能显示的慢"
        "调用。第 10 章记录每次调用的耗时，报告 p50 和 p95。",
        _bench_details, evidence=_bench_evidence, kind="code"),
]
