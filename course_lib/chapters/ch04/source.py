"""Chapter 4's positional-encoding tables from the source documents."""

from __future__ import annotations

import numpy as np

from .._claims import Claim

__all__ = ["PE_TEST", "PE_DEMO", "PE_REF10", "PE_D4", "PE_DEMO_SETTINGS", "PE_DEMO_FREQUENCY",
           "PE_REF10_OBSERVATION", "PE_TEST3_HEADING"]

# --- Source "pe_tests": the positional-encoding test logs (chapter 4) ---
# The logs are pasted below as printed; ``_grid`` drops each row's label and
# keeps the numbers as strings, in reading order.

def _grid(text: str, skip: int = 1) -> tuple:
    """The numbers of a printed table, row by row, without the first ``skip`` cells."""
    return tuple(c for line in text.strip().splitlines() for c in line.split()[skip:])


# positional_encoding_test.py (d_model = 512, max_len = 100, float32 PyTorch).
PE_TEST = {
    "d_model": 512,
    "max_len": 100,
    "input_shape": (10, 2, 512),         # test 1: (L, B, d_model), sequence-first
    "pairs": [(0, 1), (0, 2), (0, 5), (0, 10), (5, 6), (5, 10), (10, 20)],
    "dims": [0, 1, 2, 3, 10, 11],        # test 3's columns
    "d_models": [64, 128, 256, 512],     # test 7's rows
    "claims": {
        "length_changed": Claim("pe_tests", "test 1: 位置编码是否改变了序列长度", ("True",)),
        "cosine5": Claim("pe_tests", "test 2: cosine similarity of positions 0–4", _grid("""
            位置0: 1.000 0.973 0.905 0.827 0.768
            位置1: 0.973 1.000 0.973 0.905 0.827
            位置2: 0.905 0.973 1.000 0.973 0.905
            位置3: 0.827 0.905 0.973 1.000 0.973
            位置4: 0.768 0.827 0.905 0.973 1.000""")),
        "dims": Claim("pe_tests", "test 3: dims 0, 1, 2, 3, 10, 11 (heading: 前20个位置)", _grid("""
            pos_0  0.000   1.000   0.000   1.000   0.000   1.000
            pos_1  0.841   0.540   0.822   0.570   0.742   0.671
            pos_2  0.909   -0.416  0.936   -0.351  0.995   -0.100
            pos_3  0.141   -0.990  0.245   -0.970  0.594   -0.805
            pos_4  -0.757  -0.654  -0.657  -0.754  -0.199  -0.980
            pos_5  -0.959  0.284   -0.994  0.111   -0.860  -0.510
            pos_6  -0.279  0.960   -0.475  0.880   -0.955  0.295
            pos_7  0.657   0.754   0.452   0.892   -0.422  0.907
            pos_8  0.989   -0.146  0.991   0.136   0.389   0.921
            pos_9  0.412   -0.911  0.676   -0.737  0.944   0.329""")),
        "pair_euclid": Claim("pe_tests", "test 5: Euclidean distance",
                             ("3.714", "6.967", "11.524", "12.823", "3.714", "11.524", "12.823")),
        "pair_cosine": Claim("pe_tests", "test 5: cosine similarity",
                             ("0.973", "0.905", "0.741", "0.679", "0.973", "0.741", "0.679")),
        "pos5_manual": Claim("pe_tests", "test 6: 预期值(手动)", (
            "-0.958924", "0.283662", "-0.993855", "0.110692",
            "-0.998229", "-0.059494", "-0.975027", "-0.222086")),
        "pos5_model": Claim("pe_tests", "test 6: 实际值(模型)", (
            "-0.958924", "0.283662", "-0.993855", "0.110692",
            "-0.998229", "-0.059494", "-0.975027", "-0.222086")),
        "pos5_error": Claim("pe_tests", "test 6: 误差", (
            "0.00000002", "0.00000001", "0.00000002", "0.00000011",
            "0.00000002", "0.00000004", "0.00000005", "0.00000008")),
        "d_model_cmp": Claim("pe_tests", "test 7: position 10, dims 0–3", _grid("""
            64      -0.5440         -0.8391         0.9376          0.3476
            128     -0.5440         -0.8391         0.6926          -0.7213
            256     -0.5440         -0.8391         0.1188          -0.9929
            512     -0.5440         -0.8391         -0.2200         -0.9755""")),
    },
}

# simple_pe_demo.py (d_model = 8, max_len = 10, float32 PyTorch and NumPy).
PE_DEMO = {
    "d_model": 8,
    "max_len": 10,
    "word": np.array([0.92126817, -0.7753326, -1.0703268, 0.02666496,
                      2.203629, -0.14231408, 0.878323, 0.92135483], dtype=np.float32),
    "word_positions": [0, 2, 5],
    "claims": {
        "table": Claim("pe_tests", "simple_pe_demo: d_model=8 table", _grid("""
            pos_0    0.000   1.000   0.000   1.000   0.000   1.000   0.000   1.000
            pos_1    0.841   0.540   0.100   0.995   0.010   1.000   0.001   1.000
            pos_2    0.909  -0.416   0.199   0.980   0.020   1.000   0.002   1.000
            pos_3    0.141  -0.990   0.296   0.955   0.030   1.000   0.003   1.000
            pos_4   -0.757  -0.654   0.389   0.921   0.040   0.999   0.004   1.000
            pos_5   -0.959   0.284   0.479   0.878   0.050   0.999   0.005   1.000
            pos_6   -0.279   0.960   0.565   0.825   0.060   0.998   0.006   1.000
            pos_7    0.657   0.754   0.644   0.765   0.070   0.998   0.007   1.000
            pos_8    0.989  -0.146   0.717   0.697   0.080   0.997   0.008   1.000
            pos_9    0.412  -0.911   0.783   0.622   0.090   0.996   0.009   1.000""")),
        "pos3_manual": Claim("pe_tests", "simple_pe_demo: position 3, 手动计算", (
            "0.141120", "-0.989992", "0.295520", "0.955336",
            "0.029996", "0.999550", "0.003000", "0.999996")),
        "pos3_model": Claim("pe_tests", "simple_pe_demo: position 3, 模型输出", (
            "0.141120", "-0.989992", "0.295520", "0.955337",
            "0.029995", "0.999550", "0.003000", "0.999996")),
        "word_sums": Claim("pe_tests", "simple_pe_demo: word embedding + PE at 0, 2, 5", _grid("""
            位置0: 0.92126817  0.22466737 -1.0703268   1.026665    2.203629    0.8576859   0.878323    1.9213548
            位置2: 1.8305656  -1.1914794  -0.8716575   1.0067315   2.2236276   0.85748595  0.880323    1.9213529
            位置5: -0.03765613 -0.49167043 -0.59090126  0.9042475   2.2536082   0.8564362   0.883323    1.9213424""")),
    },
}

# simple_pe_demo.py, "以位置10为参考": positions 0–19 against position 10.
# The log does not say which d_model it used; chapter 4 finds it by search.
PE_REF10 = {
    "reference": 10,
    "positions": [p for p in range(20) if p != 10],
    "claims": {
        "euclid": Claim("pe_tests", "simple_pe_demo: 欧氏距离 to position 10", (
            "4.679", "4.586", "4.379", "4.180", "4.109", "4.122", "4.016", "3.581", "2.719",
            "1.472", "1.472", "2.719", "3.581", "4.016", "4.122", "4.109", "4.180", "4.379",
            "4.586")),
        "cosine": Claim("pe_tests", "simple_pe_demo: 余弦相似度 to position 10", (
            "0.658", "0.671", "0.700", "0.727", "0.736", "0.734", "0.748", "0.800", "0.884",
            "0.966", "0.966", "0.884", "0.800", "0.748", "0.734", "0.736", "0.727", "0.700",
            "0.671")),
    },
}

# --- Source "attention", §3.3: d_model = 4, positions 0 and 1 worked out ---
# (the text announces positions 0, 1 and 2 but stops after position 1).
PE_D4 = {
    "d_model": 4,
    "positions": [0, 1],
    "claims": {
        "angles": Claim("attention", "§3.3 arguments of sin/cos", (
            "0", "0", "0", "0", "1", "1", "0.01", "0.01")),
        "values": Claim("attention", "§3.3 PE(pos, j)", (
            "0", "1", "0", "1", "0.841", "0.540", "0.010", "0.999")),
    },
}

# --- What the two scripts *say* about their tables, verbatim (source "pe_tests") ---
# simple_pe_demo.py: its settings line, its third observation on the d_model = 8 table and
# its first observation on the reference-10 table; positional_encoding_test.py: test 3's heading.
PE_DEMO_SETTINGS = "简化参数: d_model=8, max_len=10"
PE_DEMO_FREQUENCY = "3. 从左到右，波动频率越来越快"
PE_REF10_OBSERVATION = "1. 离参考位置10越近的位置，欧氏距离越小，余弦相似度越大"
PE_TEST3_HEADING = "前20个位置在不同维度的编码值:"
