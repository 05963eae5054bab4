"""Checkers for chapter 11's exercises (``ch11_attention_today``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
Near misses are recognised and named: RoPE turned the wrong way or by the
angle of a neighbouring position, ALiBi slopes counted from ``h = 0`` or
taken for the wrong number of heads, a KV cache without its factor 2 (keys
*and* values) or with every query head cached, an online-softmax step that
forgets to rescale what it has accumulated.
"""

from __future__ import annotations

import math

import numpy as np

from ...models.gqa import kv_cache_bytes_per_token
from ...scratch.alibi import alibi_slopes
from ...scratch.rope import apply_rope
from .._check import Case, Verdict, check_by_hand, recognise, run_checker, same

__all__ = ["ROPE_X", "ROPE_POS", "KV_CONFIG", "check_rope_by_hand", "check_alibi_slopes",
           "check_kv_cache_bytes", "check_online_softmax_step"]

#: The by-hand RoPE exercise: the 2-d vector ROPE_X at position ROPE_POS (d = 2, so ω_0 = 1).
ROPE_X = (1.0, 2.0)
ROPE_POS = 3

#: The by-hand KV-cache exercise: a Qwen2-7B-like configuration, one sequence, bf16.
KV_CONFIG = dict(num_layers=28, d_model=3584, num_heads=28, num_kv_heads=4, bytes_per_value=2,
                 num_tokens=4096)


def _turn(x, angle: float) -> np.ndarray:
    """The 2-d point ``x`` turned counter-clockwise by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([x[0] * c - x[1] * s, x[0] * s + x[1] * c])


def check_rope_by_hand(values) -> Verdict:
    """Check ``RoPE(ROPE_X, ROPE_POS)`` for ``d = 2`` computed by hand (chapter 11).

    Args:
        values: the two numbers of the rotated vector, to three decimals;
            ``...`` means "not answered yet".
    """
    x, m = np.array(ROPE_X), ROPE_POS
    expected = apply_rope(x[None, :], positions=np.array([m]))[0]
    mistakes = [
        (_turn(x, -m), "turned the wrong way: RoPE turns (x₀, x₁) counter-clockwise by mω, "
                       "x₀' = x₀ cos mω − x₁ sin mω, x₁' = x₀ sin mω + x₁ cos mω",
         "转反了方向：RoPE 把 (x₀, x₁) 逆时针转 mω，x₀' = x₀ cos mω − x₁ sin mω，x₁' = x₀ sin mω + x₁ cos mω"),
        (_turn(x, m - 1), "this is the angle of position m − 1: positions count from 0, and position m "
                          "turns by m·ω",
         "这是位置 m − 1 的角度：位置从 0 开始数，位置 m 转 m·ω"),
        (_turn(x, m + 1), "this is the angle of position m + 1: position m turns by m·ω, not (m + 1)·ω",
         "这是位置 m + 1 的角度：位置 m 转 m·ω，不是 (m + 1)·ω"),
        (_turn(x, math.radians(m)), "the angle was read in degrees: set your calculator to radians (RAD)",
         "角度被当成了角度制：把计算器设成弧度制（RAD）"),
        (x, "the vector is unchanged: with d = 2 there is one pair, ω₀ = 1, and it turns by m radians",
         "向量没有变：d = 2 时只有一对，ω₀ = 1，它要转 m 弧度"),
    ]
    case = Case(f"RoPE({ROPE_X}, m = {m})", f"RoPE({ROPE_X}，m = {m})", (), expected,
                "ω₀ = 1 for d = 2; the pair turns by m·ω₀ radians, counter-clockwise",
                "d = 2 时 ω₀ = 1；这一对逆时针转 m·ω₀ 弧度",
                diagnose=recognise(expected, mistakes, atol=0.0015), atol=0.0015, reveal=False)
    return check_by_hand("RoPE by hand · 手算 RoPE", values, case)


def check_alibi_slopes(fn) -> Verdict:
    """Check a learner's ``slopes(num_heads)``: ALiBi's slope ``m_h`` of every head (chapter 11).

    Args:
        fn: ``fn(num_heads)`` returning ``num_heads`` slopes: ``2^(−8h/n)``,
            ``h = 1 … n`` for ``n`` a power of 2; otherwise the slopes of the
            largest power of 2 ``p < n``, then every other slope of ``2p``
            heads (``h = 1, 3, 5, …``) until there are ``n``.
    """
    inputs = [("8 heads", "8 个头", 8), ("4 heads", "4 个头", 4), ("16 heads", "16 个头", 16),
              ("1 head", "1 个头", 1), ("12 heads (not a power of 2)", "12 个头（不是 2 的幂）", 12),
              ("6 heads (not a power of 2)", "6 个头（不是 2 的幂）", 6)]
    cases = []
    for en, zh, n in inputs:
        expected = alibi_slopes(n)
        h = np.arange(1, n + 1)
        p = 1 << (n.bit_length() - 1)
        mistakes = [
            (2.0 ** (-8.0 * (h - 1) / n), "h counts from 1: the first slope is 2^(−8/n), not 2^0 = 1",
             "h 从 1 开始数：第一个斜率是 2^(−8/n)，不是 2^0 = 1"),
            (2.0 ** (-8.0 * h / (2 * n)), f"these are the first {n} slopes of {2 * n} heads: the exponent is "
                                          "−8h/n with n the number of heads",
             f"这是 {2 * n} 个头的前 {n} 个斜率：指数是 −8h/n，n 是头数"),
            (2.0 ** (-h / n), "the factor 8 is missing: m_h = 2^(−8h/n), so 8 heads go from 1/2 to 1/256",
             "少了因子 8：m_h = 2^(−8h/n)，所以 8 个头从 1/2 到 1/256"),
            (2.0 ** (-8.0 * h / n)[::-1], "the slopes are in reverse order: head 1 has the largest slope",
             "斜率顺序反了：第 1 个头的斜率最大"),
        ]
        if p != n:
            mistakes.append((2.0 ** (-8.0 * h / n),
                             f"2^(−8h/n) is the rule for a power of 2 only: for {n} heads take the {p}-head "
                             f"slopes, then slopes 1, 3, 5, … of {2 * p} heads",
                             f"2^(−8h/n) 只适用于 2 的幂：{n} 个头时先取 {p} 个头的斜率，再取 {2 * p} 个头的"
                             f"第 1、3、5、… 个斜率"))
            mistakes.append((alibi_slopes(2 * p)[:n],
                             f"these are the first {n} slopes of {2 * p} heads: keep all {p} slopes of {p} "
                             f"heads and add only every other slope of {2 * p} heads",
                             f"这是 {2 * p} 个头的前 {n} 个斜率：应保留 {p} 个头的全部斜率，再只添加 "
                             f"{2 * p} 个头的隔一个取一个的斜率"))
        cases.append(Case(en, zh, (n,), expected, "m_h = 2^(−8h/n), h = 1 … n (n a power of 2)",
                          "m_h = 2^(−8h/n)，h = 1 … n（n 为 2 的幂）", diagnose=recognise(expected, mistakes)))
    return run_checker("ALiBi slopes · ALiBi 斜率", fn, cases)


def check_kv_cache_bytes(answer) -> Verdict:
    """Check the KV cache size of :data:`KV_CONFIG`, in bytes, computed by hand (chapter 11).

    Args:
        answer: one number, the bytes of the whole cache for ``num_tokens``
            tokens of one sequence; ``...`` means "not answered yet".
    """
    c = KV_CONFIG
    d_k = c["d_model"] // c["num_heads"]
    per_token = kv_cache_bytes_per_token(c["num_layers"], c["num_kv_heads"], d_k, c["bytes_per_value"])
    expected = np.array(float(per_token * c["num_tokens"]))
    mistakes = [
        (expected / 2, "half the answer: the cache holds a key AND a value per head, a factor 2",
         "只有一半：缓存对每个头既存键也存值，要乘以 2"),
        (expected * c["num_heads"] / c["num_kv_heads"],
         "you cached every query head (num_heads × d_k = d_model numbers per layer): with GQA only the "
         "num_kv_heads key/value heads are stored",
         "你为每个查询头都存了缓存（每层 num_heads × d_k = d_model 个数）：GQA 只存 num_kv_heads 个键/值头"),
        (expected / c["num_tokens"], "this is the size per token: multiply by the number of tokens",
         "这是每个词元的大小：还要乘以词元数"),
        (expected * 2, "twice the answer: bf16 takes 2 bytes per value (did you use 4, float32?)",
         "多了一倍：bf16 每个值占 2 字节（你是不是用了 float32 的 4 字节？）"),
        (expected / c["num_layers"], "this is one layer's cache: every layer keeps its own",
         "这是一层的缓存：每一层都有自己的缓存"),
    ]
    case = Case("KV cache bytes", "键值缓存字节数", (), expected,
                "2 (K and V) × layers × num_kv_heads × d_k × bytes per value × tokens",
                "2（K 和 V）× 层数 × num_kv_heads × d_k × 每个值的字节数 × 词元数",
                diagnose=recognise(expected, mistakes, atol=0.5), atol=0.5, reveal=False)
    return check_by_hand("KV cache by hand · 手算键值缓存", answer, case)


def _step(m, ell, acc, s, V, *, rescale="right", keep_old_max=True):
    """One online-softmax update, or one of its typical wrong versions."""
    m_new = max(m, float(np.max(s))) if keep_old_max else float(np.max(s))
    p = np.exp(s - m_new)
    c = {"right": math.exp(m - m_new) if m > -math.inf else 0.0,
         "none": 1.0,
         "inverse": math.exp(m_new - m) if m > -math.inf else 0.0}[rescale]
    return np.array(m_new), np.array(c * ell + p.sum()), c * acc + p @ V


def _flat(x):
    return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in x])


def _recognise_step(expected, mistakes):
    """``recognise`` for a triple ``(m, ℓ, a)``: compare the three flattened together."""
    def diagnose(got):
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return None
        flat = _flat(got)
        if same(flat, _flat(expected), 1e-9):
            return None
        for wrong, en, zh in mistakes:
            if same(flat, _flat(wrong), 1e-9):
                return (en, zh)
        return None
    return diagnose


def check_online_softmax_step(fn) -> Verdict:
    """Check a learner's online-softmax update for one query row (chapter 11).

    Args:
        fn: ``fn(m, ell, acc, s, V)`` with the running maximum ``m`` (a float,
            ``-inf`` before the first block), the running sum ``ell``, the
            unnormalised output ``acc`` ``(d_v,)``, the new block's scores
            ``s`` ``(B_k,)`` and values ``V`` ``(B_k, d_v)``; returns
            ``(m_new, ell_new, acc_new)``.
    """
    rng = np.random.default_rng(9)
    V1, V2, V3 = (rng.standard_normal((k, 3)) for k in (4, 4, 2))
    s1 = np.array([0.5, -1.0, 2.0, 0.0])
    m1, l1, a1 = _step(-math.inf, 0.0, np.zeros(3), s1, V1)
    inputs = [
        ("the first block (m = −inf)", "第一块（m = −inf）", (-math.inf, 0.0, np.zeros(3), s1, V1)),
        ("a block with a larger maximum", "最大值变大的一块", (float(m1), float(l1), a1, np.array([3.0, 1.0, -2.0, 2.5]), V2)),
        ("a block with a smaller maximum", "最大值没变的一块", (float(m1), float(l1), a1, np.array([-1.0, 1.5]), V3)),
        ("large scores", "很大的分数", (800.0, 1.5, np.ones(3), np.array([801.0, 799.0]), V3)),
    ]
    cases = []
    for en, zh, args in inputs:
        expected = _step(*args)
        mistakes = [
            (_step(*args, rescale="none"),
             "what was accumulated is not rescaled: when the maximum grows, multiply ℓ and a by e^(m_old − m_new)",
             "没有重新缩放已累积的量：最大值变大时，ℓ 和 a 都要乘以 e^(m_old − m_new)"),
            (_step(*args, rescale="inverse"),
             "the rescaling factor is upside down: it is e^(m_old − m_new) ≤ 1, not e^(m_new − m_old)",
             "缩放因子倒过来了：应为 e^(m_old − m_new) ≤ 1，而不是 e^(m_new − m_old)"),
            (_step(*args, keep_old_max=False),
             "the new maximum must also include the old one: m_new = max(m_old, max_j s_j)",
             "新的最大值还要包含旧的：m_new = max(m_old, max_j s_j)"),
        ]
        cases.append(Case(en, zh, args, tuple(np.asarray(v, dtype=float) for v in expected),
                          "m_new = max(m, max s); c = e^(m − m_new); ℓ ← cℓ + Σ e^(s − m_new); a ← ca + Σ e^(s − m_new) v",
                          "m_new = max(m, max s)；c = e^(m − m_new)；ℓ ← cℓ + Σ e^(s − m_new)；a ← ca + Σ e^(s − m_new) v",
                          diagnose=_recognise_step(expected, mistakes), atol=1e-9))
    return run_checker("one online-softmax step · 在线 softmax 的一步", fn, cases)
