"""Chapter 3's figures (course_lib.chapters.ch03.figures): what each draws, and bad input."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course_lib.chapters.ch03 import figures  # noqa: E402
from course_lib.display import plotting  # noqa: E402

plotting.setup()                                  # the CJK font the labels need


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_plot_heads_draws_each_head_with_its_own_weights():
    words = "the old cat sat on a red mat".split()
    weights = np.stack([np.eye(8)[np.roll(np.arange(8), h)] for h in range(8)])    # head h reads h places on
    assert figures.plot_heads(weights, words, "title") is None
    axes = plt.gcf().axes
    images = [ax.images[0] for ax in axes if ax.images]
    assert len(images) == 8
    for h, im in enumerate(images):
        np.testing.assert_array_equal(im.get_array(), weights[h])
        assert im.axes.get_title() == f"Head {h + 1} · 头 {h + 1}"
    assert [t.get_text() for t in images[0].axes.get_yticklabels()] == words
    assert plt.gcf()._suptitle.get_text() == "title"


def test_plot_variance_and_saturation_draw_the_given_curves():
    d_k = [1, 2, 4, 8]
    figures.plot_variance({"d_k": d_k, "var": [1.0, 2.1, 3.9, 8.2], "var_scaled": [1.0, 1.05, 0.98, 1.02]})
    ax = plt.gcf().axes[0]
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [1.0, 2.1, 3.9, 8.2])
    np.testing.assert_allclose(ax.lines[2].get_ydata(), [1.0, 1.05, 0.98, 1.02])
    sat = {"d_k": d_k, "max_weight": [0.2, 0.3, 0.4, 0.5], "max_weight_scaled": [0.2, 0.21, 0.22, 0.23],
           "grad_norm": [0.3, 0.2, 0.1, 0.01], "grad_norm_scaled": [0.3, 0.3, 0.3, 0.3]}
    figures.plot_saturation(sat, L_k=16)
    ax1, ax2 = plt.gcf().axes
    np.testing.assert_allclose(ax1.lines[0].get_ydata(), sat["max_weight"])
    np.testing.assert_allclose(ax2.lines[0].get_ydata(), sat["grad_norm"])
    np.testing.assert_allclose(ax2.lines[1].get_ydata(), sat["grad_norm_scaled"])
    assert ax1.lines[2].get_ydata()[0] == pytest.approx(1 / 16)          # the uniform weight
    assert ax2.get_yscale() == "log"


def test_bad_input_names_the_argument():
    words = list("abcd")
    with pytest.raises(ValueError, match="weights must have shape"):
        figures.plot_heads(np.zeros((2, 4, 3)), words, "t")
    with pytest.raises(ValueError, match="words must have L = 4"):
        figures.plot_heads(np.zeros((2, 4, 4)), words[:3], "t")
    with pytest.raises(TypeError, match="title must be a str"):
        figures.plot_heads(np.zeros((2, 4, 4)), words, None)
    with pytest.raises(ValueError, match="data must be a dict with the keys"):
        figures.plot_variance({"d_k": [1]})
    sat = dict.fromkeys(("d_k", "max_weight", "max_weight_scaled", "grad_norm", "grad_norm_scaled"), [1.0])
    with pytest.raises(ValueError, match="L_k must be a positive int"):
        figures.plot_saturation(sat, L_k=0)
