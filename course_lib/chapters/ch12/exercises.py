"""Checkers for chapter 12's exercises (``ch12_speech``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
Near misses are recognised and named: frames counted after one convolution
or rounded down, the mel scale with the natural logarithm or without its
``1 +``, a causal mask turned the wrong way or without its diagonal (or no
mask at all, the source's bug), an "edit distance" that only compares
positions.
"""

from __future__ import annotations

import math

import numpy as np

from ...analysis.mel import hz_to_mel
from ...labs.speech import edit_distance
from ...scratch.masks import causal_mask
from .._check import Case, Verdict, check_by_hand, recognise, run_checker

__all__ = ["T_FRAMES", "check_frames_by_hand", "check_hz_to_mel", "check_causal_mask", "check_edit_distance"]

#: The by-hand exercise: an utterance of T_FRAMES log-mel frames enters the two stride-2 convolutions.
T_FRAMES = 157


def check_frames_by_hand(answer) -> Verdict:
    """Check the number of encoder positions left from :data:`T_FRAMES` frames (chapter 12).

    Args:
        answer: one integer; ``...`` means "not answered yet".
    """
    T = T_FRAMES
    once = (T - 1) // 2 + 1
    expected = np.array(float((once - 1) // 2 + 1))
    mistakes = [
        (float(T // 4), "rounded down: a convolution with kernel 3, stride 2 and padding 1 keeps "
                        "ceil(T / 2) positions, so round up after each convolution",
         "向下取整了：核为 3、步幅 2、填充 1 的卷积保留 ceil(T / 2) 个位置，每次卷积后都要向上取整"),
        (float(once), "this is after one convolution: the model has two, each halving the frames",
         "这是一次卷积之后的结果：模型有两次卷积，每次都把帧数减半"),
        (float(T // 2), "this is T / 2 rounded down, after one convolution: there are two, and each rounds up",
         "这是一次卷积后向下取整的 T / 2：共有两次卷积，而且每次都向上取整"),
        (float(T), "the frames are not subsampled at all: each stride-2 convolution halves them",
         "帧数完全没有减少：每个步幅为 2 的卷积都把帧数减半"),
    ]
    case = Case(f"T = {T} frames", f"T = {T} 帧", (), expected,
                "each convolution (kernel 3, stride 2, padding 1) keeps floor((T - 1) / 2) + 1 = ceil(T / 2)",
                "每次卷积（核 3、步幅 2、填充 1）保留 floor((T - 1) / 2) + 1 = ceil(T / 2) 个位置",
                diagnose=recognise(expected, mistakes, atol=0.25), atol=0.25, reveal=False)
    return check_by_hand("encoder positions by hand · 手算编码器位置数", answer, case)


def check_hz_to_mel(fn) -> Verdict:
    """Check a learner's ``hz_to_mel(f)``: HTK's mel scale ``2595 log10(1 + f / 700)`` (chapter 12).

    Args:
        fn: ``fn(f)`` for a NumPy array ``f`` of frequencies in Hz, returning their mels.
    """
    inputs = [("700 Hz", "700 Hz", np.array([700.0])), ("a few frequencies", "几个频率",
                                                        np.array([0.0, 100.0, 1000.0, 4000.0, 8000.0]))]
    cases = []
    for en, zh, f in inputs:
        expected = hz_to_mel(f)
        mistakes = [
            (2595 * np.log(1 + f / 700), "natural logarithm with the factor 2595: 2595 goes with log10 "
                                        "(with ln the factor is 1127)",
             "自然对数配上了因子 2595：2595 对应 log10（用 ln 时因子是 1127）"),
            (2595 * np.log10(np.maximum(f, 1e-300) / 700), "the 1 + is missing: mel(f) = 2595 log10(1 + f / 700), "
                                                           "so 0 Hz is 0 mel",
             "少了 1 +：mel(f) = 2595 log10(1 + f / 700)，所以 0 Hz 是 0 mel"),
            (700 * (10 ** (f / 2595) - 1), "this is the inverse, mel to Hz", "这是反函数：从 mel 到 Hz"),
        ]
        cases.append(Case(en, zh, (f,), expected, "2595 · log10(1 + f / 700)", "2595 · log10(1 + f / 700)",
                          diagnose=recognise(expected, mistakes, atol=1e-6)))
    return run_checker("the mel scale · mel 刻度", fn, cases)


def check_causal_mask(fn) -> Verdict:
    """Check a learner's ``causal_mask(L)``: boolean ``(L, L)``, True where query ``i`` may attend to key ``j <= i``.

    Args:
        fn: ``fn(L)`` for a positive integer ``L``.
    """
    cases = []
    for L in (2, 4, 6):
        expected = causal_mask(L).astype(float)
        mistakes = [
            (np.ones((L, L)), "every entry is True: this is no mask at all, the source's bug (each position "
                              "would read the tokens after it)",
             "所有元素都是 True：这等于没有掩码，正是原始资料中的错误（每个位置都会读到它后面的词元）"),
            (expected.T, "the mask is turned the wrong way: row i (the query) may see columns j <= i "
                         "(the keys before it), a lower triangle",
             "掩码方向反了：第 i 行（查询）可以看到 j <= i 的列（它之前的键），是下三角"),
            (np.tril(np.ones((L, L)), -1), "the diagonal is missing: a position may attend to itself",
             "缺了对角线：一个位置可以注意它自己"),
            (1 - expected, "True and False are swapped: True means may attend",
             "True 和 False 对调了：True 表示可以注意"),
        ]
        cases.append(Case(f"L = {L}", f"L = {L}", (L,), expected, "np.tril(np.ones((L, L), dtype=bool))",
                          "np.tril(np.ones((L, L), dtype=bool))", diagnose=recognise(expected, mistakes)))
    return run_checker("the causal mask · 因果掩码", fn, cases)


def check_edit_distance(fn) -> Verdict:
    """Check a learner's ``edit_distance(ref, hyp)``: the Levenshtein distance of two strings (chapter 12).

    Args:
        fn: ``fn(ref, hyp)`` returning the fewest insertions, deletions and substitutions.
    """
    pairs = [("same", "相同", "314", "314"), ("one substitution", "一次替换", "314", "354"),
             ("one deletion at the front", "开头删除一个", "314", "14"),
             ("one insertion in the middle", "中间插入一个", "314", "3194"),
             ("empty hypothesis", "空的识别结果", "27", ""), ("two errors", "两处错误", "9051", "0951")]
    cases = []
    for en, zh, a, b in pairs:
        expected = np.array(float(edit_distance(a, b)))
        mistakes = [
            (np.array(float(sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b)))),
             "this compares position by position: one missing digit shifts every later digit, yet it is "
             "one deletion. Use the dynamic programme d[i][j] = min(d[i-1][j] + 1, d[i][j-1] + 1, "
             "d[i-1][j-1] + [a_i ≠ b_j])",
             "这是逐位置比较：少一个数字会让后面的数字全部错位，但它只是一次删除。请用动态规划 "
             "d[i][j] = min(d[i-1][j] + 1, d[i][j-1] + 1, d[i-1][j-1] + [a_i ≠ b_j])"),
            (np.array(float(abs(len(a) - len(b)))), "only the lengths are compared: substitutions count too",
             "只比较了长度：替换也要计数"),
        ]
        cases.append(Case(en, zh, (a, b), expected, "Levenshtein distance (each edit costs 1)",
                          "Levenshtein 距离（每次编辑代价为 1）", diagnose=recognise(expected, mistakes, atol=1e-9),
                          atol=1e-9))
    return run_checker("edit distance · 编辑距离", fn, cases)
