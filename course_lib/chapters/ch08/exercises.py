"""Checkers for chapter 8's exercises (``ch08_gpt``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`;
it never raises, whatever the learner's code does.
"""

from __future__ import annotations

import math

import numpy as np

from .._check import Case, Verdict, check_by_hand, count_slips, run_checker
from ..ch05.exercises import check_causal_mask  # the same rule as chapter 5's, for a decoder-only model

__all__ = ["check_top_k", "check_causal_mask", "check_learning_rate", "check_kv_positions",
           "reference_top_k", "reference_learning_rate", "KV_PROMPT", "KV_NEW"]


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
    """Check ``top_k_probs(logits, k, temperature)`` (chapter 8).

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


# ---------------------------------------------------------------- the learning-rate schedule

def reference_learning_rate(step, lr, warmup, decay_steps, min_lr_ratio):
    """Linear warm-up over ``warmup`` steps, then a cosine from ``lr`` to ``lr * min_lr_ratio``
    at ``decay_steps``, kept after it (chapter 8's ``learning_rate``)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / (decay_steps - warmup))
    return lr * (min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def _schedule_diagnose(args):
    step, lr, warmup, decay_steps, ratio = args

    def check(got):
        try:
            value = float(np.asarray(got, dtype=float))
        except (TypeError, ValueError):
            return None
        if math.isclose(value, reference_learning_rate(*args), rel_tol=1e-9, abs_tol=1e-12):
            return None
        if step < warmup and math.isclose(value, lr * step / warmup, rel_tol=1e-9, abs_tol=1e-15):
            return ("off by one in the warm-up: step 0 already takes lr * 1 / warmup, so that no step has rate 0",
                    "预热差了一步：第 0 步的学习率已是 lr * 1 / warmup，免得有一步的学习率为 0")
        if step >= warmup:
            p = min(1.0, (step - warmup) / (decay_steps - warmup))
            if math.isclose(value, lr * 0.5 * (1 + math.cos(math.pi * p)), rel_tol=1e-9, abs_tol=1e-15) \
                    and ratio > 0 and p > 0:
                return ("the cosine falls to 0: it must end at lr * min_lr_ratio",
                        "余弦降到了 0：它应降到 lr * min_lr_ratio")
            if step > decay_steps and not math.isclose(value, lr * ratio, rel_tol=1e-9):
                return ("past decay_steps the rate stays at lr * min_lr_ratio: clip the progress at 1",
                        "超过 decay_steps 后学习率保持 lr * min_lr_ratio：把进度截断在 1")
            q = (step - warmup) / decay_steps
            if math.isclose(value, lr * (ratio + (1 - ratio) * 0.5 * (1 + math.cos(math.pi * min(q, 1.0)))),
                            rel_tol=1e-9) and warmup > 0 and not math.isclose(q, p):
                return ("the cosine runs over decay_steps - warmup steps, from the end of the warm-up",
                        "余弦从预热结束时开始，历时 decay_steps - warmup 步")
        return None
    return check


def check_learning_rate(fn) -> Verdict:
    """Check ``learning_rate(step, lr, warmup, decay_steps, min_lr_ratio)`` (chapter 8).

    Args:
        fn: returns one float, the rate at ``step`` (0-based): ``lr * (step + 1) / warmup``
            while ``step < warmup``, then a cosine from ``lr`` down to ``lr * min_lr_ratio``,
            reached at ``step = decay_steps`` and kept after it.
    """
    cases = []
    for name_en, name_zh, args in (
            ("the first step", "第一步", (0, 3e-3, 100, 1200, 0.1)),
            ("inside the warm-up", "预热之中", (49, 3e-3, 100, 1200, 0.1)),
            ("the peak", "峰值", (100, 3e-3, 100, 1200, 0.1)),
            ("half way down", "下降到一半", (650, 3e-3, 100, 1200, 0.1)),
            ("the end of the schedule", "日程的终点", (1200, 3e-3, 100, 1200, 0.1)),
            ("past the end", "超过终点", (1500, 1e-3, 50, 1000, 0.2)),
            ("a quarter of the way down", "下降四分之一", (300, 1.0, 50, 1050, 0.0))):
        cases.append(Case(name_en, name_zh, args, np.array(reference_learning_rate(*args)),
                          "warm up linearly, (step + 1) / warmup; then the cosine over the steps after the "
                          "warm-up, down to lr * min_lr_ratio",
                          "线性预热，(step + 1) / warmup；之后在预热以后的步数上按余弦降到 lr * min_lr_ratio",
                          diagnose=_schedule_diagnose(args), atol=1e-12))
    return run_checker("the learning-rate schedule · 学习率日程", fn, cases)


# ---------------------------------------------------------------- the KV cache by hand

#: The prompt length and the new tokens of the exercise.
KV_PROMPT, KV_NEW = 10, 20


def check_kv_positions(answer) -> Verdict:
    """Check a hand count of the token positions processed without a KV cache (chapter 8).

    Args:
        answer: one integer, the positions the model processes over :data:`KV_NEW` steps after a
            prompt of :data:`KV_PROMPT` tokens when every step re-reads the whole text;
            ``...`` means "not answered yet".
    """
    P, n = KV_PROMPT, KV_NEW
    expected = np.array(float(sum(P + i for i in range(n))))
    mistakes = {
        P + n - 1: ("that is the count with the cache: without it every step re-reads the whole text",
                    "这是用缓存时的数：不用缓存时，每一步都要重读整段文本"),
        sum(P + i for i in range(1, n + 1)): ("the step that draws a token reads the positions before it: "
                                              "the first step reads the prompt alone",
                                              "抽取一个词元的那一步只读它之前的位置：第一步只读提示"),
        n * P: ("the text grows by one token every step: the step after the first reads one more position",
                "文本每一步都多一个词元：第一步之后的那一步要多读一个位置"),
        n * (P + n): ("not every step reads the final length: step i reads the prompt and the i tokens drawn so far",
                      "并非每一步都读最终长度：第 i 步读提示和此前抽出的 i 个词元"),
    }

    diagnose = count_slips(mistakes)

    case = Case("positions without the cache", "不用缓存时的位置数", (), expected,
                "add up the lengths the steps read: the prompt, then one token more each step",
                "把各步读的长度加起来：先是提示，之后每步多一个词元",
                diagnose=diagnose, atol=0.5, reveal=False)
    return check_by_hand("what the KV cache saves, by hand · 手算键值缓存省下的工作", answer, case)
