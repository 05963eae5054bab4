"""Chapter 5's data from the source documents: the digits-to-letters translation test."""

from __future__ import annotations

from ._claim import Claim

__all__ = ["TRANSLATION"]

# --- Source "pe_tests": test.py, a Transformer (wawa_transformer.py) trained to
# translate digit sequences into letter sequences (1 -> A, …, 5 -> E). The
# script itself is not in the source; its description and its log are.
TRANSLATION = {
    "src_vocab": {0: "<PAD>", 1: "1", 2: "2", 3: "3", 4: "4", 5: "5"},
    "tgt_vocab": {0: "<PAD>", 1: "A", 2: "B", 3: "C", 4: "D", 5: "E", 6: "<SOS>", 7: "<EOS>"},
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
