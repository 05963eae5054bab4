"""Figure helpers: one look for every chapter, and Chinese glyphs that render.

``setup()`` registers Noto Sans CJK SC (shipped by the PyPI package
``mplfonts``, installed by ``make``) as a fallback after DejaVu Sans, so a
bilingual title such as "Attention weights · 注意力权重" never shows
missing-glyph boxes. The chapters call ``setup()`` once, then use the
helpers below.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from .._validate import as_real_array

__all__ = ["setup", "cjk_font_path", "heatmap"]

_CJK_FILE = "NotoSansCJKsc-Regular.otf"


def cjk_font_path() -> Path:
    """Path of the Noto Sans CJK SC font file shipped with ``mplfonts``.

    Raises:
        RuntimeError: if ``mplfonts`` is not installed (``make book`` installs it).
    """
    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the Chinese font comes with the package 'mplfonts'; "
                           "install it with: pip install --no-deps mplfonts==0.0.11")
    path = Path(list(spec.submodule_search_locations)[0]) / "fonts" / _CJK_FILE
    if not path.exists():
        raise RuntimeError(f"mplfonts is installed but {_CJK_FILE} is missing from it")
    return path


def setup() -> str:
    """Set the course's figure style and register the Chinese fallback font.

    Returns:
        The font families in use, e.g. ``"DejaVu Sans + Noto Sans CJK SC"``.
    """
    import matplotlib
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(cjk_font_path()))
    cjk = font_manager.FontProperties(fname=str(cjk_font_path())).get_name()
    matplotlib.rcParams.update({
        "font.family": ["DejaVu Sans", cjk],
        "axes.unicode_minus": False,
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "axes.titlesize": 11,
        "image.cmap": "viridis",
    })
    return f"DejaVu Sans + {cjk}"


def heatmap(M, ax=None, *, row_labels=None, col_labels=None, title: str = "",
            xlabel: str = "", ylabel: str = "", decimals: int = 2, cmap: str = "Blues",
            vmin=None, vmax=None):
    """Draw a matrix as a heatmap with its values written in the cells.

    Args:
        M: ``(n, m)`` matrix, e.g. attention weights ``(L_q, L_k)``.
        ax: matplotlib axes (a new figure if None).
        row_labels, col_labels: tick labels, lengths ``n`` and ``m``.
        title, xlabel, ylabel: text (bilingual is fine).
        decimals: decimals of the numbers written in cells (``None``: none).
        vmin, vmax: colour range (default: the data's).

    Returns:
        The matplotlib ``AxesImage``.
    """
    import matplotlib.pyplot as plt

    M = as_real_array(M, "M")
    if M.ndim != 2:
        raise ValueError(f"M must be a 2-D matrix (n, m), got shape {M.shape}")
    for name, labels, n in (("row_labels", row_labels, M.shape[0]),
                            ("col_labels", col_labels, M.shape[1])):
        if labels is not None and len(labels) != n:
            raise ValueError(f"{name} must have {n} entries, got {len(labels)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.8 * M.shape[1], 0.8 + 0.7 * M.shape[0]))
    im = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(M.shape[1]), col_labels if col_labels is not None
                  else [str(j + 1) for j in range(M.shape[1])])
    ax.set_yticks(range(M.shape[0]), row_labels if row_labels is not None
                  else [str(i + 1) for i in range(M.shape[0])])
    if decimals is not None:
        lo, hi = np.nanmin(M), np.nanmax(M)
        mid = (lo + hi) / 2
        for (i, j), v in np.ndenumerate(M):
            ax.text(j, i, f"{v:.{decimals}f}", ha="center", va="center", fontsize=9,
                    color="white" if v > mid else "black")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return im
