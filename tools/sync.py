"""Re-pair and re-execute the chapters: book/<name>.md -> book/<name>.ipynb.

The .md (MyST) is the file people edit. This script reads it with jupytext,
executes it top to bottom in a fresh kernel (working directory: the
notebook's folder) and writes the .ipynb with the real outputs, which the
book shows and `pytest --nbval` re-checks.

    python tools/sync.py                  # every paired page in _toc.yml
    python tools/sync.py book/ch02_worked_qkv.md
"""

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


def sync(md: Path) -> float:
    nb = jupytext.read(md)
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
    targets = [Path(a).resolve() for a in args] or [
        ROOT / f"{p}.md" for p in pages() if (ROOT / f"{p}.md").exists() and has_code(ROOT / f"{p}.md")]
    for md in targets:
        print(f"sync {md.relative_to(ROOT)} ...", flush=True)
        print(f"     executed in {sync(md):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
