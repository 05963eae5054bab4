"""`make check` (tools/check.py): from the changed files to the tests and notebooks they can break."""

import json
import os
import re
import subprocess

import pytest

import check
from toc import ROOT, notebooks


def _imports_of(ipynb, package: str) -> bool:
    """Does a code cell of ``ipynb`` import ``package`` (or something inside it) by name?"""
    nb = json.loads(ipynb.read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    return re.search(rf"^\s*(from|import)\s+{re.escape(package)}\b", code, re.M) is not None


@pytest.fixture(scope="module")
def scratch():
    return check.select(["course_lib/scratch/attention.py"])


def test_a_module_selects_its_tests_and_the_chapters_importing_it(scratch):
    assert scratch.tests["tests/unit/test_scratch_attention.py"].startswith("imports course_lib/scratch/")
    direct = {nb.relative_to(ROOT).as_posix() for nb in notebooks() if _imports_of(nb, "course_lib.scratch")}
    assert direct and direct <= set(scratch.notebooks), direct - set(scratch.notebooks)
    # through course_lib's own imports: models/ builds on scratch/
    assert "tests/unit/test_models_core.py" in scratch.tests
    assert "tests/unit/test_hf_equivalence.py" in scratch.tests
    # and not what cannot be affected
    for unrelated in ["tests/unit/test_ci_skips.py", "tests/unit/test_parallel.py", "tests/unit/test_text.py"]:
        assert unrelated not in scratch.tests, (unrelated, scratch.tests.get(unrelated))


def test_the_reason_is_the_import_chain(scratch):
    why = scratch.tests["tests/unit/test_models_core.py"]
    assert why.startswith("imports ") and why.endswith("course_lib/scratch/attention.py")
    assert "course_lib/scratch/__init__.py -> course_lib/scratch/attention.py" in why


def test_a_lab_selects_only_what_uses_it():
    sel = check.select(["course_lib/labs/heads.py"])
    assert "tests/unit/test_heads_lab.py" in sel.tests
    assert "book/ch03_multi_head.ipynb" in sel.notebooks
    assert "book/ch02_worked_qkv.ipynb" not in sel.notebooks
    assert "tests/unit/test_scratch_attention.py" not in sel.tests


@pytest.mark.parametrize("page", ["book/ch02_worked_qkv.md", "book/ch02_worked_qkv.ipynb"])
def test_a_chapter_edit_selects_that_notebook_only(page):
    sel = check.select([page])
    assert list(sel.notebooks) == ["book/ch02_worked_qkv.ipynb"]
    assert sel.tests, "the book's static checks (pairs, headings, languages) run too"
    assert "tests/book/test_book_structure.py" in sel.tests
    for t in sel.tests:   # and nothing else: no unit test, no browser, no server, no built book
        assert t.startswith("tests/book/") and not check._serial_reason(t, ROOT), t


def test_the_registries_reach_every_chapter():
    """chapters.show(key) imports every chapter's errata: a chapter's erratum reaches the errata page."""
    sel = check.select(["course_lib/chapters/ch03/errata.py"])
    assert "book/appendix/errata.ipynb" in sel.notebooks and "book/ch03_multi_head.ipynb" in sel.notebooks
    assert "tests/chapters/test_errata.py" in sel.tests
    assert "tests/unit/test_scratch_attention.py" not in sel.tests


def test_data_conftest_sanitizer_and_the_rest():
    ckpt = check.select(["data/checkpoints/ch03-heads.safetensors"])         # named by its recipe's name
    assert "book/ch03_multi_head.ipynb" in ckpt.notebooks and "tests/unit/test_heads_lab.py" in ckpt.tests
    conf = check.select(["tests/conftest.py"])
    assert len(conf.tests) == len(list((ROOT / "tests").rglob("test_*.py"))) and not conf.notebooks
    sanitizer = check.select(["tools/nbval_sanitize.cfg"])
    assert len(sanitizer.notebooks) == len(notebooks()) and not sanitizer.tests
    make = check.select(["Makefile", "_ext/course_book.py"])
    assert make.unchecked == {"Makefile": "make test", "_ext/course_book.py": "make book"}
    mine = check.select(["tests/unit/test_text.py"])
    assert mine.tests == {"tests/unit/test_text.py": "changed"} and not mine.notebooks


def test_the_command_is_make_tests_in_parallel():
    sel = check.select(["book/ch02_worked_qkv.md"])
    cmd = check.command(sel)
    assert cmd[1:4] == ["-m", "pytest", "-q"]
    assert "book/ch02_worked_qkv.ipynb" in cmd and cmd[-4:] == check.NBVAL
    if check.workers(sel) > 1:
        assert cmd[4:8] == ["-n", str(check.workers(sel)), "--dist", "loadscope"]
    one = check.select(["tests/unit/test_text.py"])
    assert check.workers(one) == 1 and "-n" not in check.command(one) and "--nbval" not in check.command(one)


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_what_changed_since_the_merge_base_and_in_the_working_tree(tmp_path, monkeypatch):
    for k, v in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                 "GIT_COMMITTER_EMAIL": "t@x", "GIT_CONFIG_GLOBAL": os.devnull}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("BASE", raising=False)
    _git(tmp_path, "init", "-q", "-b", "main")
    for name in ("a.py", "b.py", "old.py"):
        (tmp_path / name).write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "one")
    base, how = check.find_base(tmp_path)                  # on main, no remote: HEAD
    assert how.startswith("HEAD") and check.changed_files(base, tmp_path) == []
    _git(tmp_path, "checkout", "-q", "-b", "topic")
    (tmp_path / "a.py").write_text("x = 2\n")
    _git(tmp_path, "commit", "-q", "-am", "two")           # committed on the branch
    (tmp_path / "b.py").write_text("x = 3\n")              # edited, not committed
    (tmp_path / "old.py").unlink()                         # deleted
    (tmp_path / "new.py").write_text("x = 4\n")            # untracked
    base, how = check.find_base(tmp_path)
    assert how == "merge-base of HEAD and main"
    assert check.changed_files(base, tmp_path) == ["a.py", "b.py", "new.py", "old.py"]
    monkeypatch.setenv("BASE", "HEAD")                      # BASE=<rev>: only the working tree
    base, how = check.find_base(tmp_path)
    assert how == "BASE=HEAD" and check.changed_files(base, tmp_path) == ["b.py", "new.py", "old.py"]
    monkeypatch.setenv("BASE", "no-such-rev")
    with pytest.raises(SystemExit, match="not a revision"):
        check.find_base(tmp_path)
