"""Checkers for chapter 7's exercises (``ch07_bert_gpt``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`;
it never raises, whatever the learner's code does.
"""

from __future__ import annotations

import numpy as np

from .._check import Case, Verdict, check_by_hand, run_checker
from ..ch05.exercises import check_causal_mask  # the same rule as chapter 5's, for a decoder-only model

__all__ = ["check_mlm_masking", "check_top_k", "check_causal_mask",
           "check_bert_embedding_params", "BERT_BASE", "reference_mlm_masking",
           "reference_top_k"]

#: BERT-base's embedding sizes (Devlin et al., 2019; bert-base-uncased config).
BERT_BASE = {"vocab_size": 30522, "max_len": 512, "type_vocab_size": 2, "d_model": 768}


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


# ---------------------------------------------------------------- top-k sampling

def reference_top_k(logits, k, temperature):
    """Sampling probabilities: ``softmax(logits / temperature)`` over the ``k``
    largest logits of each row, 0 elsewhere (ties at the k-th value are kept)."""
    z = np.asarray(logits, dtype=float) / temperature
    kth = np.sort(z, axis=-1)[..., ::-1][..., min(k, z.shape[-1]) - 1:min(k, z.shape[-1])]
    z = np.where(z >= kth, z, -np.inf)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _top_k_diagnose(logits, k, temperature):
    def check(got):
        got = np.asarray(got, dtype=float)
        if got.shape != np.shape(logits) or not np.isfinite(got).all():
            return None
        if np.allclose(got, reference_top_k(logits, k + 1, temperature), atol=1e-6) and \
                k < np.shape(logits)[-1]:
            return (f"you kept {k + 1} tokens: keep exactly the k = {k} largest",
                    f"你保留了 {k + 1} 个词元：应只保留最大的 k = {k} 个")
        if temperature != 1 and np.allclose(got, reference_top_k(logits, k, 1.0), atol=1e-6):
            return ("the temperature was not applied: divide the logits by it before the softmax",
                    "没有使用温度：softmax 之前要把 logits 除以温度")
        if not np.allclose(got.sum(axis=-1), 1.0, atol=1e-6):
            return ("the probabilities do not sum to 1: renormalise over the k kept tokens",
                    "概率之和不为 1：要在保留的 k 个词元上重新归一化")
        return None
    return check


def check_top_k(fn) -> Verdict:
    """Check ``top_k_probs(logits, k, temperature)`` (chapter 7).

    Args:
        fn: returns the sampling distribution of the same shape as ``logits``
            (``(V,)`` or ``(B, V)``): ``softmax(logits / temperature)``
            restricted to the ``k`` largest logits of each row, zeros elsewhere.
    """
    rng = np.random.default_rng(3)
    l1 = np.array([2.0, -1.0, 0.5, 3.0, 1.0])
    l2 = rng.normal(size=(2, 6)) * 2
    cases = []
    for name_en, name_zh, args in (
            ("one row, k = 2, T = 1", "一行，k = 2，T = 1", (l1, 2, 1.0)),
            ("a batch, k = 3, T = 0.5", "一批，k = 3，T = 0.5", (l2, 3, 0.5)),
            ("k = 1 is greedy", "k = 1 即贪心解码", (l1, 1, 1.0)),
            ("k ≥ V keeps every token", "k ≥ V 保留全部词元", (l1, 10, 2.0))):
        cases.append(Case(name_en, name_zh, args, reference_top_k(*args),
                          "divide by T, keep the k largest logits (others get probability 0), "
                          "softmax over those", "先除以 T，保留最大的 k 个 logits（其余概率为 0），"
                          "再在它们上面做 softmax", diagnose=_top_k_diagnose(*args)))
    return run_checker("top-k sampling · top-k 采样", fn, cases)


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

    def diagnose(got):
        try:
            value = float(np.asarray(got, dtype=float))
        except (TypeError, ValueError):
            return None
        return mistakes.get(int(value)) if value.is_integer() else None

    case = Case("BERT-base embedding layer", "BERT-base 嵌入层", (), expected,
                "count every table of the embedding layer, one row of 768 per entry, and the "
                "LayerNorm after it", "数一数嵌入层的每一张表（每个条目一行 768 个数）以及其后的 LayerNorm",
                diagnose=diagnose, atol=0.5, reveal=False)
    return check_by_hand("BERT-base embeddings by hand · 手算 BERT-base 嵌入参数", answer, case)
