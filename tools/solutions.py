"""`make solutions`: run every exercise's reference solution against its checker.

For each chapter notebook, the code cells run in order in one namespace (as
in Jupyter). Every cell between ``{solution-start}`` and ``{solution-end}``
must end with a checker call whose verdict is ✓; every exercise cell (between
``{exercise-start}`` and ``{exercise-end}``) must still hold the stub, so its
verdict is "waiting for your answer". Prints one line per exercise cell.
"""

import ast
import contextlib
import io
import os
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
from toc import notebooks  # noqa: E402

GATES = re.compile(r"^```\{(exercise|solution)-(start|end)\}", re.M)


def gated_cells(nb) -> list[tuple[str, str, object]]:
    """``(kind, label, cell)`` for every code cell inside an exercise or solution gate."""
    inside, label, out = None, "", []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for m in GATES.finditer(cell.source):  # a cell may end one gate and open the next
                inside = m.group(1) if m.group(2) == "start" else None
                if inside:
                    rest = cell.source[m.start():]
                    found = re.search(r"^:label: (\S+)|\{solution-start\} (\S+)", rest, re.M)
                    label = next(g for g in found.groups() if g) if found else ""
        elif inside:
            out.append((inside, label, cell))
    return out


def run_notebook(ipynb: Path) -> list[tuple[str, str, object]]:
    """Run a notebook's code; return ``(kind, label, verdict)`` per gated code cell."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    nb = nbformat.read(ipynb, as_version=4)
    gated = {id(cell): (kind, label) for kind, label, cell in gated_cells(nb)}
    from IPython.display import display  # a builtin in Jupyter, which chapters may call
    namespace: dict = {"__name__": "__main__", "display": display}
    results = []
    cwd = os.getcwd()
    os.chdir(ipynb.parent)
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                value = _exec_cell(cell.source, namespace)
            if id(cell) in gated:
                results.append((*gated[id(cell)], value))
            if "matplotlib.pyplot" in sys.modules:   # figures are not needed here
                sys.modules["matplotlib.pyplot"].close("all")
    finally:
        os.chdir(cwd)
    return results


def _exec_cell(source: str, namespace: dict):
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is not None:
        return eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
    return None


def main() -> int:
    failures = 0
    for ipynb in notebooks():
        if not gated_cells(nbformat.read(ipynb, as_version=4)):
            continue
        for kind, label, verdict in run_notebook(ipynb):
            ok = bool(verdict) if kind == "solution" else getattr(verdict, "pending", False)
            failures += not ok
            first = repr(verdict).splitlines()[0] if verdict is not None else "(no verdict)"
            print(f"{'ok  ' if ok else 'FAIL'} {ipynb.stem:<24} {kind:<8} {label:<22} {first}")
    print(f"{failures} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
