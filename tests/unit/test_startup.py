"""What every Python process of `make test` pays again and again (CONTRIBUTING, "While you work").

`make test` starts about a hundred Python processes (113 in one warm run, counted by process
accounting): pytest workers, notebook kernels, the stand-in pytest runs of the test tools, the
grader's children, the book build. Three costs were paid again in
each of them:

- the bytecode cache: a machine that sets ``PYTHONDONTWRITEBYTECODE`` makes every process compile
  the course's modules again, and every pytest process rewrite the asserts of every test module and
  plugin again (pytest keeps them in ``__pycache__`` too). The Makefile unexports it.
- jsonschema 4.25 and later import rfc3987-syntax, which builds an Earley parser of RFC 3987 at
  import: 1.2 s in every process that imports nbformat (nbval's plugin does, in every pytest
  process). requirements.txt pins jsonschema below it.
- freed memory: glibc's malloc gives each large block (torch's tensors) pages of its own and hands
  them back on free, so the kernel faults in and zeroes the pages of every new tensor again. The
  test targets of the Makefile (and ``make train``) set ``MALLOC_MMAP_THRESHOLD_`` and
  ``MALLOC_TRIM_THRESHOLD_``; everything else runs as a learner's machine would.

How long these take is not checked (a timed test on a shared machine is noise; the commits that
added these tests give the times measured); these tests check the three causes.
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


def _recipe_environment(target: str) -> str:
    """The malloc settings that a recipe of ``make target`` sees: a probe made a prerequisite of the
    target runs under ``-n`` (its ``+`` runs it anyway; the target's own recipes are only printed) and
    inherits the target's variables, as make's prerequisites do."""
    probe = 'course-probe: ; +@echo "probe [$$MALLOC_MMAP_THRESHOLD_] [$$MALLOC_TRIM_THRESHOLD_]"'
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}   # as a shell starts make
    out = subprocess.run(["make", "-n", "--no-print-directory", "--eval", probe, "--eval", f"{target}: course-probe",
                          target], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return next(line for line in out.stdout.splitlines() if line.startswith("probe "))


def test_the_test_and_train_targets_keep_freed_memory_and_the_rest_run_as_a_learner_s():
    """glibc's malloc gives large blocks (torch's tensors) pages of their own and hands them back on
    free; the kernel then faults in and zeroes every new tensor's pages again. The test targets
    raise both thresholds (chapter 10's notebook under nbval: 10 s of system time -> 3 s), and so does
    ``make train`` (a step of the long People's Daily GPT: 0.28 s -> 0.23 s); the notebooks a learner
    runs and ``make bench`` keep glibc's defaults."""
    for target in ("test", "check", "portable-plain", "portable-avx2", "train-check", "train"):
        assert _recipe_environment(target) == "probe [1073741824] [4294967296]", target
    for target in ("bench", "sync", "book"):
        assert _recipe_environment(target) == "probe [] []", target
