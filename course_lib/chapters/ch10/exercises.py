"""Checkers for chapter 10's exercises (``ch10_capstone``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`.
Typical mistakes are recognised and named: a Chinese sentence kept as one
token, upper case kept, punctuation dropped; bits instead of bytes, float64
instead of float32; a window of ``|i − j| < w`` instead of ``≤ w``, a causal
mask that looks at the future.
"""

from __future__ import annotations

import re

import numpy as np

from ...models.efficient_attention import local_window_mask
from ...text import tokenize
from .._check import Case, Verdict, check_by_hand, run_checker

__all__ = ["INT8_D_IN", "INT8_D_OUT", "check_tokenizer", "check_int8_size",
           "check_local_window_mask"]

#: The by-hand exercise: one nn.Linear(INT8_D_IN, INT8_D_OUT) weight matrix
#: (MiniLM's feed-forward input layer).
INT8_D_IN = 384
INT8_D_OUT = 1536

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

_TOKENIZER_TEXTS = [
    ("an English sentence", "英文句子", "The film was GREAT!"),
    ("a Chinese sentence", "中文句子", "这部电影很棒。"),
    ("mixed English and Chinese", "中英混合", "I love 北京 so much, 真的!"),
    ("an apostrophe and digits", "撇号和数字", "Don't buy it: 2 stars"),
]


class _Wrong:
    """A learner's tokens that differ from the rule, with the text they came from."""

    def __init__(self, got, text):
        self.got, self.text = got, text


def _diagnose_tokens(got):
    if not isinstance(got, _Wrong):
        return None
    tokens, text = got.got, got.text
    expected = tokenize(text)
    if tokens is None:
        return ("returned None: did you forget `return`?", "返回了 None：是不是忘了 `return`？")
    if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)) \
            or not all(isinstance(t, str) for t in tokens):
        return (f"must return a list of strings, got {type(tokens).__name__}",
                f"应返回字符串列表，实际得到 {type(tokens).__name__}")
    if any(len(_CJK.findall(t)) > 1 for t in tokens):
        return ("a run of Chinese characters stayed one token: Chinese has no spaces, "
                "so split it into single characters",
                "一串汉字成了一个词元：中文没有空格，应切成单个汉字")
    if any(t != t.lower() for t in tokens):
        return ("upper-case letters are kept: lower-case the text first",
                "保留了大写字母：应先把文本转成小写")
    punct = [t for t in expected if not t[0].isalnum()]
    if punct and not any(t in tokens for t in punct):
        return (f"punctuation was dropped: keep each mark as a token of its own, e.g. {punct[0]!r}",
                f"标点被删掉了：每个标点应单独成为一个词元，例如 {punct[0]!r}")
    return (f"got {list(tokens)}, expected {expected}", f"得到 {list(tokens)}，应为 {expected}")


def check_tokenizer(fn) -> Verdict:
    """Check a learner's bilingual ``tokenize(text) -> list[str]`` (chapter 10).

    The rule: lower-case; each Chinese character is a token; a run of Latin
    letters or digits (with an optional ``'s``-style suffix) is a token; any
    other non-space character (punctuation) is a token of its own.

    Args:
        fn: ``fn(text: str) -> list[str]``.
    """
    def wrapped(text):
        got = fn(text)
        if isinstance(got, (list, tuple)) and list(got) == tokenize(text):
            return np.float64(1.0)
        return _Wrong(got, text)

    cases = [Case(en, zh, (text,), np.float64(1.0), diagnose=_diagnose_tokens)
             for en, zh, text in _TOKENIZER_TEXTS]
    return run_checker("bilingual tokenizer · 双语分词", wrapped, cases)


def check_int8_size(answer) -> Verdict:
    """Check the bytes of one ``INT8_D_IN × INT8_D_OUT`` weight matrix, by hand (chapter 10).

    Args:
        answer: ``(float32_bytes, int8_bytes)``: the matrix stored as float32
            and as int8 (the weights only; ignore the scale and zero point);
            ``...`` means "not answered yet".
    """
    n = INT8_D_IN * INT8_D_OUT
    expected = np.array([4.0 * n, 1.0 * n])

    def diagnose(got):
        g = [float(x) for x in got]
        if len(g) != 2:
            return None
        if g == [32 * n, 8 * n]:
            return ("these are bits, not bytes: divide by 8", "这是比特数，不是字节数：除以 8")
        if g[0] == 8 * n:
            return ("8 bytes per weight is float64; float32 takes 4", "每个权重 8 字节是 float64；float32 占 4 字节")
        if g[1] == g[0]:
            return ("int8 takes 1 byte per weight, not as much as float32",
                    "int8 每个权重占 1 字节，与 float32 不同")
        return None

    case = Case(f"a {INT8_D_IN} × {INT8_D_OUT} weight matrix", f"{INT8_D_IN} × {INT8_D_OUT} 的权重矩阵",
                (), expected, "bytes = number of weights × bytes per weight",
                "字节数 = 权重个数 × 每个权重的字节数", diagnose=diagnose, atol=0.5, reveal=False)
    if isinstance(answer, list):
        answer = tuple(answer)
    return check_by_hand("int8 size by hand · 手算 int8 大小", answer, case)


def check_local_window_mask(fn) -> Verdict:
    """Check a learner's ``local_window_mask(L, window, causal) -> (L, L) bool`` (chapter 10).

    Row ``i`` is query ``i``; True where ``|i − j| ≤ window`` (and ``j ≤ i``
    when ``causal``).

    Args:
        fn: ``fn(L, window, causal) -> array (L, L)`` of booleans.
    """
    def diagnose_for(L, window, causal):
        def diagnose(got):
            g = np.asarray(got)
            if g.shape != (L, L) or np.array_equal(g.astype(bool), local_window_mask(L, window, causal).numpy()):
                return None
            if window > 0 and np.array_equal(g.astype(bool), local_window_mask(L, window - 1, causal).numpy()):
                return ("the band is one too narrow: use |i − j| ≤ window, not < window",
                        "带宽少了一格：应为 |i − j| ≤ window，而不是 < window")
            full = local_window_mask(L, window).numpy()
            if causal and np.array_equal(g.astype(bool), full & np.triu(np.ones((L, L), bool))):
                return ("the mask lets queries see the future: causal means j ≤ i (lower triangle)",
                        "掩码让查询看到了未来：因果意味着 j ≤ i（下三角）")
            if causal and np.array_equal(g.astype(bool), full):
                return ("causal=True was ignored: also require j ≤ i", "忽略了 causal=True：还需要 j ≤ i")
            return None
        return diagnose

    def wrapped(L, window, causal):
        got = fn(L, window, causal)
        if isinstance(got, np.ndarray) and got.dtype != bool:
            return got
        return None if got is None else np.asarray(got).astype(float)

    cases = [Case(f"L={L}, window={w}, causal={c}", f"L={L}，window={w}，causal={c}", (L, w, c),
                  local_window_mask(L, w, c).numpy().astype(float), diagnose=diagnose_for(L, w, c))
             for L, w, c in ((6, 1, False), (7, 2, False), (6, 2, True), (5, 0, False), (4, 10, True))]
    return run_checker("local window mask · 局部窗口掩码", wrapped, cases)
