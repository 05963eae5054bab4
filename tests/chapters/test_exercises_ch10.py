"""Chapter 10's checkers: right answers pass, typical mistakes get the right
message, and no learner code can make a checker raise."""

import re

import numpy as np
from hypothesis import strategies as st

from course_lib.models.efficient_attention import local_window_mask
from course_lib.chapters.ch10.exercises import (INT8_D_IN, INT8_D_OUT, check_int8_size, check_local_window_mask,
                                                check_tokenizer)
from course_lib.text import tokenize
from conftest import never_raises_test, raises, returns_none, stub, tolerance_test, wrong_submissions_test

N = INT8_D_IN * INT8_D_OUT


def _mask(L, w, c):
    return local_window_mask(L, w, c).numpy()


WRONG = {
    "tokenizer": (check_tokenizer, [
        (lambda t: t.lower().split(), r"a run of Chinese characters stayed one token"),
        (lambda t: [x.upper() for x in tokenize(t)], r"upper-case letters are kept"),
        (lambda t: tokenize(t, keep_punct=False), r"punctuation was dropped"),
        (lambda t: " ".join(tokenize(t)), r"must return a list of strings, got str"),
        (lambda t: tokenize(t)[:-1], r"got \[.*\], expected \["),
        (raises, r"raised ValueError: boom"),
        (returns_none, r"returned None"),
        (stub, r"not implemented yet"),
    ]),
    "int8": (lambda fn: check_int8_size(fn()), [
        (lambda: (32 * N, 8 * N), r"these are bits, not bytes"),
        (lambda: (8 * N, N), r"8 bytes per weight is float64"),
        (lambda: (4 * N, 4 * N), r"int8 takes 1 byte per weight"),
        (lambda: (4 * N, N + 1000), r"wrong value at position \(1\): got"),
        (lambda: 4 * N, r"wrong shape: got \(\), expected \(2,\)"),
        (lambda: None, r"returned None"),
        (lambda: ..., r"not implemented yet"),
    ]),
    "window": (check_local_window_mask, [
        (lambda L, w, c: _mask(L, max(w - 1, 0), c), r"the band is one too narrow"),
        (lambda L, w, c: _mask(L, w, False), r"causal=True was ignored"),
        (lambda L, w, c: _mask(L, w, c).T, r"lets queries see the future"),
        (lambda L, w, c: _mask(L, w, c)[:, :-1], r"wrong shape"),
        (lambda L, w, c: ~_mask(L, w, c), r"wrong value"),
        (raises, r"raised ValueError"),
        (returns_none, r"returned None"),
    ]),
}
test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)


def test_right_answers_pass():
    assert check_tokenizer(tokenize).ok
    assert check_int8_size((4 * N, N)).ok
    assert check_int8_size([4 * N, N]).ok
    assert check_local_window_mask(_mask).ok
    assert check_local_window_mask(lambda L, w, c: local_window_mask(L, w, c)).ok     # a torch tensor
    assert "expected" not in repr(check_int8_size((4 * N, N + 1)))                  # the answer stays hidden


def _anything():
    arrays = st.integers(0, 3).flatmap(lambda n: st.lists(st.integers(1, 3), min_size=n, max_size=n)).map(
        lambda shape: np.full(shape, 0.5))
    return st.one_of(st.none(), st.text(max_size=5), st.integers(), st.floats(), arrays,
                     st.just(np.array([np.nan, np.inf])), st.just(object()),
                     st.lists(st.text(max_size=3), max_size=4), st.tuples(arrays, arrays), st.just({"a": 1}))


test_no_checker_ever_raises = never_raises_test(coding=(check_tokenizer, check_local_window_mask),
                                                by_hand=(check_int8_size,), results=_anything())


# --- near misses, live right answers, the tolerance pinned from both sides --------------------------

def _band(L, w, c):
    """The window by its definition: |i − j| ≤ w, and j ≤ i when causal."""
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    return (np.abs(i - j) <= w) & ((j <= i) | (not c))


def _tokens_ascii_punct(text):
    """The rule, except that only ASCII punctuation is kept: Chinese '。' and '，' are dropped."""
    return [t for t in tokenize(text) if t[0].isalnum() or t.isascii()]


def _band_by_diagonals(L, w, c):
    """The band as a sum of diagonals of ones: fails once the window is wider than the sequence."""
    band = sum(np.diag(np.ones(L - abs(o)), o) for o in range(-w, w + 1)) > 0
    return np.tril(band) if c else band


NEAR_MISSES = {
    "tokenizer": (check_tokenizer, [
        (lambda t: re.findall(r"[a-z0-9]+|[^\sa-z0-9]", t.lower()),            # "don't" → don ' t
         r"\[an apostrophe and digits\] got \[.*'don', \"'\", 't'"),
        (_tokens_ascii_punct, r"\[a Chinese sentence\] punctuation was dropped"),
    ]),
    "int8": (check_int8_size, [
        ((4 * N, 2 * N), r"wrong value at position \(1\)"),                   # int16
        ((4 * N, N + 4 * INT8_D_OUT), r"wrong value at position \(1\)"),      # per-row scales counted
        ((4 * N + 1, N), r"wrong value at position \(0\)"),                   # right ± 2 × tolerance
        ((4 * N / 2 ** 20, N / 2 ** 20), r"wrong value at position \(0\)"),  # MiB, not bytes
    ]),
    "window": (check_local_window_mask, [
        (lambda L, w, c: _band(L, w + 1, c), r"\[L=6, window=1, causal=False\] wrong value"),   # one too wide
        (lambda L, w, c: _band(L, w, c) & ~(np.eye(L, dtype=bool) & c),
         r"\[L=6, window=2, causal=True\] wrong value at position \(0, 0\)"),                  # causal: j < i
        (_band_by_diagonals, r"\[L=4, window=10, causal=True\] raised ValueError"),
    ]),
}
test_near_misses_are_rejected = wrong_submissions_test(NEAR_MISSES)


def test_live_right_answers_pass():
    assert check_local_window_mask(_band).ok
    assert check_int8_size((INT8_D_IN * INT8_D_OUT * np.dtype(np.float32).itemsize,
                            INT8_D_IN * INT8_D_OUT * np.dtype(np.int8).itemsize)).ok


test_the_tolerance_is_pinned = tolerance_test({
    "int8": (check_int8_size, (4 * N, N), 0.5),
})
