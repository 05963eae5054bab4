"""Jupyter server settings for `make lab` (passed with --config): the book in JupyterLab.

- Every chapter is a pair: the .ipynb (with the outputs of a real run) and its
  .md (MyST, the file reviewers read). Lab lists only the .ipynb of a pair: the
  paired .md files are hidden from the file browser (`hide_globs`), so the
  reader opens the notebook that shows the outputs. Pages without code
  (intro, exercises, glossary) are plain .md and stay visible; they open as
  notebooks (tools/jupyter/overrides.json) with MyST rendered by jupyterlab-myst.
- Saving a notebook in Lab still writes both files (jupytext pairing): Lab
  runs in book/, below the project's jupytext.toml, which jupytext would not
  find there, so its settings (formats, metadata filters) are applied here.
  The .md then keeps only the `tags` cell metadata; the .ipynb keeps the rest,
  e.g. the collapsed solutions (`jupyter.source_hidden`, set by tools/sync.py).
"""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from toc import notebooks  # noqa: E402

c = get_config()  # noqa: F821  (provided by traitlets when it loads this file)

# jupytext.toml, exactly (formats = "ipynb,md:myst", notebook/cell metadata filters)
for key, value in tomllib.loads((ROOT / "jupytext.toml").read_text(encoding="utf-8")).items():
    setattr(c.JupytextConfiguration, key, value)

# the .md half of every pair, by file name (Jupyter's defaults kept)
c.ContentsManager.hide_globs = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~",
                                ".ipynb_checkpoints"] + sorted(
    {nb.with_suffix(".md").name for nb in notebooks()})

# The .ipynb of a pair is always newer than its .md (tools/sync.py writes it
# after the .md was edited), by design: inputs come from the .md, outputs from
# the .ipynb. Jupytext's staleness check would refuse to open every synced
# chapter, so it is switched off.
c.JupytextConfiguration.outdated_text_notebook_margin = float("inf")
