"""Mutation testing of the core the book's numbers rest on: ``make mutate`` (not in ``make test``, not in CI).

mutmut 3 (pinned in requirements.txt; configured in pyproject.toml, ``[tool.mutmut]``)
copies ``course_lib`` into ``mutants/``, plants one small change at a time in the
functions of the core (an operator, a constant, a comparison, an argument) and runs
the unit tests that cover the changed function (it maps tests to functions by
tracing them once). A mutant is *killed* when a test fails, *times out* when its
tests pass mutmut's CPU limit (a change that makes the code loop, but also a
worker that was slow: reported apart, not in the killed share), *survives* when
every test passes. With the fork server, an *error* (mutmut's exit 255, which it counts as
a timeout) is a worker whose pytest exited 4 before any test ran: a test module that calls
the mutated function at import (``tests/unit/test_scratch_layers.py`` builds its masks so)
cannot be imported with the mutant. mutmut keeps no output, so this script runs the tests of each
error once more under its mutant (:func:`verify_errors`): when pytest reports a test module it could
not import (``ERROR collecting``), the mutant broke that import and counts as *killed at import*
(the same tests passed without mutants in mutmut's clean run); the other errors are reported apart.
A survivor is either a missing test or a change that cannot alter any result (an
*equivalent* mutant, e.g. a buffer one row larger than it needs): those are listed,
one per line with the reason, in ``tools/mutation_equivalent.txt``, which this script reads.

The score is the share of non-equivalent mutants that are killed; the goal is
90 %. mutmut keeps each mutant's result in ``mutants/`` and tests again only the functions whose code changed, so a run can be split
module by module and the report combines them::

    python tools/mutate.py                          # every mutant of the core without a result, the report
    python tools/mutate.py 'course_lib.scratch.*'   # (again) the mutants of one area (mutmut's names, fnmatch)
    python tools/mutate.py --survivors              # again the survivors not listed as equivalent
    python tools/mutate.py --report                 # the report of what mutants/ holds, no run
                                                    # (errors verified by an earlier run count as kills)
    python tools/mutate.py --max-children 2         # mutmut's workers (default 1: a shared CPU)

Each worker runs with ``OMP_NUM_THREADS=1`` and ``MKL_NUM_THREADS=1`` (set here, in the
environment of ``mutmut run``; its fork server and every worker forked from it inherit it):
mutmut's limit is CPU time, ``ceil((estimated test time + 1) * 15 * 2)`` seconds (and half of
it in wall time), and PyTorch's threads spinning on a shared 2-core machine burn CPU time
that a single thread does not. The fork server imports the modules of
``tools/mutmut_preload.txt`` (torch, numpy, hypothesis, pytest's plugins) instead of collecting
the tests (``forkserver_warmup`` in pyproject.toml): a second collection of the tests in one
process escapes the backslashes of parametrized ids again, so every worker of a function
covered by such a test (``test_bad_input_is_named[axis must be in \\[-1, 0\\]]``) found no such
test, pytest exited 4 and mutmut counted the mutant a timeout (exit 255) within a second.

The mutated core (``only_mutate`` in pyproject.toml): ``course_lib/scratch/``,
``models/{attention,layers,decoding,gpt}.py``, ``analysis/{edit,maxmatch}.py``,
``training/{muon,averaging}.py``, ``repro.py``, and of ``course_lib/display`` only
``check`` and ``check_close`` (:data:`CORE` names them).
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = ROOT / "tools" / "mutation_equivalent.txt"
GOAL = 0.90

CORE = (
    "course_lib.scratch.*",
    "course_lib.models.attention.*",
    "course_lib.models.layers.*",
    "course_lib.models.decoding.*",
    "course_lib.models.gpt.*",
    "course_lib.analysis.edit.*",
    "course_lib.analysis.maxmatch.*",
    "course_lib.training.muon.*",
    "course_lib.training.averaging.*",
    "course_lib.repro.*",
    "course_lib.display.x_check__mutmut_*",
    "course_lib.display.x_check_close__mutmut_*",
    "course_lib.display.x__truth__mutmut_*",
)
"""mutmut's names of the mutants that count: module, then ``x_<function>`` or ``xǁ<Class>ǁ<method>``."""

# mutmut's exit codes (mutmut/stats.py) grouped as the report counts them
KILLED, TIMEOUT, SURVIVED, NO_TESTS, NOT_RUN = "killed", "timeout", "survived", "no tests", "not run"
ERROR = "error"
KILLED_AT_IMPORT = "killed at import"
IMPORT_KILLS = ROOT / "mutants" / "import_kills.json"
"""The errors verified as a test module failing to import under the mutant (:func:`verify_errors`), cached."""
# 255 is no timeout with the fork server (mutmut counts it one): the worker's run_tests raised,
# which is pytest exiting 4, usually because a test module cannot be imported with the mutant
# (a module-level call of the mutated function, e.g. tests/unit/test_scratch_layers.py's masks)
STATUS = {1: KILLED, 3: KILLED, 0: SURVIVED, 5: NO_TESTS, 33: NO_TESTS, 36: TIMEOUT, -24: TIMEOUT, 24: TIMEOUT,
          152: TIMEOUT, 255: ERROR, None: NOT_RUN}


def check_layout() -> list[str]:
    """The ``only_mutate`` paths of pyproject.toml; each must name at least one file (Muon moved, say)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    missing = [p for p in config["only_mutate"] if not list(ROOT.glob(p))]
    if missing:
        raise SystemExit(f"pyproject.toml [tool.mutmut] only_mutate names files that do not exist: {missing}; "
                         f"point it at where the modules live now")
    tests = [a for a in config["pytest_add_cli_args_test_selection"] if a.endswith(".py")]
    missing = [t for t in tests if not (ROOT / t).is_file()]
    if missing:
        raise SystemExit(f"pyproject.toml [tool.mutmut] pytest_add_cli_args_test_selection: no such file {missing}")
    return config["only_mutate"]


def read_equivalent(path: Path = EQUIVALENT) -> dict[str, str]:
    """``{mutant id: reason}`` from ``path``: one ``<id> <reason>`` a line; ``#`` starts a comment."""
    equivalent = {}
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path.name}:{n}: {name} has no reason; write why the mutant cannot change a result")
        if name in equivalent:
            raise SystemExit(f"{path.name}:{n}: {name} is listed twice")
        equivalent[name] = reason.strip()
    return equivalent


def read_results(patterns) -> dict[str, tuple[str, str]]:
    """``{mutant id: (status, source file)}`` of every mutant in ``mutants/`` matching one of ``patterns``."""
    results = {}
    for meta in sorted((ROOT / "mutants").glob("course_lib/**/*.py.meta")):
        source = str(meta.relative_to(ROOT / "mutants")).removesuffix(".meta")
        for name, code in json.loads(meta.read_text("utf-8"))["exit_code_by_key"].items():
            if any(fnmatch.fnmatchcase(name, p) for p in patterns):
                results[name] = (STATUS.get(code, f"suspicious (exit {code})"), source)
    return results


def worker_env() -> dict:
    """The environment of every test run under a mutant: the real data, one thread, fixed hashes."""
    return {**os.environ, "COURSE_DATA": str(ROOT / "data"), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0"}


def data_files(root: Path | None = None) -> set[Path]:
    """Every file under ``data/checkpoints`` (of the ``COURSE_DATA`` the mutants' tests read)."""
    folder = (ROOT / "data" if root is None else root) / "checkpoints"
    return {p for p in folder.rglob("*") if p.is_file()}


def recipe_names() -> set[str]:
    """The checkpoint names the labs register (``tools/train.py``'s :func:`discover`)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tools")]
    from train import discover

    return set(discover())


def remove_strays(before: set[Path], root: Path | None = None, keep: set[str] | None = None) -> list[Path]:
    """Remove and name the files that appeared under ``data/checkpoints`` since ``before`` and are no
    registered recipe's checkpoint (``keep``: those names; default :func:`recipe_names`, so a
    ``make train`` beside the run keeps its output). A mutant of ``save_checkpoint`` that drops its
    ``directory`` writes a test's checkpoint (``toy.json``) into the real folder, where the checks of
    every stored checkpoint would find it."""
    new = sorted(data_files(root) - before)
    if not new:
        return []
    keep = recipe_names() if keep is None else keep
    strays = [p for p in new if p.name.split(".")[0] not in keep]
    for p in strays:
        p.unlink()
        print(f"removed {p}: written by a mutant outside its test's temporary folder", file=sys.stderr)
    return strays


def function_of(name: str) -> str:
    """The mangled function of a mutant: ``course_lib.repro.x_recipe__mutmut_2`` -> ``course_lib.repro.x_recipe``."""
    head, sep, number = name.rpartition("__mutmut_")
    if not sep or not head or not number.isdigit():
        raise ValueError(f"name must be a mutmut mutant name '<function>__mutmut_<n>', got {name!r}")
    return head


def import_failure(output: str) -> str | None:
    """The first test module that pytest could not import, read from its output (``ERROR collecting
    <module>``), or None.

    Under a mutant this is a kill: mutmut runs the mutants only after the same tests passed without
    any (its clean run), so the module's import fails because of the changed code, and the test
    suite with it.
    """
    for block in output.split("ERROR collecting ")[1:]:
        words = block.split()
        if words and words[0].endswith(".py"):
            return words[0]
    return None


def verify_errors(names, cache_path: Path | None = None, run=subprocess.run, cached_only: bool = False,
                  stats_path: Path | None = None) -> dict[str, str | None]:
    """For each error (exit 255) of ``names``: run its tests under the mutant, in ``mutants/``, and return
    ``{name: the test module that failed to import with it, or None}`` (with ``cached_only``, None for a
    mutant not yet verified, and nothing runs).

    mutmut records no output, and an exit 4 of pytest (no test ran) also follows a test id that is
    not found. A result is cached in :data:`IMPORT_KILLS` under the function's hash, so a mutant whose
    function changed is verified again.
    """
    cache_path = IMPORT_KILLS if cache_path is None else cache_path
    stats_path = ROOT / "mutants" / "mutmut-stats.json" if stats_path is None else stats_path
    stats = json.loads(stats_path.read_text("utf-8"))
    cache = json.loads(cache_path.read_text("utf-8")) if cache_path.is_file() else {}
    out = {}
    for name in names:
        function = function_of(name)
        key = f"{name} {stats['function_hashes'].get(function, '')}"
        if key not in cache and cached_only:
            out[name] = None
            continue
        if key not in cache:
            before = data_files()
            tests = sorted(stats["tests_by_mangled_function_name"].get(function, ()))
            env = {**worker_env(), "MUTANT_UNDER_TEST": name}
            done = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", *tests],
                       cwd=ROOT / "mutants", env=env, capture_output=True, text=True)
            remove_strays(before)
            cache[key] = import_failure(done.stdout + done.stderr) if tests else None
            cache_path.write_text(json.dumps(cache, indent=1, ensure_ascii=False), "utf-8")
        out[name] = cache[key]
    return out


def report(results: dict, equivalent: dict, seconds: float | None, whole: bool = True) -> float | None:
    """Print the figures; return the killed share of the non-equivalent mutants that ran.

    ``whole``: ``results`` hold every mutant of the core (not one area), so a listed equivalent
    missing from them is stale."""
    wrongly = sorted(n for n in equivalent if n in results and results[n][0] in (KILLED, KILLED_AT_IMPORT, TIMEOUT, ERROR))
    counts = collections.Counter(status for status, _ in results.values())
    eq = sorted(n for n in equivalent if n in results and results[n][0] not in (KILLED, KILLED_AT_IMPORT, TIMEOUT, ERROR, NOT_RUN))
    ran = len(results) - counts[NOT_RUN]
    killed = counts[KILLED] + counts[KILLED_AT_IMPORT]
    detected = killed + counts[TIMEOUT] + counts[ERROR]
    judged = ran - len(eq)
    score = detected / judged if judged else None
    print(f"mutants in all:  {len(results)}")
    print(f"  not run:       {counts[NOT_RUN]}")
    print(f"  killed:        {killed}   ({counts[KILLED_AT_IMPORT]} of them at import: a test module failed to import "
          f"under the mutant, seen in its tests' output)")
    print(f"  timeouts:      {counts[TIMEOUT]}   (mutmut's CPU limit: a loop, or a slow worker; not in the killed share)")
    print(f"  errors:        {counts[ERROR]}   (exit 255, pytest ran no test, and no test module was seen failing to "
          f"import under the mutant (--report only reads verdicts already cached); not in the killed share)")
    print(f"  survived:      {counts[SURVIVED] + counts[NO_TESTS]}   ({counts[NO_TESTS]} of them covered by no test)")
    print(f"  equivalent:    {len(eq)}   (of the survivors, listed in {EQUIVALENT.relative_to(ROOT)})")
    others = {s: n for s, n in counts.items()
              if s not in (KILLED, KILLED_AT_IMPORT, TIMEOUT, ERROR, SURVIVED, NO_TESTS, NOT_RUN)}
    if others:
        print(f"  other:         {others}")
    if score is not None:
        share = killed / judged
        print(f"killed share of non-equivalent mutants: {killed}/{judged} = {100 * share:.1f} % "
              f"(goal {100 * GOAL:.0f} %: {'met' if share >= GOAL else 'not met'}); "
              f"killed, timed out or error: {detected}/{judged} = {100 * score:.1f} %")
    print(f"time: {seconds / 60:.1f} min" if seconds is not None else "time: not measured (--report)")
    by_file = collections.defaultdict(collections.Counter)
    for name, (status, source) in results.items():
        by_file[source]["equivalent" if name in eq else KILLED if status == KILLED_AT_IMPORT else status] += 1
    print("\nby module (killed / timeout / error / survived / equivalent / not run):")
    for source, c in sorted(by_file.items()):
        print(f"  {source:40} {c[KILLED]:5} {c[TIMEOUT]:4} {c[ERROR]:4} {c[SURVIVED] + c[NO_TESTS]:4} "
              f"{c['equivalent']:4} {c[NOT_RUN]:5}")
    if eq:
        print(f"\n{len(eq)} equivalent mutants (their change cannot alter a result; {EQUIVALENT.relative_to(ROOT)}):")
        for name in eq:
            print(f"  {name}: {equivalent[name]}")
    survivors = sorted(n for n, (s, _) in results.items() if s in (SURVIVED, NO_TESTS) and n not in equivalent)
    if survivors:
        print(f"\n{len(survivors)} survivors: add a test that kills each, or list it as equivalent "
              f"(python -m mutmut show <id> shows the change):")
        for name in survivors:
            print(f"  {name}")
    if wrongly:
        print(f"\nlisted as equivalent but killed (remove from the list): {', '.join(wrongly)}")
    stale = sorted(set(equivalent) - set(results))
    if whole and stale and not any(results[n][0] == NOT_RUN for n in results):
        print(f"\nlisted as equivalent but no such mutant (the code changed; remove them): {', '.join(stale)}")
    return killed / judged if judged else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", help="mutmut mutant names (fnmatch) to run; default: the core")
    parser.add_argument("--max-children", type=int, default=1, help="mutmut's workers (default 1)")
    parser.add_argument("--report", action="store_true", help="only report what mutants/ holds")
    parser.add_argument("--survivors", action="store_true",
                        help="run again the survivors not listed as equivalent (after adding tests)")
    parser.add_argument("--fail-under", type=float, default=None, help="exit 1 below this percentage")
    args = parser.parse_args(argv)
    if args.max_children < 1:
        parser.error(f"--max-children must be a positive integer, got {args.max_children}")
    os.chdir(ROOT)
    check_layout()
    equivalent = read_equivalent()
    patterns = args.patterns or list(CORE)
    # mutmut runs again every mutant it is given by name (with no name it would run all of
    # course_lib/display): by default, the core's mutants that have no result yet
    names = list(args.patterns)
    if not names:
        known = read_results(patterns)                # empty before the first run: then every core mutant
        names = sorted(n for n, (s, _) in known.items() if s == NOT_RUN) if known else list(CORE)
    if args.survivors:
        names = sorted(n for n, (s, _) in read_results(patterns).items()
                       if s in (SURVIVED, NO_TESTS) and n not in equivalent)
    if not names and not args.report:
        print("nothing to run: every mutant of the core has a result (--survivors runs the survivors again)")
    seconds = None
    if not args.report and names:
        env = worker_env()
        start = time.perf_counter()
        before = data_files()
        done = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children),
                               *names], env=env)
        seconds = time.perf_counter() - start
        remove_strays(before)
        if done.returncode != 0:
            print(f"mutmut run exited with {done.returncode}", file=sys.stderr)
            return done.returncode
    print()
    results = read_results(patterns)
    errors = sorted(n for n, (status, _) in results.items() if status == ERROR)
    if errors:
        if not args.report:
            print(f"verifying {len(errors)} errors: their tests run under each mutant (cached in "
                  f"{IMPORT_KILLS.relative_to(ROOT)}) ...", flush=True)
        for name, module in verify_errors(errors, cached_only=args.report).items():
            if module is not None:
                results[name] = (KILLED_AT_IMPORT, results[name][1])
    score = report(results, equivalent, seconds, whole=not args.patterns)
    if args.fail_under is not None and (score is None or 100 * score < args.fail_under):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
