"""Chapter 5's source data (``ch05_transformer``): the digits-to-letters translation test, and
the source's encoder layer, verbatim.

The test's vocabularies, which the source also prints, are defined by the
task itself in :mod:`course_lib.labs.translation_data` (``SRC_VOCAB``,
``TGT_VOCAB``): chapters import labs, never the reverse."""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F

from .._claims import Claim

__all__ = ["TRANSLATION", "EPOCH_ADVICE", "SourceEncoderLayer"]

# --- Source "pe_tests": test.py, a Transformer (wawa_transformer.py) trained to
# translate digit sequences into letter sequences (1 -> A, …, 5 -> E). The
# script itself is not in the source; its description and its log are.
TRANSLATION = {
    "defaults": {"d_model": 512, "num_layers": 6, "num_heads": 8, "d_ff": 2048},
    "epochs": 300,
    # "Epoch 20/300, Loss: 0.3004", … every 20 epochs.
    "loss_log": {20: 0.3004, 40: 0.0045, 60: 0.3947, 80: 0.0629, 100: 0.7253, 120: 0.1047,
                 140: 0.0028, 160: 0.0482, 180: 0.0843, 200: 0.0038, 220: 0.1479,
                 240: 0.2682, 260: 0.0026, 280: 0.2107, 300: 0.0448},
    # 测试用例 1–4: input digits, then the printed model output (= the printed
    # expected output), token by token, exactly as printed.
    "test_cases": [
        ([3, 4], ["< SOS >", "C", "D", "<EOS>"]),
        ([1, 2], ["< SOS >", "A", "B", "<EOS>"]),
        ([5], ["< SOS >", "E", "<EOS>"]),
        ([2, 3, 4], ["< SOS >", "B", "C", "D", "<EOS>"]),
    ],
    "claims": {
        "n_samples": Claim("pe_tests", "test.py: 开始训练，总训练样本数", ("28",)),
    },
}


# The advice in the test's notes (用例说明), verbatim.
EPOCH_ADVICE = "如果输出不符合预期，可增加训练轮次（如200轮）或调整模型参数（如增大 `d_model`）。"


class SourceEncoderLayer(nn.Module):
    """The source's ``TransformerEncoderLayer`` (source "attention", §3.4), verbatim.

    Sequence-first input ``(L, B, d_model)``; ``forward`` takes no mask.
    """

    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, src):
        src2 = self.self_attn(src, src, src)[0]
        src = src + src2
        src = self.norm1(src)
        src2 = self.linear2(F.relu(self.linear1(src)))
        src = src + src2
        src = self.norm2(src)
        return src
