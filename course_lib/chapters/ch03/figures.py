"""Chapter 3's figures (``ch03_multi_head``): each one call from the page, its styling here.

The page computes the numbers (attention weights, variances, the saturation curve) and
hands them to these functions, which only draw (into a new figure, which the notebook shows;
they return None, so that a call ending a cell does not show it twice).
"""

from __future__ import annotations

import numpy as np

from ...display.plotting import heatmap

__all__ = ["plot_heads", "plot_variance", "plot_saturation"]


def plot_heads(weights, words, title: str):
    """Eight (or any number of) attention maps side by side, two rows (chapter 3).

    Args:
        weights: ``(num_heads, L, L)`` attention weights of one sequence, rows summing to 1.
        words: the ``L`` words of the sequence (row and column labels).
        title: the figure's title (bilingual).
    """
    import matplotlib.pyplot as plt

    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or weights.shape[1] != weights.shape[2]:
        raise ValueError(f"weights must have shape (num_heads, L, L), got {weights.shape}")
    if len(words) != weights.shape[1]:
        raise ValueError(f"words must have L = {weights.shape[1]} entries, got {len(words)}")
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {type(title).__name__}")
    num_heads, L = weights.shape[0], weights.shape[1]
    cols = (num_heads + 1) // 2
    fig, axes = plt.subplots(2, cols, figsize=(3.75 * cols, 7.6), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= num_heads:
            ax.axis("off")
            continue
        heatmap(weights[h], ax=ax, decimals=None, vmin=0, vmax=1,
                row_labels=list(words) if h % cols == 0 else [""] * L, col_labels=list(words),
                title=f"Head {h + 1} · 头 {h + 1}")
        ax.tick_params(axis="x", labelrotation=90)
    fig.supxlabel("key (attended word) · 键（被关注的词）")
    fig.supylabel("query · 查询")
    fig.suptitle(title)
    fig.tight_layout()


def _curves(data, keys):
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise ValueError(f"data must be a dict with the keys {list(keys)}, got "
                         f"{sorted(data) if isinstance(data, dict) else type(data).__name__}")
    return {k: np.asarray(data[k], dtype=float) for k in keys}


def plot_variance(var):
    """The variance of ``q·k`` and of ``q·k/√d_k`` against ``d_k`` on log-log axes (chapter 3).

    Args:
        var: the dict of :func:`course_lib.analysis.scaling.dot_product_variance`
            (``d_k``, ``var``, ``var_scaled``).
    """
    import matplotlib.pyplot as plt

    c = _curves(var, ("d_k", "var", "var_scaled"))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.loglog(c["d_k"], c["d_k"], color="0.75", lw=4, label="d_k (theory · 理论)")
    ax.loglog(c["d_k"], c["var"], "o-", label="Var(q·k), measured · 实测")
    ax.loglog(c["d_k"], c["var_scaled"], "s-", label="Var(q·k / √d_k), measured · 实测")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("head width d_k · 头宽 d_k")
    ax.set_ylabel("variance of the score · 分数的方差")
    ax.set_title("The variance of q·k grows like d_k · q·k 的方差随 d_k 增长")
    ax.legend()
    fig.tight_layout()


def plot_saturation(sat, L_k: int):
    """Mean largest weight and median ‖J‖_F against ``d_k``, unscaled and scaled (chapter 3).

    Args:
        sat: the dict of :func:`course_lib.analysis.scaling.saturation_curve`.
        L_k: the number of keys it used (the uniform weight 1/L_k is drawn as a dotted line).
    """
    import matplotlib.pyplot as plt

    keys = ("d_k", "max_weight", "max_weight_scaled", "grad_norm", "grad_norm_scaled")
    c = _curves(sat, keys)
    if isinstance(L_k, bool) or not isinstance(L_k, int) or L_k < 1:
        raise ValueError(f"L_k must be a positive int, got {L_k!r}")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, ylabel in ((ax1, "max_weight", "mean largest weight · 平均最大权重"),
                            (ax2, "grad_norm", "median ‖J‖_F · 中位数")):
        ax.plot(c["d_k"], c[key], "o-", color="C3", label="q·k (unscaled · 未缩放)")
        ax.plot(c["d_k"], c[key + "_scaled"], "s-", color="C0", label="q·k / √d_k (scaled · 缩放)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("head width d_k · 头宽 d_k")
        ax.set_ylabel(ylabel)
    ax1.axhline(1 / L_k, color="0.6", ls=":", label=f"uniform · 均匀 = 1/{L_k}")
    ax1.legend()
    ax2.legend()
    ax2.set_yscale("log")
    ax1.set_title("Softmax saturates · softmax 饱和")
    ax2.set_title("Gradient through the softmax · 穿过 softmax 的梯度")
    fig.tight_layout()
