"""Checkers for chapter 7's exercises (``ch07_bert``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`;
it never raises, whatever the learner's code does.
"""

from __future__ import annotations

import numpy as np

from .._check import Case, Verdict, check_by_hand, count_slips, run_checker

__all__ = ["check_mlm_masking", "check_bert_embedding_params", "check_layer_params", "BERT_BASE",
           "MINILM_LAYER", "reference_mlm_masking"]

#: BERT-base's embedding sizes (Devlin et al., 2019; bert-base-uncased config).
BERT_BASE = {"vocab_size": 30522, "max_len": 512, "type_vocab_size": 2, "d_model": 768}

#: The sizes of one layer of all-MiniLM-L6-v2 (its config: hidden 384, intermediate 1536).
MINILM_LAYER = {"d_model": 384, "d_ff": 1536}


# ---------------------------------------------------------------- MLM masking

def reference_mlm_masking(ids, select_u, action_u, random_ids, mask_id, special_ids):
    """BERT's rule with the random draws given (the same rule as
    :func:`course_lib.models.mask_tokens`).

    A token is selected when ``select_u < 0.15`` and it is not special; a
    selected token becomes ``mask_id`` when ``action_u < 0.8``, ``random_ids``
    when ``0.8 <= action_u < 0.9``, and stays itself otherwise. Labels hold the
    original id at selected positions and -100 elsewhere.
    """
    ids = np.asarray(ids)
    selected = (np.asarray(select_u) < 0.15) & ~np.isin(ids, list(special_ids))
    labels = np.where(selected, ids, -100)
    a = np.asarray(action_u)
    inputs = np.where(selected & (a < 0.8), mask_id, ids)
    inputs = np.where(selected & (a >= 0.8) & (a < 0.9), random_ids, inputs)
    return inputs, labels


def _mlm_cases():
    MASK, specials = 4, (0, 1, 2, 3, 4)
    # One row that exercises every branch: positions 1-5 selected, with actions
    # [MASK], [MASK], random, keep, [MASK]; position 0 is <cls> with a small u.
    ids1 = np.array([2, 10, 11, 12, 13, 14, 15, 3])
    sel1 = np.array([0.01, 0.10, 0.05, 0.12, 0.14, 0.02, 0.50, 0.03])
    act1 = np.array([0.50, 0.10, 0.79, 0.85, 0.95, 0.30, 0.20, 0.10])
    rnd1 = np.array([20, 21, 22, 23, 24, 25, 26, 27])
    rng = np.random.default_rng(7)
    ids2 = rng.integers(5, 40, size=(3, 10))
    ids2[:, 0], ids2[:, -1] = 2, 3
    ids2[2, 7:] = 0                                         # padding
    sel2, act2 = rng.random((3, 10)), rng.random((3, 10))
    sel2[2, 8] = 0.05                                       # a <pad> drawn: it must stay unselected
    rnd2 = rng.integers(5, 40, size=(3, 10))
    cases = []
    for name_en, name_zh, args in (
            ("every branch of the rule", "规则的每个分支", (ids1, sel1, act1, rnd1, MASK, specials)),
            ("a padded batch (B, L)", "带填充的批量 (B, L)", (ids2, sel2, act2, rnd2, MASK, specials))):
        exp = reference_mlm_masking(*args)
        cases.append(Case(name_en, name_zh, args, exp,
                          "selected = select_u < 0.15 and not special; then [MASK] if action_u < 0.8, "
                          "random id if action_u < 0.9, else keep",
                          "selected = select_u < 0.15 且不是特殊词元；action_u < 0.8 换成 [MASK]，"
                          "< 0.9 换成随机 id，否则保持不变",
                          diagnose=_mlm_diagnose(args, exp), atol=0))
    return cases


def _mlm_diagnose(args, expected):
    ids, sel, act, rnd, mask_id, specials = args
    selected_any = np.asarray(sel) < 0.15

    def check(got):
        inputs, labels = (np.asarray(g) for g in got)
        if inputs.shape != ids.shape or labels.shape != ids.shape:
            return None
        if (labels == ids).all():
            return ("labels must be -100 at positions that were not selected "
                    "(the loss ignores them)",
                    "未被选中的位置标签必须是 -100（损失函数忽略它们）")
        special = np.isin(ids, list(specials))
        if (labels[special & selected_any] != -100).any() or \
                (inputs[special] != ids[special]).any():
            return ("a special token (<cls>, <sep>, <pad>, …) was selected: special tokens are "
                    "never masked or predicted",
                    "选中了特殊词元（<cls>、<sep>、<pad> 等）：特殊词元从不被遮挡，也不参与预测")
        if np.array_equal(inputs, expected[0]) and not np.array_equal(labels, expected[1]):
            return ("the inputs are right but the labels are not: the label is the original id "
                    "at every selected position, including the kept ones",
                    "输入对了，标签不对：每个被选中的位置（包括保持不变的）标签都是原来的 id")
        chosen = labels != -100
        if chosen.any() and (inputs[chosen] == mask_id).all() and \
                not (expected[0][chosen] == mask_id).all():
            return ("every selected token became [MASK]: only 80 % do; 10 % get a random id "
                    "and 10 % stay unchanged",
                    "所有被选中的词元都换成了 [MASK]：应只有 80 %；10 % 换成随机 id，10 % 保持不变")
        return None
    return check


def check_mlm_masking(fn) -> Verdict:
    """Check BERT's masking rule with the random numbers given (chapter 7).

    Args:
        fn: ``fn(ids, select_u, action_u, random_ids, mask_id, special_ids)``
            returning ``(inputs, labels)``, both of the shape of ``ids``;
            ``select_u`` and ``action_u`` are uniform numbers in [0, 1) of that
            shape and ``random_ids`` the replacement ids to use.
    """
    return run_checker("MLM masking · MLM 遮挡规则", fn, _mlm_cases())


# ---------------------------------------------------------------- BERT-base by hand

def check_bert_embedding_params(answer) -> Verdict:
    """Check a hand count of BERT-base's embedding-layer parameters (chapter 7).

    Args:
        answer: one integer: token, position and segment embeddings plus the
            LayerNorm after them (its weight and bias); ``...`` means "not
            answered yet".
    """
    V, P, S, d = (BERT_BASE[k] for k in ("vocab_size", "max_len", "type_vocab_size", "d_model"))
    expected = np.array(float(V * d + P * d + S * d + 2 * d))
    mistakes = {
        V * d + P * d + 2 * d: ("2 × 768 are missing: the segment (token type) embeddings "
                                "or the LayerNorm after the embeddings (both have 2 × 768)",
                                "少了 2 × 768：句段（token type）嵌入或嵌入之后的 LayerNorm"
                                "（两者都是 2 × 768）"),
        V * d + S * d + 2 * d: ("you left out the position embeddings (512 × 768)",
                                "漏掉了位置嵌入（512 × 768）"),
        V * d: ("that is only the token embeddings: add positions, segments and the LayerNorm",
                "这只是词元嵌入：还要加上位置、句段嵌入和 LayerNorm"),
        V * d + P * d + S * d + d: ("a LayerNorm has two vectors of 768: a weight and a bias",
                                    "LayerNorm 有两个 768 维向量：权重和偏置"),
    }

    diagnose = count_slips(mistakes)

    case = Case("BERT-base embedding layer", "BERT-base 嵌入层", (), expected,
                "count every table of the embedding layer, one row of 768 per entry, and the "
                "LayerNorm after it", "数一数嵌入层的每一张表（每个条目一行 768 个数）以及其后的 LayerNorm",
                diagnose=diagnose, atol=0.5, reveal=False)
    return check_by_hand("BERT-base embeddings by hand · 手算 BERT-base 嵌入参数", answer, case)


# ---------------------------------------------------------------- one MiniLM layer by hand

def check_layer_params(answer) -> Verdict:
    """Check a hand count of the parameters of one MiniLM layer (chapter 7).

    Args:
        answer: one integer: W_Q, W_K, W_V, W_O and their biases, the two
            feed-forward layers and their biases, and the two LayerNorms (a
            weight and a bias each); ``...`` means "not answered yet".
    """
    d, f = MINILM_LAYER["d_model"], MINILM_LAYER["d_ff"]
    attention, ffn, norms = 4 * (d * d + d), (d * f + f) + (f * d + d), 4 * d
    expected = np.array(float(attention + ffn + norms))
    mistakes = {
        4 * d * d + 2 * d * f + norms: ("the biases are missing: each of the six linear layers has one",
                                        "少了偏置：六个线性层各有一个偏置"),
        attention + ffn: ("the two LayerNorms are missing: a weight and a bias of 384 each",
                          "少了两个 LayerNorm：各有 384 维的权重和偏置"),
        attention + ffn + 2 * d: ("a LayerNorm has two vectors: a weight and a bias, and the layer has two LayerNorms",
                                  "LayerNorm 有两个向量（权重和偏置），而这一层有两个 LayerNorm"),
        3 * (d * d + d) + ffn + norms: ("W_O is missing: attention has four projections, W_Q, W_K, W_V and W_O",
                                        "少了 W_O：注意力有四个投影，W_Q、W_K、W_V 和 W_O"),
        attention + norms: ("the feed-forward network is missing: 384 × 1536 and 1536 × 384, with their biases",
                            "少了前馈网络：384 × 1536 和 1536 × 384，以及它们的偏置"),
    }

    diagnose = count_slips(mistakes)

    case = Case("one MiniLM layer", "一个 MiniLM 层", (), expected,
                "attention: four d × d matrices and four biases; feed-forward: d × d_ff and d_ff × d with "
                "biases; two LayerNorms", "注意力：四个 d × d 矩阵和四个偏置；前馈网络：d × d_ff 和 d_ff × d 及其偏置；"
                "两个 LayerNorm", diagnose=diagnose, atol=0.5, reveal=False)
    return check_by_hand("one MiniLM layer by hand · 手算一个 MiniLM 层", answer, case)
