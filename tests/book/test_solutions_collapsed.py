"""Exercise solutions open collapsed in JupyterLab, and stay dropdowns in the book.

tools/sync.py gives every code cell between a `{solution-start}` and its
`{solution-end}` the cell metadata `jupyter: {source_hidden: true,
outputs_hidden: true}` (and no other cell); `python tools/sync.py
--metadata-only` fixes existing notebooks without re-executing them. The .md
does not carry it (jupytext keeps only `tags`), so pairs keep identical inputs.
"""

import jupytext
import nbformat
import pytest

from sync import HIDDEN, mark_solutions, solution_code_cells
from toc import ROOT, notebooks


@pytest.mark.parametrize("ipynb", notebooks(), ids=lambda p: p.stem)
def test_solution_code_cells_are_collapsed_and_only_they(ipynb):
    nb = nbformat.read(ipynb, as_version=4)
    solutions = set(solution_code_cells(nb))
    for i, cell in enumerate(nb.cells):
        jup = cell.metadata.get("jupyter", {})
        hidden = {k: jup.get(k) for k in HIDDEN}
        if i in solutions:
            assert hidden == HIDDEN, (
                f"{ipynb.name} cell {i} is a solution's code cell but is not collapsed in JupyterLab "
                f"(jupyter: {jup}); run `python tools/sync.py --metadata-only {ipynb.with_suffix('.md').relative_to(ROOT)}`")
        else:
            assert not any(hidden.values()), (
                f"{ipynb.name} cell {i} is collapsed (jupyter: {jup}) but is not inside a solution; "
                "run `python tools/sync.py --metadata-only`")


@pytest.mark.parametrize("ipynb", notebooks(), ids=lambda p: p.stem)
def test_the_md_does_not_carry_the_collapse(ipynb):
    text = ipynb.with_suffix(".md").read_text(encoding="utf-8")
    assert "source_hidden" not in text and "outputs_hidden" not in text, (
        f"{ipynb.with_suffix('.md').name}: the collapse of solutions lives in the .ipynb only "
        "(set by tools/sync.py)")


def test_the_chapters_with_solutions_are_found():
    nb = nbformat.read(ROOT / "book" / "ch02_worked_qkv.ipynb", as_version=4)
    cells = solution_code_cells(nb)
    assert len(cells) == 4, cells        # ch02: four coding exercises with a solution cell
    assert all("ex.check_" in nb.cells[i].source for i in cells)
    # a stub (the exercise's own cell) is never collapsed
    assert not any("raise NotImplementedError" in nb.cells[i].source for i in cells)


def test_gates_are_read_in_order_within_a_cell():
    md = jupytext.reads("\n".join([
        "```{code-cell} ipython3", "a = 0", "```",
        "", "```{solution-start} x", ":class: dropdown", "```",
        "", "```{code-cell} ipython3", "a = 1", "```",
        "", "```{solution-end}", "```", "", "```{exercise-start} y", "```",
        "", "```{code-cell} ipython3", "a = 2", "```",
        "", "```{exercise-end}", "```", "", "```{solution-start} y", "```",
        "", "```{code-cell} ipython3", "a = 3", "```",
        "", "```{solution-end}", "```"]), fmt="md:myst")
    code = [c.source for c in md.cells if c.cell_type == "code"]
    assert [md.cells[i].source for i in solution_code_cells(md)] == ["a = 1", "a = 3"], code
    md.cells[[c.source for c in md.cells].index("a = 2")].metadata["jupyter"] = {"source_hidden": True}
    assert mark_solutions(md) == 2
    assert [c.source for c in md.cells if c.metadata.get("jupyter") == HIDDEN] == ["a = 1", "a = 3"]
    assert "jupyter" not in md.cells[[c.source for c in md.cells].index("a = 2")].metadata
