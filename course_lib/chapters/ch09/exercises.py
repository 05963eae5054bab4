"""Checkers for chapter 9's exercises (``ch09_training_lm``).

Each ``check_*`` takes the learner's function (or answer), runs it on a few
cases and returns a bilingual :class:`~course_lib.chapters._check.Verdict`;
it never raises, whatever the learner's code does.
"""

from __future__ import annotations

import numpy as np

from .._check import Case, Verdict, check_by_hand, run_checker

__all__ = ["check_training_flops", "check_min_context", "check_ema", "check_newton_schulz",
           "reference_ema", "reference_newton_schulz", "FLOPS_RUN", "SLIDING", "NS_COEFFICIENTS"]

#: The run of the compute exercise: parameters, steps, windows a step, tokens a window.
FLOPS_RUN = {"params": 400_000, "steps": 1000, "batch": 32, "ctx": 128}

#: The reading of the sliding-window exercise: the model's context and the windows' stride.
SLIDING = {"ctx": 128, "stride": 32}

#: Muon's Newton-Schulz coefficients (a, b, c) (Jordan et al., 2024).
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def _number_diagnose(mistakes: dict, rel: float = 1e-6):
    """A ``diagnose`` that names the mistake whose value ``got`` equals (relative ``rel``)."""
    def diagnose(got):
        try:
            value = float(np.asarray(got, dtype=float))
        except (TypeError, ValueError):
            return None
        for wrong, message in mistakes.items():
            if abs(value - wrong) <= rel * abs(wrong):
                return message
        return None
    return diagnose


# ---------------------------------------------------------------- training compute by hand

def check_training_flops(answer) -> Verdict:
    """Check a hand estimate of training compute, 6 · parameters · tokens read (chapter 9).

    Args:
        answer: one number, the FLOPs of :data:`FLOPS_RUN`; ``...`` means "not answered yet".
    """
    N, S, B, T = (FLOPS_RUN[k] for k in ("params", "steps", "batch", "ctx"))
    tokens = S * B * T
    expected = 6.0 * N * tokens
    mistakes = {
        2.0 * N * tokens: ("that is the forward pass only: the backward pass costs about twice as much again, "
                           "six operations in all", "这只是前向计算：反向计算大约再花两倍，一共六次运算"),
        6.0 * N * S * B: ("every window holds 128 tokens: the tokens read are steps × windows × 128",
                          "每个窗口有 128 个词元：读过的词元数是步数 × 窗口数 × 128"),
        6.0 * N * S: ("count the tokens read, not the steps: steps × windows × tokens per window",
                      "要数读过的词元，而不是步数：步数 × 窗口数 × 每窗口词元数"),
        float(N * tokens): ("multiply by six: two operations per parameter and token forward, four backward",
                            "还要乘以 6：每个参数、每个词元前向 2 次运算，反向 4 次"),
    }
    case = Case("training compute", "训练计算量", (), np.array(expected),
                "six operations per parameter and per token read; tokens read = steps × windows × tokens",
                "每个参数、每读一个词元 6 次运算；读过的词元 = 步数 × 窗口数 × 每窗口词元数",
                diagnose=_number_diagnose(mistakes), atol=1e-6 * expected, reveal=False)
    return check_by_hand("training compute by hand · 手算训练计算量", answer, case)


# ---------------------------------------------------------------- overlapping windows by hand

def check_min_context(answer) -> Verdict:
    """Check the fewest tokens a target sees after the first window of a sliding reading (chapter 9).

    Args:
        answer: one integer for :data:`SLIDING`; ``...`` means "not answered yet".
    """
    ctx, stride = SLIDING["ctx"], SLIDING["stride"]
    expected = np.array(float(ctx - stride + 1))
    mistakes = {
        float(ctx - stride): ("off by one: the first scored target of a window also sees the token at its own "
                              "input position", "差了一个：窗口里第一个计分的目标还能看到它自己那个输入位置上的词元"),
        float(stride): ("that is the stride: the scored targets are a window's last ones, after ctx - stride of its "
                        "tokens", "这是步长：计分的是窗口里最后的那些目标，前面还有 ctx - stride 个词元"),
        1.0: ("that is the disjoint reading: with overlapping windows only the first window has a target with one "
              "token before it", "这是不重叠的读法：窗口重叠时，只有第一个窗口里的目标前面只有一个词元"),
        float(ctx): ("that is the most a target sees, not the least", "这是一个目标最多能看到的，不是最少"),
    }
    case = Case("the least context", "最少的上文", (), expected,
                "find a later window's first scored target and count the tokens of the window before it and at it",
                "找到之后某个窗口里第一个计分的目标，数一数窗口中在它之前及它所在位置的词元",
                diagnose=_number_diagnose(mistakes), atol=0.5, reveal=False)
    return check_by_hand("overlapping windows by hand · 手算重叠窗口", answer, case)


# ---------------------------------------------------------------- the moving average

def reference_ema(weights, beta):
    """``W̄ ← β W̄ + (1 − β) W`` over the rows of ``weights`` (T, n), starting from the first row."""
    weights = np.asarray(weights, dtype=float)
    average = weights[0].copy()
    for W in weights[1:]:
        average = beta * average + (1 - beta) * W
    return average


def _ema_diagnose(weights, beta):
    def check(got):
        got = np.asarray(got, dtype=float)
        if got.shape != weights.shape[1:] or not np.isfinite(got).all():
            return None
        if np.allclose(got, reference_ema(weights, beta), atol=1e-9):
            return None
        if np.allclose(got, reference_ema(weights, 1 - beta), atol=1e-9):
            return ("β and 1 − β are swapped: the average keeps the share β of itself and takes 1 − β from the "
                    "new weights", "β 和 1 − β 弄反了：平均保留自身的 β，从新权重取 1 − β")
        if np.allclose(got, weights.mean(axis=0), atol=1e-9):
            return ("that is the plain mean: the moving average weighs recent steps more, by β per step back",
                    "这是简单平均：滑动平均更看重最近的步，每往回一步乘一次 β")
        if np.allclose(got, reference_ema(np.concatenate([np.zeros_like(weights[:1]), weights]), beta), atol=1e-9):
            return ("the average starts at the first weights, W̄_s = W_s, not at zero",
                    "平均从第一组权重开始，W̄_s = W_s，而不是从零开始")
        if np.allclose(got, reference_ema(weights[:-1], beta), atol=1e-9):
            return ("the last row is missing: update the average with every row after the first",
                    "漏了最后一行：第一行之后的每一行都要更新平均")
        return None
    return check


def check_ema(fn) -> Verdict:
    """Check ``ema(weights, beta)`` (chapter 9).

    Args:
        fn: takes ``weights`` of shape ``(T, n)`` (the weights at the average's start and after each
            later step) and ``beta`` in (0, 1); returns the average after the last row, shape ``(n,)``.
    """
    rng = np.random.default_rng(4)
    cases = []
    for name_en, name_zh, weights, beta in (
            ("three steps of one weight", "一个权重的三步", np.array([[1.0], [2.0], [4.0]]), 0.5),
            ("a noisy run of four weights", "四个权重的一次带噪训练", 1 + 0.1 * rng.normal(size=(50, 4)), 0.9),
            ("β = 0.998 over 300 steps", "β = 0.998，300 步", rng.normal(size=(300, 3)), 0.998),
            ("one row only", "只有一行", np.array([[0.5, -1.0]]), 0.9)):
        cases.append(Case(name_en, name_zh, (weights, beta), reference_ema(weights, beta),
                          "start from the first row; then average = β · average + (1 − β) · row, for each later row",
                          "从第一行开始；之后每一行：平均 = β · 平均 + (1 − β) · 该行",
                          diagnose=_ema_diagnose(weights, beta), atol=1e-9))
    return run_checker("an exponential moving average · 指数滑动平均", fn, cases)


# ---------------------------------------------------------------- Newton-Schulz

def reference_newton_schulz(D, steps):
    """Muon's quintic Newton-Schulz iteration on ``D / (‖D‖_F + 1e-7)``, ``steps`` times, on the
    transpose of a tall matrix (the iteration of :func:`course_lib.training.muon.newton_schulz`)."""
    a, b, c = NS_COEFFICIENTS
    D = np.asarray(D, dtype=float)
    tall = D.shape[0] > D.shape[1]
    X = D.T if tall else D
    X = X / (np.linalg.norm(X) + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X.T if tall else X


def _ns_diagnose(D, steps):
    a, b, c = NS_COEFFICIENTS

    def check(got):
        got = np.asarray(got, dtype=float)
        if got.shape != np.shape(D) or not np.isfinite(got).all():
            return None
        if np.allclose(got, reference_newton_schulz(D, steps), atol=1e-9):
            return None
        if steps > 0 and np.allclose(got, reference_newton_schulz(D, steps - 1), atol=1e-9):
            return (f"one step short: apply the step {steps} times", f"少了一次：要迭代 {steps} 次")
        X = np.asarray(D, dtype=float)
        with np.errstate(all="ignore"):              # unnormalised, the values may overflow
            for _ in range(steps):                  # no normalisation first
                A = X @ X.T
                X = a * X + (b * A + c * A @ A) @ X
        if np.isfinite(X).all() and np.allclose(got, X, atol=1e-9):
            return ("divide D by its Frobenius norm first, so that every singular value lies in [0, 1]",
                    "先把 D 除以它的 Frobenius 范数，使每个奇异值都落在 [0, 1] 之内")
        return None
    return check


def check_newton_schulz(fn) -> Verdict:
    """Check ``newton_schulz(D, steps)`` (chapter 9).

    Args:
        fn: takes a matrix ``D`` of shape ``(m, n)`` and a number of steps; returns the matrix of
            shape ``(m, n)`` after ``steps`` quintic steps on ``D / (‖D‖_F + 1e-7)``.
    """
    rng = np.random.default_rng(5)
    cases = []
    for name_en, name_zh, D, steps in (
            ("a diagonal 2 × 2, one step", "2 × 2 对角矩阵，一步", np.diag([3.0, 0.1]), 1),
            ("a wide 3 × 5, five steps", "3 × 5 的宽矩阵，五步", rng.normal(size=(3, 5)), 5),
            ("a tall 6 × 2, five steps", "6 × 2 的高矩阵，五步", rng.normal(size=(6, 2)), 5),
            ("a square 4 × 4, three steps", "4 × 4 方阵，三步", rng.normal(size=(4, 4)), 3)):
        cases.append(Case(name_en, name_zh, (D, steps), reference_newton_schulz(D, steps),
                          "X = D / (‖D‖_F + 1e-7), then X ← aX + b(XXᵀ)X + c(XXᵀ)²X, on the transpose if m > n",
                          "X = D / (‖D‖_F + 1e-7)，然后 X ← aX + b(XXᵀ)X + c(XXᵀ)²X；m > n 时对转置迭代",
                          diagnose=_ns_diagnose(D, steps), atol=1e-9))
    return run_checker("Newton–Schulz steps · Newton–Schulz 迭代", fn, cases)
