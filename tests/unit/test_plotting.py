"""Figures render Chinese glyphs, and the heatmap helper checks its input."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

from course_lib.display import plotting

DRAW = """
import warnings, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
{setup}
fig, ax = plt.subplots()
ax.set_title("Attention weights · 注意力权重")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fig.canvas.draw()
print(sum("missing from font" in str(w.message) for w in caught))
"""


def _missing_glyphs(setup: str) -> int:
    out = subprocess.run([sys.executable, "-c", DRAW.format(setup=setup)], capture_output=True,
                         text=True, check=True)
    return int(out.stdout.strip())


def test_without_setup_chinese_glyphs_are_missing():
    # The check below can fail: plain DejaVu Sans has no Chinese glyphs.
    assert _missing_glyphs("") > 0


def test_setup_gives_every_chinese_glyph():
    assert _missing_glyphs("from course_lib.display import plotting; plotting.setup()") == 0


def test_font_file_exists():
    assert plotting.cjk_font_path().suffix == ".otf"


def test_heatmap_draws_each_value_in_its_own_cell():
    """An asymmetric, non-square matrix: a transposed cell, label or image shows up."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plotting.setup()
    M = np.array([[0.1, 0.2, 0.7],
                  [0.6, 0.3, 0.1]])
    fig, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        im = plotting.heatmap(M, ax=ax, decimals=1, row_labels=["查询 1", "q2"], col_labels=["k1", "k2", "k3"])
        fig.canvas.draw()
    np.testing.assert_array_equal(im.get_array(), M)                  # row i of the image is query i
    drawn = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    assert drawn == {(i, j): f"{M[i, j]:.1f}" for i in range(2) for j in range(3)}   # text at (x=j, y=i)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["查询 1", "q2"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2", "k3"]
    # the darkest cell gets white text, the rest black
    colours = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_color() for t in ax.texts}
    assert colours[(0, 2)] == "white" and colours[(0, 0)] == "black"
    plt.close(fig)


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"M": np.ones(3)}, ValueError, r"M must be a 2-D matrix"),
    ({"M": np.ones((2, 2)), "row_labels": ["a"]}, ValueError, r"row_labels must have 2 entries"),
    ({"M": np.ones((2, 3)), "col_labels": ["a"]}, ValueError, r"col_labels must have 3 entries"),
    ({"M": "text"}, TypeError, r"M must be an array of real numbers"),
])
def test_heatmap_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        plotting.heatmap(**kwargs)
