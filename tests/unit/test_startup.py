"""What every Python process of `make test` pays before it does anything (CONTRIBUTING, "While you work").

`make test` starts about a hundred Python processes (113 in one warm run, counted by process
accounting): pytest workers, notebook kernels, the stand-in pytest runs of the test tools, the
grader's children, the book build. Two costs were paid again in
each of them:

- the bytecode cache: a machine that sets ``PYTHONDONTWRITEBYTECODE`` makes every process compile
  the course's modules again, and every pytest process rewrite the asserts of every test module and
  plugin again (pytest keeps them in ``__pycache__`` too). The Makefile unexports it.
- jsonschema 4.25 and later import rfc3987-syntax, which builds an Earley parser of RFC 3987 at
  import: 1.2 s in every process that imports nbformat (nbval's plugin does, in every pytest
  process). requirements.txt pins jsonschema below it.

How long the start-up takes is not checked (a timed test on a shared machine is noise; the commit
that added these tests gives the times measured); these tests check the two causes.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_keeps_the_bytecode_cache_where_the_machine_turns_it_off():
    probe = 'probe: ; @echo "[$$PYTHONDONTWRITEBYTECODE] [$$PYTHONHASHSEED]"'
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(["make", "-s", "--no-print-directory", "--eval", probe, "probe"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # the probe sees the Makefile's environment: its own exports (the hash seed), and not the machine's switch
    assert out.stdout.strip() == "[] [0]"


def test_a_recipe_writes_the_bytecode_of_what_it_imports(tmp_path):
    (tmp_path / "fresh_module.py").write_text("VALUE = 1\n")
    probe = f'probe: ; @cd {tmp_path} && {sys.executable} -c "import fresh_module"'
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run(["make", "-s", "--no-print-directory", "--eval", probe, "probe"], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=60)
    assert [p.name for p in (tmp_path / "__pycache__").iterdir()] == [
        f"fresh_module.{sys.implementation.cache_tag}.pyc"]


def test_importing_nbformat_builds_no_iri_parser():
    code = ("import sys, nbformat\n"
            "nbformat.validate(nbformat.v4.new_notebook())\n"
            "print('rfc3987_syntax' in sys.modules, 'lark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
