"""A chapter's visible code is mostly the idea, not plumbing (tools/plumbing.py has the rule).

Every chapter: display, glue, check, table and figure-styling statements are 10 % of its
visible code lines at most; the whole book shows 10 lines that declare a band at most.
"""

import pytest

import plumbing

HEADER = """---
jupytext:
  text_representation:
    format_name: myst
---

# A synthetic chapter
"""


def _cell(source, tags=None):
    head = f":tags: [{', '.join(tags)}]\n\n" if tags else ""
    return f"\n```{{code-cell}} ipython3\n{head}{source}\n```\n"


# 20 visible lines of computation, none of them plumbing.
COMPUTE = _cell("\n".join(f"x{i} = {i} * 2" for i in range(20)))


@pytest.mark.parametrize("path", plumbing.chapters(), ids=lambda p: p.stem)
def test_plumbing_is_a_tenth_of_the_visible_code_at_most(path):
    m = plumbing.measure([path])["chapters"][path.stem]
    assert m["share"] <= plumbing.SHARE_MAX, (
        f"{path.stem}: {m['plumbing_lines']} of {m['visible_lines']} visible code lines are plumbing "
        f"({m['share']:.1%} > {plumbing.SHARE_MAX:.0%}): hide the display, glue, check and styling "
        "cells (hide-input) or move them into course_lib (python tools/plumbing.py shows every chapter)")


def test_the_book_shows_ten_band_lines_at_most():
    result = plumbing.measure()
    per = {k: m["band_lines"] for k, m in result["chapters"].items() if m["band_lines"]}
    assert result["book"]["band_lines"] <= plumbing.BAND_LINES_MAX, (
        f"{result['book']['band_lines']} visible lines call band()/band_for() or pass reference= "
        f"(at most {plumbing.BAND_LINES_MAX} in the book): {per}")


def test_a_chapter_of_computation_has_no_plumbing():
    m = plumbing.measure_text(HEADER + COMPUTE)
    assert (m["visible_lines"], m["plumbing_lines"], m["band_lines"]) == (20, 0, 0)


def test_a_visible_plumbing_cell_pushes_a_chapter_over_the_goal():
    planted = _cell('glue("acc", acc, ".3f")\n'
                    'check("loss falls · 损失下降",\n      loss[-1] < loss[0])\n'
                    'ax.set_xlabel("step · 步骤")')
    m = plumbing.measure_text(HEADER + COMPUTE + planted)
    assert (m["visible_lines"], m["plumbing_lines"]) == (24, 4)
    assert m["share"] > plumbing.SHARE_MAX


def test_a_hidden_plumbing_cell_does_not_count():
    hidden = _cell('glue("acc", acc, ".3f")\nfig.tight_layout()\nax.legend()', tags=["hide-input"])
    removed = _cell('chapters.show("ch01-x")', tags=["remove-cell"])
    output_hidden = _cell('x = compute()', tags=["hide-output"])       # code still visible
    m = plumbing.measure_text(HEADER + COMPUTE + hidden + removed + output_hidden)
    assert (m["visible_lines"], m["plumbing_lines"], m["hidden_lines"]) == (21, 0, 4)


@pytest.mark.parametrize("source, expected", [
    ('_ = display(Table(rows))', 1),                                 # assignment, display wrapping a table
    ('repro.band("loss", loss, rel=repro.LIVE_REL_MIN)', 1),
    ('chapters.compare("ex", "step", "label")', 1),
    ('md = display.md_escape(s)', 1),                                # a name of course_lib.display.__all__
    ('for ax, t in zip(axes, titles):\n    ax.set_title(t)\n    ax.grid(True)', 3),
    ('for ax in axes:\n    ax.plot(x, y)\n    ax.set_title("t")', 0),   # a loop that draws data is not
    ('axes[0, 1].set_ylabel("y")\nax.xaxis.set_minor_locator(loc)', 2),
    ('ax.axhline(0, color="gray")', 1),                               # decoration
    ('ax.axhline(bigram, label="bigram")', 0),                        # a reference line is data
    ('print("loss", loss)', 0),
    ('plt.plot(x, y)', 0),
    ('torch.set_num_threads(2)', 0),                                  # set_ on something not a figure
    ('plotting.setup()\nplotting.style_axes(ax)', 2),
    ('loss = train(model, steps=10)', 0),
    ('%matplotlib inline\nfig.tight_layout()', 1),
    ('if ok:\n    check("ok", ok)', 0),                                 # only top-level statements and loops
])
def test_the_statement_rule(source, expected):
    helpers = plumbing.HELPERS | plumbing.display_names()
    assert len(plumbing.plumbing_lines(source, helpers)) == expected


def test_band_lines_are_counted_in_visible_cells_only():
    cells = (_cell('repro.band("loss", x, rel=1e-3)\nrun = train(r, reference=curve)\nmy_band = 3')
             + _cell('band_for("acc", a)', tags=["hide-input"]))
    assert plumbing.measure_text(HEADER + cells)["band_lines"] == 2


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="text"):
        plumbing.measure_text(None)
