"""Checkers for chapter 1's exercises (``ch01_why_attention``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
Typical mistakes are recognised and named: in the gradient through a scalar
RNN, a forgotten ``w`` or tanh slope, one factor too many, the slope taken at
the wrong step; in the additive scores, a missing tanh, a transposed weight
matrix, a softmax applied already; in the token accuracy, ``<pad>`` or
``<eos>`` counted, lengths off by one, percent instead of fractions.
"""

from __future__ import annotations

import numpy as np

from ...scratch.attention import softmax
from .._check import Case, Verdict, check_by_hand, recognise, run_checker, same

__all__ = ["GRAD_W", "GRAD_X", "ACC_PRED", "ACC_TARGET", "check_gradient_factor",
           "check_additive_scores", "check_accuracy_by_length"]

#: The by-hand exercise: a scalar RNN h_t = tanh(GRAD_W · h_{t-1} + x_t), h_0 = 0, inputs GRAD_X.
GRAD_W = 1.5
GRAD_X = np.array([0.5, 0.0, 0.0, 0.0])

# Token ids of chapter 1's tasks (course_lib.labs.seq_tasks): <pad>, <sos>, <eos>; letters are >= 3.
_PAD, _EOS, _FIRST_LETTER = 0, 2, 3

#: The accuracy exercise's small batch: predictions and targets (tgt_out) as in chapter 1,
#: each target row its letters, then <eos> (2), then <pad> (0).
ACC_TARGET = np.array([[3, 4, 5, 2, 0],
                       [4, 4, 2, 0, 0],
                       [5, 3, 3, 2, 0],
                       [3, 5, 2, 0, 0]])
ACC_PRED = np.array([[3, 4, 4, 2, 0],
                     [4, 3, 2, 0, 0],
                     [5, 3, 3, 3, 4],
                     [3, 5, 4, 0, 0]])


# --- the gradient through a scalar RNN, by hand ----------------------------------------------

def _scalar_rnn_states(w: float, x) -> np.ndarray:
    """``[h_0, h_1, …, h_T]`` of ``h_t = tanh(w h_{t-1} + x_t)`` from ``h_0 = 0``."""
    h = [0.0]
    for x_t in x:
        h.append(float(np.tanh(w * h[-1] + x_t)))
    return np.array(h)


def _gradient_variants(w: float, x) -> dict:
    """The right factor ∂h_T/∂h_1 and the typical wrong ones, by name."""
    h, T = _scalar_rnn_states(w, x), len(x)
    steps = range(2, T + 1)
    return {
        "right": np.prod([w * (1 - h[t] ** 2) for t in steps]),
        "no_w": np.prod([1 - h[t] ** 2 for t in steps]),
        "no_slope": w ** (T - 1),
        "extra_factor": np.prod([w * (1 - h[t] ** 2) for t in range(1, T + 1)]),
        "previous_state": np.prod([w * (1 - h[t - 1] ** 2) for t in steps]),
        "no_square": np.prod([w * (1 - h[t]) for t in steps]),
        "sum": sum(w * (1 - h[t] ** 2) for t in steps),
    }


def check_gradient_factor(value) -> Verdict:
    """Check ``∂h_T/∂h_1`` of the scalar RNN ``GRAD_W``, ``GRAD_X``, worked out by hand (chapter 1).

    The RNN is ``h_t = tanh(GRAD_W · h_{t-1} + x_t)`` with ``h_0 = 0`` and the
    inputs ``x_1 … x_T = GRAD_X``; the answer is the product of the ``T − 1``
    factors ``w (1 − h_t²)``, ``t = 2 … T``.

    Args:
        value: one number, to three decimals; ``...`` (Ellipsis) means
            "not answered yet".
    """
    v = _gradient_variants(GRAD_W, GRAD_X)
    T = len(GRAD_X)
    expected = np.array(v["right"])
    mistakes = [
        (v["no_slope"], "this is w^(T−1): each factor also holds the slope of tanh, 1 − h_t²",
         "这是 w^(T−1)：每个因子还包含 tanh 的斜率 1 − h_t²"),
        (v["no_w"], "you left out w: each step multiplies by w (1 − h_t²), the weight times the slope of tanh",
         "漏掉了 w：每一步乘的是 w (1 − h_t²)，即权重乘以 tanh 的斜率"),
        (v["extra_factor"], f"one factor too many: from h_1 to h_{T} there are {T - 1} steps, "
                            f"t = 2 … {T}",
         f"多乘了一个因子：从 h_1 到 h_{T} 只有 {T - 1} 步，t = 2 … {T}"),
        (v["previous_state"], "the slope of step t is taken at the new state: 1 − h_t², not 1 − h_(t−1)²",
         "第 t 步的斜率取在新状态上：是 1 − h_t²，不是 1 − h_(t−1)²"),
        (v["no_square"], "the slope of tanh is 1 − tanh², so 1 − h_t², not 1 − h_t",
         "tanh 的导数是 1 − tanh²，所以是 1 − h_t²，不是 1 − h_t"),
        (v["sum"], "the chain rule multiplies the factors of the steps; you added them",
         "链式法则把各步的因子相乘；你把它们加起来了"),
    ]
    case = Case(f"∂h_{T}/∂h_1, w = {GRAD_W:g}", f"∂h_{T}/∂h_1，w = {GRAD_W:g}", (), expected,
                "first compute the states h_1 … h_T, then multiply w (1 − h_t²) for t = 2 … T",
                "先算出状态 h_1 … h_T，再把 t = 2 … T 的 w (1 − h_t²) 相乘",
                diagnose=recognise(expected, [(np.array(w), en, zh) for w, en, zh in mistakes],
                                    atol=0.005),
                atol=0.005, reveal=False)

    return check_by_hand("gradient through the RNN by hand · 手算穿过 RNN 的梯度", value, case)


# --- additive scores --------------------------------------------------------------------------

def _scores(s, H, W_s, W_h, v, *, tanh=True, with_s=True):
    pre = (s @ W_s if with_s else 0.0) + H @ W_h
    return (np.tanh(pre) if tanh else pre) @ v


def _score_mistakes(s, H, W_s, W_h, v):
    e = _scores(s, H, W_s, W_h, v)
    out = [
        (softmax(e), "these are the weights α = softmax(e): the exercise asks for the scores e, "
                     "before the softmax",
         "这是权重 α = softmax(e)：题目要的是 softmax 之前的分数 e"),
        (_scores(s, H, W_s, W_h, v, tanh=False),
         "the tanh is missing: e_j = vᵀ tanh(W_s s + W_h h_j)",
         "少了 tanh：e_j = vᵀ tanh(W_s s + W_h h_j)"),
        (_scores(s, H, W_s, W_h, v, with_s=False),
         "the decoder state s is missing: each score compares s with h_j",
         "少了解码器状态 s：每个分数都要比较 s 与 h_j"),
        (np.tanh(s @ W_s + H @ W_h).sum(axis=-1),
         "you summed the features of tanh(…): weight them with v (a dot product)",
         "你把 tanh(…) 的各分量直接相加了：应该用 v 加权（做点积）"),
        (softmax(np.tanh(s @ W_s + H @ W_h), axis=0) @ v,
         "a softmax was applied inside the score: the softmax comes after, over the scores e",
         "在分数内部做了 softmax：softmax 应在之后、作用于分数 e"),
    ]
    transposed = ("W_s is transposed: vectors are rows in this book, so W_s s is written s @ W_s",
                  "W_s 被转置了：本书中向量是行向量，W_s s 写作 s @ W_s")
    if W_s.shape[0] == W_s.shape[1]:
        out.append((_scores(s, H, W_s.T, W_h, v), *transposed))
    if W_h.shape[0] == W_h.shape[1]:
        out.append((_scores(s, H, W_s, W_h.T, v),
                    "W_h is transposed: vectors are rows in this book, so W_h h_j is written H @ W_h",
                    "W_h 被转置了：本书中向量是行向量，W_h h_j 写作 H @ W_h"))
    if W_s.shape[0] == W_s.shape[1] and W_h.shape[0] == W_h.shape[1]:
        out.append((_scores(s, H, W_s.T, W_h.T, v),
                    "both weight matrices are transposed: vectors are rows in this book, so W_s s + W_h h_j "
                    "is written s @ W_s + H @ W_h",
                    "两个权重矩阵都被转置了：本书中向量是行向量，W_s s + W_h h_j 写作 s @ W_s + H @ W_h"))
    return out


def _scores_diagnosis(s, H, W_s, W_h, v):
    L, d_a = H.shape[0], W_h.shape[1]
    known_slip = recognise(_scores(s, H, W_s, W_h, v), _score_mistakes(s, H, W_s, W_h, v))

    def diagnose(got):
        if np.shape(got) == (L, d_a):
            return (f"wrong shape: got {np.shape(got)} = (L, d_a): take the dot product with v to get "
                    "one score per encoder state",
                    f"形状错误：得到 {np.shape(got)} = (L, d_a)：再与 v 做点积，才是每个编码器状态一个分数")
        return known_slip(got)
    return diagnose


def check_additive_scores(fn) -> Verdict:
    """Check a learner's ``additive_scores(s, H, W_s, W_h, v)`` (chapter 1).

    Args:
        fn: ``fn(s, H, W_s, W_h, v)`` with ``s (d_s,)``, ``H (L, d_h)``,
            ``W_s (d_s, d_a)``, ``W_h (d_h, d_a)``, ``v (d_a,)``, returning the
            ``(L,)`` scores ``e_j = vᵀ tanh(W_s s + W_h h_j)`` (rows as vectors:
            ``tanh(s @ W_s + H @ W_h) @ v``), before any softmax.
    """
    chapter = np.random.default_rng(0)      # the same numbers as the chapter's NumPy example
    s0, H0 = chapter.normal(size=4), chapter.normal(size=(5, 4))
    W_s0, W_h0, v0 = chapter.normal(size=(4, 3)), chapter.normal(size=(4, 3)), chapter.normal(size=3)
    rng = np.random.default_rng(11)
    inputs = [
        ("square weights: d_s = d_h = d_a = 3, L = 4", "方阵权重：d_s = d_h = d_a = 3，L = 4",
         (rng.normal(size=3), rng.normal(size=(4, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 3)),
          rng.normal(size=3))),
        ("the chapter's example: d_s = d_h = 4, d_a = 3, L = 5", "本章的例子：d_s = d_h = 4，d_a = 3，L = 5",
         (s0, H0, W_s0, W_h0, v0)),
        ("d_s = 2, d_h = 5, d_a = 3, L = 6", "d_s = 2，d_h = 5，d_a = 3，L = 6",
         (rng.normal(size=2), rng.normal(size=(6, 5)), rng.normal(size=(2, 3)), rng.normal(size=(5, 3)),
          rng.normal(size=3))),
        ("one encoder state, L = 1", "只有一个编码器状态，L = 1",
         (rng.normal(size=3), rng.normal(size=(1, 3)), rng.normal(size=(3, 2)), rng.normal(size=(3, 2)),
          rng.normal(size=2))),
    ]
    cases = [Case(en, zh, args, _scores(*args),
                  "e = tanh(s @ W_s + H @ W_h) @ v: one score per row of H, no softmax yet",
                  "e = tanh(s @ W_s + H @ W_h) @ v：H 的每一行一个分数，先不做 softmax",
                  diagnose=_scores_diagnosis(*args))
             for en, zh, args in inputs]
    return run_checker("additive scores · 加性打分", fn, cases)


# --- token accuracy by length -----------------------------------------------------------------

def _accuracy_variants(pred, target) -> dict:
    """The right ``(lengths, accuracy)`` and the typical wrong accuracies, by name."""
    pred, target = np.asarray(pred), np.asarray(target)
    letter = target >= _FIRST_LETTER
    eos = target == _EOS
    row_len = letter.sum(axis=1)
    hit = pred == target
    lengths = np.unique(row_len)

    def per_length(scored, width=None):
        acc = []
        for L in lengths:
            rows = row_len == L
            mask = scored[rows]
            denom = mask.sum() if width is None else rows.sum() * width(L)
            acc.append((hit[rows] & mask).sum() / denom)
        return np.array(acc, dtype=float)

    T = target.shape[1]
    first = np.arange(T)[None, :] < (row_len - 1)[:, None]
    return {
        "lengths": lengths.astype(float),
        "right": per_length(letter),
        "all": per_length(np.ones_like(letter)),
        "with_eos": per_length(letter | eos),
        "with_pad": per_length(~eos),
        "padded_width": per_length(letter, width=lambda L: T),
        "first_L_minus_1": per_length(letter & first),
    }


def _accuracy_diagnosis(pred, target):
    v = _accuracy_variants(pred, target)
    lengths, right = v["lengths"], v["right"]
    mistakes = [
        (v["all"], "you scored every position, <pad> and <eos> included: score only the L letters "
                   "of each row",
         "你给每个位置都打了分，包括 <pad> 和 <eos>：每行只给它的 L 个字母打分"),
        (v["with_pad"], "you counted the <pad> positions: padding is not part of the sentence, so a "
                        "'correct' <pad> must not count",
         "你把 <pad> 位置也算进去了：填充不属于句子，预测\"对\"的 <pad> 不能计入"),
        (v["with_eos"], "you scored <eos> too: like the chapter, score only the L letters (the length "
                        "is the number of letters before <eos>)",
         "你把 <eos> 也算进去了：与本章一样，只给 L 个字母打分（长度是 <eos> 之前的字母数）"),
        (v["padded_width"], "you divided by the padded width T of the batch: a row of length L has L "
                            "scored tokens",
         "你除以了批次填充后的宽度 T：长度为 L 的行只有 L 个被评分的词元"),
        (v["first_L_minus_1"], "off by one: you scored only the first L − 1 letters; a row of length L has "
                               "its letters at positions 0 … L − 1",
         "差了一位：你只评了前 L − 1 个字母；长度为 L 的行，字母位于位置 0 … L − 1"),
        (100 * right, "these are percentages: return fractions between 0 and 1",
         "这是百分数：应返回 0 到 1 之间的比例"),
    ]
    recognise_acc = recognise(right, mistakes)

    def diagnose(got):
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return None
        got_len, got_acc = got
        if same(got_len, right, 1e-6) and same(got_acc, lengths, 1e-6):
            return ("the two results are swapped: return (lengths, accuracy)",
                    "两个结果的顺序反了：应返回 (lengths, accuracy)")
        if same(got_len, lengths + 1, 1e-6):
            return ("the lengths are one too long: <eos> is not a letter, so a row's length is the "
                    "number of letters before <eos>",
                    "长度多了 1：<eos> 不是字母，一行的长度是 <eos> 之前的字母数")
        if same(got_len, lengths - 1, 1e-6):
            return ("the lengths are one too short: a row's length is the number of letters before "
                    "<eos>, which is the index of <eos>",
                    "长度少了 1：一行的长度是 <eos> 之前的字母数，也就是 <eos> 的下标")
        if same(got_len, lengths, 1e-6):
            return recognise_acc(got_acc)
        return None
    return diagnose


def _accuracy_batch(rng, lengths, error_rate: float, babble: bool, n_symbols: int = 6):
    """Targets as ``tasks.sequence_batch`` builds them and predictions with mistakes.

    ``babble``: the predictions go on writing letters after ``<eos>`` instead of ``<pad>``.
    """
    T = max(lengths) + 1
    target = np.full((len(lengths), T), _PAD)
    pred = np.full((len(lengths), T), _PAD)
    for b, L in enumerate(lengths):
        letters = rng.integers(_FIRST_LETTER, _FIRST_LETTER + n_symbols, size=L)
        target[b, :L], target[b, L] = letters, _EOS
        wrong = rng.random(L) < error_rate
        pred[b, :L] = np.where(wrong, _FIRST_LETTER + (letters - _FIRST_LETTER + 1) % n_symbols, letters)
        pred[b, L] = _EOS if rng.random() < 0.7 else rng.integers(_FIRST_LETTER, _FIRST_LETTER + n_symbols)
        if babble:
            pred[b, L + 1:] = rng.integers(_FIRST_LETTER, _FIRST_LETTER + n_symbols, size=T - L - 1)
    return pred, target


def check_accuracy_by_length(fn) -> Verdict:
    """Check a learner's ``accuracy_by_length(pred, target)`` (chapter 1).

    Args:
        fn: ``fn(pred, target)`` with two integer arrays ``(B, T)``: each
            ``target`` row holds ``L`` letters (ids ``>= 3``), then ``<eos>``
            (id 2), then ``<pad>`` (id 0), as ``tgt_out`` in chapter 1.
            Returns ``(lengths, accuracy)``: the distinct lengths ``L`` in
            increasing order, and for each the share of the letters of the
            rows of that length that ``pred`` gets right (``<eos>`` and
            ``<pad>`` are not scored), as a fraction in ``[0, 1]``.
    """
    rng = np.random.default_rng(12)
    inputs = [
        ("the batch printed above", "上面打印的批次", (ACC_PRED, ACC_TARGET)),
        ("30 rows of lengths 5 to 9", "30 行，长度 5 到 9",
         _accuracy_batch(rng, list(rng.integers(5, 10, size=30)), 0.3, babble=False)),
        ("predictions that go on after <eos>", "预测在 <eos> 之后还在继续",
         _accuracy_batch(rng, [3, 6, 6, 8, 3, 8, 4], 0.2, babble=True)),
        ("a single row, no padding", "只有一行，没有填充",
         _accuracy_batch(rng, [7], 0.4, babble=False)),
    ]
    cases = []
    for en, zh, (pred, target) in inputs:
        v = _accuracy_variants(pred, target)
        cases.append(Case(en, zh, (pred, target), (v["lengths"], v["right"]),
                          "a row's length L is its number of letters (ids >= 3); score those L tokens only",
                          "一行的长度 L 是它的字母数（id >= 3）；只给这 L 个词元打分",
                          diagnose=_accuracy_diagnosis(pred, target)))
    return run_checker("token accuracy by length · 按长度统计的词元准确率", fn, cases)
