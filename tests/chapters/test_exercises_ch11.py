"""Chapter 11's exercise checkers judge correctly: right answers pass, near misses
(the wrong rotation direction, a neighbouring position, slopes for the wrong
head count, a KV cache without its factor 2, an update that forgets to
rescale) get their own message, and no learner code can make a checker raise."""

import math

import numpy as np

from course_lib.chapters.ch11 import exercises as ex
from course_lib.models.gqa import kv_cache_bytes_per_token
from course_lib.scratch.alibi import alibi_slopes
from course_lib.scratch.online_softmax import tiled_attention
from conftest import (never_raises_test, raises, returns_none, right_answers_test, stub, tolerance_test,
                      wrong_submissions_test)


def _turn(angle):
    x, y = ex.ROPE_X
    return [round(x * math.cos(angle) - y * math.sin(angle), 3), round(x * math.sin(angle) + y * math.cos(angle), 3)]


ROPE = _turn(ex.ROPE_POS)
C = ex.KV_CONFIG
D_K = C["d_model"] // C["num_heads"]
KV = 2 * C["num_layers"] * C["num_kv_heads"] * D_K * C["bytes_per_value"] * C["num_tokens"]


def _slopes(n):
    """ALiBi's slopes written from the paper's description, independently of course_lib."""
    def power_of_2(k):
        start = 2 ** (-8 / k)
        return [start ** (i + 1) for i in range(k)]
    p = 2 ** math.floor(math.log2(n))
    return np.array(power_of_2(p) + (power_of_2(2 * p)[0::2][: n - p] if p < n else []))


def _step(m, ell, acc, s, V):
    m_new = max(m, float(np.max(s)))
    c = math.exp(m - m_new)
    p = np.exp(s - m_new)
    return m_new, c * ell + p.sum(), c * acc + p @ V


def _step_no_rescale(m, ell, acc, s, V):
    m_new = max(m, float(np.max(s)))
    p = np.exp(s - m_new)
    return m_new, ell + p.sum(), acc + p @ V


def _step_inverse(m, ell, acc, s, V):
    m_new = max(m, float(np.max(s)))
    c = math.exp(m_new - m) if m > -math.inf else 0.0
    p = np.exp(s - m_new)
    return m_new, c * ell + p.sum(), c * acc + p @ V


def _step_forget_old_max(m, ell, acc, s, V):
    m_new = float(np.max(s))
    c = math.exp(m - m_new)
    p = np.exp(s - m_new)
    return m_new, c * ell + p.sum(), c * acc + p @ V


RIGHT = {
    "rope": (ex.check_rope_by_hand, ROPE),
    "rope (array)": (ex.check_rope_by_hand, np.array(ROPE)),
    "slopes (independent)": (ex.check_alibi_slopes, _slopes),
    "slopes (library)": (ex.check_alibi_slopes, alibi_slopes),
    "kv bytes": (ex.check_kv_cache_bytes, KV),
    "kv bytes (library)": (ex.check_kv_cache_bytes,
                           kv_cache_bytes_per_token(C["num_layers"], C["num_kv_heads"], D_K) * C["num_tokens"]),
    "online step": (ex.check_online_softmax_step, _step),
}
test_right_answers_pass = right_answers_test(RIGHT)


WRONG = {
    "rope": (ex.check_rope_by_hand, [
        (_turn(-ex.ROPE_POS), r"turned the wrong way"),
        (_turn(ex.ROPE_POS - 1), r"the angle of position m − 1"),
        (_turn(ex.ROPE_POS + 1), r"the angle of position m \+ 1"),
        (_turn(math.radians(ex.ROPE_POS)), r"read in degrees"),
        (list(ex.ROPE_X), r"the vector is unchanged"),
        ([ROPE[0], ROPE[1] + 0.01], r"wrong value at position \(1\): got"),
        (ROPE[:1], r"wrong shape: got \(1,\), expected \(2,\)"),
        ([float("nan")] * 2, r"NaN at position \(0\)"),
        (None, r"returned None"),
        (..., r"not implemented yet"),
    ]),
    "slopes": (ex.check_alibi_slopes, [
        (lambda n: 2.0 ** (-8.0 * np.arange(n) / n), r"\[8 heads\] h counts from 1"),
        (lambda n: 2.0 ** (-8.0 * np.arange(1, n + 1) / (2 * n)), r"\[8 heads\] these are the first 8 slopes of 16 heads"),
        (lambda n: 2.0 ** (-np.arange(1, n + 1) / n), r"the factor 8 is missing"),
        (lambda n: alibi_slopes(n)[::-1], r"\[8 heads\] the slopes are in reverse order"),
        (lambda n: 2.0 ** (-8.0 * np.arange(1, n + 1) / n),
         r"4 of 6 cases pass(.|\n)*\[12 heads \(not a power of 2\)\] 2\^\(−8h/n\) is the rule for a power of 2 only"),
        (lambda n: alibi_slopes(16)[:n] if n == 12 else alibi_slopes(n),
         r"\[12 heads \(not a power of 2\)\] these are the first 12 slopes of 16 heads: keep all 8"),
        (lambda n: alibi_slopes(n) * 1.01, r"\[8 heads\] wrong value at position \(0\)"),
        (lambda n: alibi_slopes(n)[:-1], r"wrong shape"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "kv bytes": (ex.check_kv_cache_bytes, [
        (KV // 2, r"half the answer: the cache holds a key AND a value"),
        (KV * C["num_heads"] // C["num_kv_heads"], r"you cached every query head"),
        (KV // C["num_tokens"], r"this is the size per token"),
        (KV * 2, r"twice the answer: bf16 takes 2 bytes"),
        (KV // C["num_layers"], r"this is one layer's cache"),
        (KV + 1024, r"wrong value at position \(\): got"),
        ([KV, KV], r"wrong shape"),
        (None, r"returned None"),
        (..., r"not implemented yet"),
    ]),
    "online step": (ex.check_online_softmax_step, [
        (_step_no_rescale, r"\[a block with a larger maximum\] what was accumulated is not rescaled"),
        (_step_inverse, r"\[a block with a larger maximum\] the rescaling factor is upside down"),
        (_step_forget_old_max, r"\[a block with a smaller maximum\] the new maximum must also include the old one"),
        (lambda m, ell, acc, s, V: _step(m, ell, acc, s, V)[:2], r"expected a tuple of 3 results"),
        (lambda m, ell, acc, s, V: (lambda r: (r[0], r[1] + 1e-3, r[2]))(_step(m, ell, acc, s, V)),
         r"wrong value at position \(\)"),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_no_rescale_passes_when_the_maximum_does_not_grow():
    """Forgetting the rescale only matters when the maximum grows: those cases must still pass."""
    verdict = ex.check_online_softmax_step(_step_no_rescale)
    assert "[the first block (m = −inf)]" not in repr(verdict)
    assert "[a block with a smaller maximum]" not in repr(verdict)


def test_the_learner_step_computes_tiled_attention():
    """The right step, applied block by block, is full attention (the live right answer)."""
    rng = np.random.default_rng(0)
    q, K, V = rng.standard_normal(4), rng.standard_normal((10, 4)), rng.standard_normal((10, 3))
    s = K @ q / 2.0
    m, ell, acc = -math.inf, 0.0, np.zeros(3)
    for k0 in range(0, 10, 3):
        m, ell, acc = _step(m, ell, acc, s[k0:k0 + 3], V[k0:k0 + 3])
    full = tiled_attention(q[None], K, V, block_size=10)[0]
    assert np.allclose(acc / ell, full, atol=1e-12)


def test_hand_answers_are_not_given_away():
    for verdict, secret in ((ex.check_rope_by_hand([0.0, 0.0]), f"{ROPE[0]:.3g}"),
                            (ex.check_kv_cache_bytes(1.0), f"{KV:.4g}")):
        assert not verdict.ok and "expected" not in repr(verdict) and "应为" not in repr(verdict)
        assert secret not in repr(verdict)


test_no_checker_ever_raises = never_raises_test(
    coding=(ex.check_alibi_slopes, ex.check_online_softmax_step),
    by_hand=(ex.check_rope_by_hand, ex.check_kv_cache_bytes))


def test_passing_the_result_instead_of_the_function():
    assert "pass the function itself" in repr(ex.check_alibi_slopes(alibi_slopes(8)))


_EXACT_ROPE = np.array([ex.ROPE_X[0] * math.cos(ex.ROPE_POS) - ex.ROPE_X[1] * math.sin(ex.ROPE_POS),
                        ex.ROPE_X[0] * math.sin(ex.ROPE_POS) + ex.ROPE_X[1] * math.cos(ex.ROPE_POS)])
test_the_tolerance_is_pinned = tolerance_test({
    "rope": (ex.check_rope_by_hand, _EXACT_ROPE, 0.0015),
    "kv bytes": (ex.check_kv_cache_bytes, float(KV), 0.5),
    "slopes": (ex.check_alibi_slopes, alibi_slopes, 1e-6),
    "online step": (ex.check_online_softmax_step, _step, 1e-9),
})
