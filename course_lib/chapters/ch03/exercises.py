"""Checkers for chapter 3's exercises (``ch03_multi_head``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
Typical mistakes (reshaping without transposing, features dealt to the heads
in the wrong order, dividing by √d_model instead of √d_k, forgetting the
biases or W^O) are recognised and named.
"""

from __future__ import annotations


import numpy as np

from ...scratch.attention import attention_scores
from ...scratch.multihead import merge_heads, split_heads
from .._check import Case, Verdict, check_by_hand, recognise, run_checker

__all__ = ["PARAMS_D_MODEL", "PARAMS_NUM_HEADS", "SCORE_D_K", "SCORE_Q_STD", "SCORE_K_STD",
           "check_mha_params", "check_score_variance", "check_split_heads", "check_merge_heads",
           "check_head_scores"]

#: The by-hand exercise: one multi-head attention layer of this width and head count.
PARAMS_D_MODEL = 256
PARAMS_NUM_HEADS = 8

#: The by-hand variance exercise: independent components with mean 0 and these standard deviations.
SCORE_D_K = 32
SCORE_Q_STD = 2.0
SCORE_K_STD = 1.0


def check_mha_params(n_params) -> Verdict:
    """Check the number of parameters of one multi-head attention layer, counted by hand.

    The layer has ``d_model = PARAMS_D_MODEL`` and ``num_heads =
    PARAMS_NUM_HEADS``, with the four projections W^Q, W^K, W^V, W^O and
    their biases, as ``course_lib.models.MultiHeadAttention`` (chapter 3).

    Args:
        n_params: one number; ``...`` (Ellipsis) means "not answered yet".
    """
    d, h = PARAMS_D_MODEL, PARAMS_NUM_HEADS
    expected = np.array(float(4 * d * d + 4 * d))
    mistakes = [
        (4 * d * d, "you left out the biases: each of the four projections also has a bias "
                    "vector of length d_model",
         "漏掉了偏置：四个投影各自还有一个长度为 d_model 的偏置向量"),
        (3 * d * d + 3 * d, "you counted W^Q, W^K and W^V but forgot the output projection W^O",
         "算了 W^Q、W^K、W^V，却忘了输出投影 W^O"),
        (3 * d * d, "you forgot the output projection W^O and the biases",
         "忘了输出投影 W^O 和偏置"),
        (h * (4 * d * d + 4 * d), "the heads do not each own a full d_model × d_model layer: "
                                  "they share the four matrices, each using a d_k-wide slice",
         "每个头并不拥有一整套 d_model × d_model 的层：它们共享四个矩阵，各用其中宽为 d_k 的一段"),
        (h * 4 * d * d, "the heads do not each own a full d_model × d_model layer: "
                        "they share the four matrices, each using a d_k-wide slice",
         "每个头并不拥有一整套 d_model × d_model 的层：它们共享四个矩阵，各用其中宽为 d_k 的一段"),
    ]
    case = Case(f"d_model = {d}, num_heads = {h}", f"d_model = {d}，头数 = {h}", (), expected,
                "count the weights and the biases of W^Q, W^K, W^V and W^O",
                "数一数 W^Q、W^K、W^V、W^O 的权重和偏置",
                diagnose=recognise(expected, [(np.array(float(w)), en, zh) for w, en, zh in mistakes],
                                    atol=0.5),
                atol=0.5, reveal=False)

    return check_by_hand("parameters by hand · 手算参数量", n_params, case)


def check_score_variance(variances) -> Verdict:
    """Check ``[Var(q·k), Var(q·k / √d_k)]`` worked out by hand (chapter 3).

    ``q`` and ``k`` have ``SCORE_D_K`` independent components with mean 0;
    the query's have standard deviation ``SCORE_Q_STD``, the key's ``SCORE_K_STD``.

    Args:
        variances: two numbers; ``...`` (Ellipsis) means "not answered yet".
    """
    d_k, var_q, var_k = SCORE_D_K, SCORE_Q_STD ** 2, SCORE_K_STD ** 2
    expected = np.array([d_k * var_q * var_k, var_q * var_k])
    mistakes = [
        (np.array([float(d_k), 1.0]),
         "these are the variances for components of variance 1: here each product q_i k_i has "
         "variance Var(q_i)·Var(k_i)",
         "这是分量方差为 1 时的结果：这里每个乘积 q_i k_i 的方差是 Var(q_i)·Var(k_i)"),
        (np.array([d_k * SCORE_Q_STD * SCORE_K_STD, SCORE_Q_STD * SCORE_K_STD]),
         "you used the standard deviations where the variances belong: Var(q_i) is the square of "
         "the standard deviation",
         "把标准差当成了方差：Var(q_i) 是标准差的平方"),
        (np.array([d_k * var_q * var_k, d_k * var_q * var_k / np.sqrt(d_k)]),
         "dividing a number by √d_k divides its variance by d_k, not by √d_k",
         "一个数除以 √d_k，它的方差要除以 d_k，而不是 √d_k"),
        (np.array([d_k * var_q * var_k, 1.0]),
         "the scaled score does not have variance 1 here: dividing by √d_k removes the factor d_k "
         "but not Var(q_i)·Var(k_i)",
         "这里缩放后的分数方差不是 1：除以 √d_k 消掉了因子 d_k，却消不掉 Var(q_i)·Var(k_i)"),
    ]
    case = Case("the two variances", "两个方差", (), expected,
                "Var(q·k) is the sum of d_k variances Var(q_i k_i) = Var(q_i)·Var(k_i)",
                "Var(q·k) 是 d_k 个方差 Var(q_i k_i) = Var(q_i)·Var(k_i) 之和",
                diagnose=recognise(expected, mistakes, atol=0.05), atol=0.05, reveal=False)

    return check_by_hand("variance of the scores by hand · 手算分数的方差", variances, case)


def _features(L: int, d_model: int) -> np.ndarray:
    """A toy matrix whose entry (pos, f) is 100·pos + f: every number says where it came from."""
    return 100.0 * np.arange(L)[:, None] + np.arange(d_model)[None, :]


def _split_mistakes(X, h):
    L, d_model = X.shape
    d_k = d_model // h
    return [
        (X.reshape(L, h, d_k),
         "you cut the features into heads but did not transpose: the result is (L, num_heads, d_k); "
         "move the head axis to the front",
         "把特征切成了多头，却没有转置：结果是 (L, num_heads, d_k)；需要把头的轴移到最前面"),
        (X.reshape(h, L, d_k),
         "you reshaped straight to (num_heads, L, d_k): the shape is right but each 'head' holds "
         "pieces of several positions. Reshape to (L, num_heads, d_k) first, then transpose",
         "直接 reshape 成了 (num_heads, L, d_k)：形状对了，但每个'头'里混着好几个位置的片段。"
         "应先 reshape 成 (L, num_heads, d_k)，再转置"),
        (X.reshape(L, d_k, h).transpose(2, 0, 1),
         "head i got the features i, i + num_heads, i + 2·num_heads, …: reshape to "
         "(L, num_heads, d_k), not (L, d_k, num_heads), so that head i gets the consecutive "
         "features i·d_k … (i+1)·d_k − 1",
         "第 i 个头拿到的是特征 i, i + num_heads, i + 2·num_heads, …：应 reshape 成 "
         "(L, num_heads, d_k) 而不是 (L, d_k, num_heads)，这样第 i 个头才拿到连续的特征 "
         "i·d_k … (i+1)·d_k − 1"),
        (split_heads(X, h)[::-1],
         "every head is right but they are in reverse order: head 1 holds the first d_k features",
         "每个头的内容都对，但顺序颠倒了：第 1 个头应是前 d_k 个特征"),
    ]


def _split_shape_diagnosis(X, h, known_slip):
    L, d_model = X.shape

    def diagnose(got):
        if np.shape(got) == (L, h, d_model // h) and (L, h) != (h, L):
            arr = np.asarray(got)
            return (f"wrong shape: got {arr.shape} = (L, num_heads, d_k); transpose to move the head "
                    "axis to the front",
                    f"形状错误：得到 {arr.shape} = (L, num_heads, d_k)；需要转置，把头的轴移到最前面")
        return known_slip(got)
    return diagnose


def check_split_heads(fn) -> Verdict:
    """Check a learner's ``split_heads(X, num_heads)`` (chapter 3).

    Args:
        fn: ``fn(X, num_heads)`` with ``X`` of shape ``(L, d_model)``, returning
            ``(num_heads, L, d_k)`` where head ``i`` holds features
            ``i*d_k : (i+1)*d_k`` of every position.
    """
    rng = np.random.default_rng(3)
    inputs = [
        ("the chapter's toy, 3 heads", "本章的小例子，3 个头", np.tile(np.arange(6.0), (2, 1)), 3),
        ("L = 4, d_model = 12, 3 heads", "L = 4，d_model = 12，3 个头", _features(4, 12), 3),
        ("L = 5, d_model = 8, 4 heads", "L = 5，d_model = 8，4 个头", rng.normal(size=(5, 8)), 4),
        ("one head", "只有 1 个头", rng.normal(size=(3, 6)), 1),
        ("d_k = 1", "d_k = 1", rng.normal(size=(3, 4)), 4),
    ]
    cases = []
    for en, zh, X, h in inputs:
        expected = split_heads(X, h)
        known_slip = recognise(expected, _split_mistakes(X, h))
        cases.append(Case(en, zh, (X, h), expected,
                          "head i holds features i·d_k … (i+1)·d_k − 1 of every position",
                          "第 i 个头包含每个位置的特征 i·d_k … (i+1)·d_k − 1",
                          diagnose=_split_shape_diagnosis(X, h, known_slip)))
    return run_checker("split_heads · 拆分多头", fn, cases)


def check_merge_heads(fn) -> Verdict:
    """Check a learner's ``merge_heads(H)``, the inverse of ``split_heads`` (chapter 3).

    Args:
        fn: ``fn(H)`` with ``H`` of shape ``(num_heads, L, d_k)``, returning
            ``(L, num_heads * d_k)``: the heads concatenated along the features.
    """
    rng = np.random.default_rng(4)
    inputs = [
        ("the chapter's toy, 3 heads", "本章的小例子，3 个头", split_heads(np.tile(np.arange(6.0), (2, 1)), 3)),
        ("4 heads, L = 5, d_k = 3", "4 个头，L = 5，d_k = 3", split_heads(_features(5, 12), 4)),
        ("2 heads, L = 3, d_k = 4", "2 个头，L = 3，d_k = 4", rng.normal(size=(2, 3, 4))),
        ("one head", "只有 1 个头", rng.normal(size=(1, 4, 5))),
    ]
    cases = []
    for en, zh, H in inputs:
        h, L, d_k = H.shape
        expected = merge_heads(H)
        mistakes = [
            (H.reshape(L, h * d_k),
             "you reshaped without transposing first: move the head axis back next to the features "
             "(num_heads, L, d_k) → (L, num_heads, d_k), then reshape",
             "没有先转置就 reshape 了：应先把头的轴移回特征旁边 (num_heads, L, d_k) → "
             "(L, num_heads, d_k)，再 reshape"),
            (H.transpose(1, 2, 0).reshape(L, h * d_k),
             "the heads are interleaved feature by feature: the result must be head 1's features, "
             "then head 2's, … (transpose to (L, num_heads, d_k), not (L, d_k, num_heads))",
             "各头的特征被逐个交错了：结果应是头 1 的全部特征，接着头 2 的，…"
             "（转置成 (L, num_heads, d_k)，而不是 (L, d_k, num_heads)）"),
        ]
        cases.append(Case(en, zh, (H,), expected,
                          "merging undoes split_heads: transpose, then reshape",
                          "合并是 split_heads 的逆操作：先转置，再 reshape",
                          diagnose=recognise(expected, mistakes)))
    return run_checker("merge_heads · 合并多头", fn, cases)


def check_head_scores(fn) -> Verdict:
    """Check ``head_scores(Q, K, num_heads)``: every head's scaled scores at once (chapter 3).

    Args:
        fn: ``fn(Q, K, num_heads)`` with ``Q (L_q, d_model)`` and ``K (L_k,
            d_model)``, returning ``(num_heads, L_q, L_k)``: head ``i``'s
            ``Q_i K_iᵀ / √d_k`` with ``d_k = d_model / num_heads``.
    """
    rng = np.random.default_rng(6)
    inputs = [
        ("L_q = 3, L_k = 5, d_model = 12, 3 heads", "L_q = 3，L_k = 5，d_model = 12，3 个头",
         rng.normal(size=(3, 12)), rng.normal(size=(5, 12)), 3),
        ("L_q = L_k = 4, d_model = 16, 4 heads", "L_q = L_k = 4，d_model = 16，4 个头",
         rng.normal(size=(4, 16)), rng.normal(size=(4, 16)), 4),
        ("one head", "只有 1 个头", rng.normal(size=(2, 4)), rng.normal(size=(3, 4)), 1),
    ]
    cases = []
    for en, zh, Q, K, h in inputs:
        Qh, Kh = split_heads(Q, h), split_heads(K, h)
        raw = Qh @ np.swapaxes(Kh, -1, -2)
        d_model = Q.shape[-1]
        expected = attention_scores(Qh, Kh)
        mistakes = [
            (raw / np.sqrt(d_model),
             "you divided by √d_model: each head works in d_k = d_model / num_heads dimensions, "
             "so divide by √d_k",
             "除以了 √d_model：每个头在 d_k = d_model / num_heads 维中工作，应除以 √d_k"),
            (raw, "the scores are not scaled: divide by √d_k", "分数没有缩放：要除以 √d_k"),
            (np.swapaxes(expected, -1, -2),
             "each head's scores are transposed: rows are queries, columns are keys (Q_i K_iᵀ)",
             "每个头的分数被转置了：行对应查询，列对应键（Q_i K_iᵀ）"),
        ]
        cases.append(Case(en, zh, (Q, K, h), expected,
                          "split Q and K into heads, then Q_h @ swapaxes(K_h, -1, -2) / √d_k",
                          "先把 Q、K 拆成多头，再算 Q_h @ swapaxes(K_h, -1, -2) / √d_k",
                          diagnose=recognise(expected, mistakes)))
    return run_checker("scores of all heads · 所有头的分数", fn, cases)
