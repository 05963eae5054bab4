"""`make lab`: JupyterLab lists the .ipynb of each pair, opens it with its outputs and
its solutions collapsed, and a save writes both files of the pair.

The server settings are tools/jupyter/jupyter_server_config.py; these tests load
them into jupytext's contents manager (what `jupyter lab` uses) in-process, on a
copy of chapter 2 in a temporary folder: no server, no browser.
"""

import asyncio
import fnmatch
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest
from traitlets.config import Config

from sync import HIDDEN, solution_code_cells
from toc import ROOT, notebooks, pages

CONFIG = ROOT / "tools" / "jupyter" / "jupyter_server_config.py"


def _config() -> Config:
    c = Config()
    code = CONFIG.read_text(encoding="utf-8")
    exec(compile(code, str(CONFIG), "exec"), {"get_config": lambda: c, "__file__": str(CONFIG)})
    return c


def test_the_file_browser_hides_the_md_of_each_pair_only():
    globs = _config().ContentsManager.hide_globs
    hidden = lambda name: any(fnmatch.fnmatch(name, g) for g in globs)  # noqa: E731
    for nb in notebooks():
        assert hidden(nb.with_suffix(".md").name) and not hidden(nb.name), nb.name
    for p in pages():
        if not (ROOT / f"{p}.ipynb").exists():                  # prose-only pages stay visible
            assert not hidden(Path(p).name + ".md"), p
    assert "__pycache__" in globs and "*.pyc" in globs      # Jupyter's defaults kept


def test_jupytext_settings_are_the_projects():
    import tomllib
    c = _config().JupytextConfiguration
    for key, value in tomllib.loads((ROOT / "jupytext.toml").read_text(encoding="utf-8")).items():
        assert c[key] == value, key


@pytest.fixture
def lab_copy(tmp_path):
    for suffix in (".md", ".ipynb"):
        shutil.copy(ROOT / "book" / f"ch02_worked_qkv{suffix}", tmp_path)
    return tmp_path


def test_open_edit_save_in_lab_keeps_the_pair_and_the_collapsed_solutions(lab_copy):
    from jupytext.async_contentsmanager import AsyncTextFileContentsManager
    cm = AsyncTextFileContentsManager(root_dir=str(lab_copy), config=_config())
    name = "ch02_worked_qkv.ipynb"

    async def run():
        model = await cm.get(name, content=True)       # the .ipynb is newer than the .md: still opens
        nb = nbformat.from_dict(model["content"])
        assert sum(len(c.get("outputs", [])) for c in nb.cells) > 20, "outputs come from the .ipynb"
        sol = solution_code_cells(nb)
        assert sol and all(nb.cells[i].metadata.get("jupyter") == HIDDEN for i in sol)
        nb.cells[sol[0]].source += "\n# edited in Lab"
        await cm.save({"type": "notebook", "format": "json", "content": nb}, name)
        return nbformat.from_dict((await cm.get(name, content=True))["content"])

    reopened = asyncio.run(run())
    md_text = (lab_copy / "ch02_worked_qkv.md").read_text(encoding="utf-8")
    assert "# edited in Lab" in md_text, "the edit did not reach the .md"
    assert "source_hidden" not in md_text
    md, ipynb = jupytext.read(lab_copy / "ch02_worked_qkv.md"), nbformat.read(lab_copy / "ch02_worked_qkv.ipynb", 4)
    assert [(c.cell_type, c.source.strip(), c.metadata.get("tags")) for c in md.cells] == \
        [(c.cell_type, c.source.strip(), c.metadata.get("tags")) for c in ipynb.cells]
    for nb in (ipynb, reopened):
        assert [i for i, c in enumerate(nb.cells) if c.metadata.get("jupyter") == HIDDEN] == \
            solution_code_cells(nb)
