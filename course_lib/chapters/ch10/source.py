"""Chapter 10's source code (``ch10_capstone``): faithful small copies of the source
document's capstone code (document 001, "核心项目" and "性能优化与实际部署").
:mod:`course_lib.chapters.ch10.errata` runs them and shows, computed, what goes wrong.

The NumPy classes follow the printed code line by line (random weights
``randn * 0.1``, post-LN layers, sinusoidal positions, mean pooling);
only class names are prefixed with ``Source``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SourceTransformerTextClassifier", "source_quantize_weights", "source_prune_model",
           "source_quantization", "SourceModelDeployment"]




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


class SourceModelDeployment:
    """模型部署管理器

    The source's ``ModelDeployment`` (document 001, "部署配置示例"), verbatim; only the
    class name is prefixed. ``ch08-benchmark-latency`` runs ``benchmark_performance``."""

    def __init__(self, model, processor):
        self.model = model
        self.processor = processor

    def create_api_interface(self):
        """创建API接口"""
        def predict_api(text):
            """API预测接口"""
            try:
                # 预处理
                sequence = self.processor.text_to_sequence(text)

                # 预测
                predicted_class, confidence, probs = self.model.predict(sequence)

                return {
                    'status': 'success',
                    'prediction': int(predicted_class),
                    'confidence': float(confidence),
                    'probabilities': probs.tolist()
                }
            except Exception as e:
                return {
                    'status': 'error',
                    'message': str(e)
                }

        return predict_api

    def benchmark_performance(self, test_texts, num_runs=100):
        """性能基准测试"""
        import time

        print("开始性能基准测试...")

        total_time = 0
        for _ in range(num_runs):
            start_time = time.time()

            for text in test_texts:
                sequence = self.processor.text_to_sequence(text)
                self.model.predict(sequence)

            total_time += time.time() - start_time

        avg_time = total_time / num_runs
        throughput = len(test_texts) / avg_time

        print(f"平均延迟: {avg_time:.3f}秒")
        print(f"吞吐量: {throughput:.1f} 样本/秒")

        return avg_time, throughput
