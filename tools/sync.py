"""Re-pair and re-execute the chapters: book/<name>.md -> book/<name>.ipynb.

The .md (MyST) is the file people edit. This script reads it with jupytext,
executes it top to bottom in a fresh kernel (working directory: the
notebook's folder) and writes the .ipynb with the real outputs, which the
book shows and `pytest --nbval` re-checks.

    python tools/sync.py                  # every paired page in _toc.yml
    python tools/sync.py book/ch02_worked_qkv.md
    python tools/sync.py --metadata-only [FILES]   # only the cell metadata below, no execution

Solutions open collapsed in JupyterLab: every code cell between a
`{solution-start}` and its `{solution-end}` gets the cell metadata
`jupyter: {source_hidden: true, outputs_hidden: true}` in the .ipynb (the
book shows them in a closed dropdown anyway). This script is the one place
that sets it; `--metadata-only` rewrites just that metadata in existing
.ipynb files (outputs untouched). The .md does not carry it (jupytext.toml
keeps only `tags` there). JupyterLab keeps it when it opens and saves a pair
if the .md says so: its header's `jupytext:` holds `cell_metadata_filter:
tags,-all` and `notebook_metadata_filter: -all` (or it has no header, which
is what a save in Lab writes); see tools/jupyter/jupyter_server_config.py.
"""

import re
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).parent))
from toc import ROOT, pages  # noqa: E402


def has_code(md: Path) -> bool:
    nb = jupytext.read(md)
    return any(c.cell_type == "code" and c.source.strip() for c in nb.cells)


SOLUTION_DIRECTIVE = re.compile(r"^\s*(?:`{3,}|:{3,})\{(solution-start|solution-end)\}", re.M)
HIDDEN = {"source_hidden": True, "outputs_hidden": True}


def solution_code_cells(nb) -> list[int]:
    """Indices of the code cells inside a gated solution (`{solution-start}` … `{solution-end}`)."""
    inside, out = False, []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for m in SOLUTION_DIRECTIVE.finditer(cell.source):
                inside = m.group(1) == "solution-start"
        elif cell.cell_type == "code" and inside:
            out.append(i)
    return out


def mark_solutions(nb) -> int:
    """Set `jupyter.source_hidden`/`outputs_hidden` on solution code cells, and only on them.

    Returns the number of solution code cells.
    """
    solutions = set(solution_code_cells(nb))
    for i, cell in enumerate(nb.cells):
        jup = cell.metadata.get("jupyter", {})
        if i in solutions:
            cell.metadata["jupyter"] = {**jup, **HIDDEN}
        elif any(k in jup for k in HIDDEN):
            jup = {k: v for k, v in jup.items() if k not in HIDDEN}
            if jup:
                cell.metadata["jupyter"] = jup
            else:
                cell.metadata.pop("jupyter")
    return len(solutions)


def metadata_only(ipynb: Path) -> bool:
    """Rewrite only the solution metadata of an existing .ipynb; True if it changed."""
    text = ipynb.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    mark_solutions(nb)
    new = nbformat.writes(nb) + "\n"
    if new != text:
        ipynb.write_text(new, encoding="utf-8")
    return new != text


def sync(md: Path) -> float:
    nb = jupytext.read(md)
    mark_solutions(nb)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,md:myst"
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"  # stable ids: clean diffs
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(md.parent)}}).execute()
    seconds = time.perf_counter() - start
    nbformat.write(nb, md.with_suffix(".ipynb"))
    return seconds


def main(args) -> int:
    only_metadata = "--metadata-only" in args
    args = [a for a in args if a != "--metadata-only"]
    targets = [Path(a).resolve() for a in args] or [
        ROOT / f"{p}.md" for p in pages() if (ROOT / f"{p}.md").exists() and has_code(ROOT / f"{p}.md")]
    if only_metadata:
        for md in targets:
            ipynb = md.with_suffix(".ipynb")
            if not ipynb.exists():
                print(f"skip {ipynb.relative_to(ROOT)}: no .ipynb yet (run make sync)", flush=True)
                continue
            changed = metadata_only(ipynb)
            print(f"{'wrote' if changed else 'kept '} {ipynb.relative_to(ROOT)} (solution metadata)", flush=True)
        return 0
    for md in targets:
        print(f"sync {md.relative_to(ROOT)} ...", flush=True)
        print(f"     executed in {sync(md):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
