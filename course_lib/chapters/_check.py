"""The machinery behind every exercise checker.

A checker runs the learner's function on a few cases and returns a
``Verdict``: ✓, or what is wrong (wrong shape, a wrong value and where,
NaN, raised an error, returned None, not implemented yet, too slow) with a
hint, in English and Chinese. A checker never raises, whatever the learner's
code does.
"""

from __future__ import annotations

import signal
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..display import md_prose

__all__ = ["Case", "Verdict", "run_checker", "check_by_hand", "compare", "recognise", "same", "count_slips"]

TIMEOUT_S = 5.0


@dataclass
class Case:
    """One test case: arguments, the expected answer and a hint if it fails.

    Attributes:
        name_en, name_zh: what the case is about, e.g. "large logits · 大数值".
        args: positional arguments passed to the learner's function.
        expected: the reference answer (an array, or a tuple of arrays).
        hint_en, hint_zh: shown when the learner's answer is wrong here.
        diagnose: optional ``f(got) -> (en, zh) | None`` that recognises a
            typical mistake (e.g. "you forgot to divide by √d_k").
        atol: absolute tolerance of the value comparison.
    """

    name_en: str
    name_zh: str
    args: tuple
    expected: Any
    hint_en: str = ""
    hint_zh: str = ""
    diagnose: Callable | None = None
    atol: float = 1e-6
    reveal: bool = True   # False for answers computed by hand: do not give them away


@dataclass
class Verdict:
    """The outcome of a checker: printed as Markdown in notebooks and the book."""

    exercise: str
    ok: bool
    passed: int
    total: int
    problems: list = field(default_factory=list)   # [(en, zh)]
    pending: bool = False                           # the stub is still there

    def __bool__(self) -> bool:
        return self.ok

    def _lines(self):
        if self.ok and self.total == 1:
            return [f"✓ {self.exercise}: correct · 正确"]
        if self.ok:
            return [f"✓ {self.exercise}: all {self.total} cases pass · 全部 {self.total} 个用例通过"]
        if self.pending:
            head = f"… {self.exercise}: waiting for your answer · 等待你的答案"
        elif self.total == 1:
            head = f"✗ {self.exercise}: not yet right · 还不对"
        else:
            head = (f"✗ {self.exercise}: {self.passed} of {self.total} cases pass · "
                    f"{self.total} 个用例中通过 {self.passed} 个")
        return [head] + [f"- {en}\n  {zh}" for en, zh in self.problems]

    def __repr__(self) -> str:
        return "\n".join(self._lines())

    def _repr_markdown_(self) -> str:
        lines = self._lines()
        body = "\n".join(f"- {md_prose(en)}<br>{md_prose(zh)}" for en, zh in self.problems)
        return f"**{md_prose(lines[0])}**\n\n{body}\n" if body else f"**{md_prose(lines[0])}**\n"


class _TimedOut(BaseException):
    pass


def _call(fn, args, timeout: float):
    """Run ``fn(*args)``; return ``(status, value)`` and never raise.

    status is "ok", "stub" (NotImplementedError), "raised" or "timeout".
    """
    use_alarm = (threading.current_thread() is threading.main_thread()
                 and hasattr(signal, "setitimer"))
    if not use_alarm:
        box = {}

        def target():
            box["result"] = _call_plain(fn, args)
        t = threading.Thread(target=target, daemon=True)
        t.start()
        t.join(timeout)
        return box.get("result", ("timeout", None))

    def on_alarm(signum, frame):
        raise _TimedOut()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return _call_plain(fn, args)
    except _TimedOut:
        return ("timeout", None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _call_plain(fn, args):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # the verdict reports NaN and overflow itself
            return ("ok", fn(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a
                               for a in args]))
    except NotImplementedError:
        return ("stub", None)
    except _TimedOut:
        raise
    except (Exception, SystemExit) as e:  # the learner's code may raise anything
        return ("raised", e)


def _where(idx) -> str:
    return "(" + ", ".join(str(int(i)) for i in idx) + ")"


def compare(got, expected, atol: float = 1e-6, reveal: bool = True):
    """What is wrong with ``got`` against ``expected``, as ``(en, zh)``; None if right."""
    if got is None:
        return ("returned None: did you forget `return`?", "返回了 None：是不是忘了 `return`？")
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return (f"expected a tuple of {len(expected)} results, got {type(got).__name__}",
                    f"应返回 {len(expected)} 个结果组成的元组，实际得到 {type(got).__name__}")
        for g, e in zip(got, expected):
            problem = compare(g, e, atol, reveal)
            if problem:
                return problem
        return None
    if np.iscomplexobj(got):
        return ("returned complex numbers; expected real ones", "返回了复数；应为实数")
    try:
        arr = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return (f"returned {type(got).__name__}, expected an array of shape {expected.shape}",
                f"返回了 {type(got).__name__}，应为形状 {expected.shape} 的数组")
    if arr.shape != expected.shape:
        return (f"wrong shape: got {arr.shape}, expected {expected.shape}",
                f"形状错误：得到 {arr.shape}，应为 {expected.shape}")
    if np.isnan(arr).any():
        idx = np.argwhere(np.isnan(arr))[0]
        return (f"NaN at position {_where(idx)}", f"位置 {_where(idx)} 出现 NaN")
    if np.isinf(arr).any():
        idx = np.argwhere(np.isinf(arr))[0]
        return (f"infinite value at position {_where(idx)}", f"位置 {_where(idx)} 出现无穷大")
    bad = np.abs(arr - expected) > atol
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        g, e = float(arr[idx]), float(expected[idx])
        if arr.ndim == 2 and arr.shape[0] == arr.shape[1] and np.allclose(arr.T, expected, atol=atol):
            return ("the result is transposed (rows and columns swapped)",
                    "结果被转置了（行与列互换）")
        if not reveal:
            return (f"wrong value at position {_where(idx)}: got {g:.4g}",
                    f"位置 {_where(idx)} 的值错误：得到 {g:.4g}")
        return (f"wrong value at position {_where(idx)}: got {g:.4g}, expected {e:.4g}",
                f"位置 {_where(idx)} 的值错误：得到 {g:.4g}，应为 {e:.4g}")
    return None


def _diagnose(case: Case, got):
    """The case's own diagnosis of a typical mistake, or None (never raises)."""
    if case.diagnose is None:
        return None
    try:
        return case.diagnose(got)
    except Exception:  # an unexpected answer shape: leave it to compare()
        return None


def run_checker(exercise: str, fn, cases: list[Case], timeout: float = TIMEOUT_S) -> Verdict:
    """Run ``fn`` on every case and collect a bilingual ``Verdict``.

    Args:
        exercise: the exercise's name as shown to the learner.
        fn: the learner's function.
        cases: the cases; the first problem of each failing case is reported.
        timeout: seconds each call may take before it is stopped.
    """
    try:
        if not callable(fn):
            return Verdict(exercise, False, 0, len(cases), [(
                f"expected a function, got {type(fn).__name__}: pass the function itself, "
                "without calling it (no parentheses)",
                f"应传入函数，实际得到 {type(fn).__name__}：直接传函数名，不要加括号")])
        problems, passed = [], 0
        for case in cases:
            status, got = _call(fn, case.args, timeout)
            where_en, where_zh = f"[{case.name_en}] ", f"［{case.name_zh}］"
            if status == "stub":
                return Verdict(exercise, False, 0, len(cases), [(
                    "not implemented yet: replace `raise NotImplementedError` (or `...`) "
                    "with your answer",
                    "尚未实现：把 `raise NotImplementedError`（或 `...`）换成你的答案")],
                    pending=True)
            if status == "timeout":  # stop here: more cases would only wait longer
                problems.append((where_en + f"stopped after {timeout:g} s: an endless loop?",
                                 where_zh + f"运行超过 {timeout:g} 秒被停止：是否有死循环？"))
                return Verdict(exercise, False, passed, len(cases), problems)
            if status == "raised":
                msg = f"{type(got).__name__}: {got}"[:200]
                problems.append((where_en + f"raised {msg}", where_zh + f"抛出了异常 {msg}"))
                continue
            problem = _diagnose(case, got) or compare(got, case.expected, case.atol, case.reveal)
            if problem:
                hint_en = f" Hint: {case.hint_en}" if case.hint_en else ""
                hint_zh = f" 提示：{case.hint_zh}" if case.hint_zh else ""
                problems.append((where_en + problem[0] + hint_en, where_zh + problem[1] + hint_zh))
            else:
                passed += 1
        return Verdict(exercise, not problems, passed, len(cases), problems)
    except BaseException as e:  # noqa: BLE001 - a checker must never crash
        if isinstance(e, KeyboardInterrupt):
            raise
        return Verdict(exercise, False, 0, len(cases), [(
            f"the checker could not judge this answer ({type(e).__name__}); check its type",
            f"检查器无法判断这个答案（{type(e).__name__}）；请检查返回值的类型")])


def check_by_hand(exercise: str, answer, case: Case) -> Verdict:
    """Judge a number (or numbers) the learner computed by hand against ``case``.

    ``answer`` is the value itself, not a function; ``...`` (Ellipsis), the
    stub of a by-hand exercise, means "not answered yet".
    """
    def submitted():
        if answer is Ellipsis:
            raise NotImplementedError
        return answer
    return run_checker(exercise, submitted, [case])


def same(got, ref, atol: float) -> bool:
    """``got`` has ``ref``'s shape and values (no broadcasting, never raises)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # e.g. complex answers: compare() reports them
            arr = np.asarray(got, dtype=float)
            ref = np.asarray(ref, dtype=float)
            return arr.shape == ref.shape and bool(np.allclose(arr, ref, atol=atol))
    except Exception:
        return False


def recognise(expected, mistakes, atol: float = 1e-6):
    """A ``diagnose`` function: the first mistake ``got`` reproduces, unless it is right.

    Args:
        expected: the right answer (a right answer is never diagnosed).
        mistakes: ``[(wrong_answer, en, zh)]``, tried in order.
    """
    def diagnose(got):
        if same(got, expected, atol):
            return None
        for wrong, en, zh in mistakes:
            if same(got, wrong, atol):
                return (en, zh)
        return None
    return diagnose


def count_slips(mistakes: dict):
    """A ``diagnose`` function for a count worked out by hand: an answer that is exactly one of the
    integer keys of ``mistakes`` (``{wrong_count: (en, zh)}``) gets that key's hint; anything else none."""
    def diagnose(got):
        try:
            value = float(np.asarray(got, dtype=float))
        except (TypeError, ValueError):
            return None
        return mistakes.get(int(value)) if value.is_integer() else None
    return diagnose
