"""tools/mutate.py: the mutation score's arithmetic, and how an error is verified as a kill at import."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import mutate  # noqa: E402

# pytest's own output (-q) when a test module cannot be imported under a mutant of repro.recipe
COLLECTION_ERROR = """
==================================== ERRORS ====================================
________________ ERROR collecting tests/unit/test_segmenter.py _________________
tests/unit/test_segmenter.py:16: in <module>
    from course_lib.labs.segmenter import Segmenter
course_lib/repro.py:6287: in x_recipe__mutmut_2
    _check_name(None)
E   ValueError: name must be a non-empty string of letters, digits, '-' and '_', got None
1 error in 4.66s
ERROR: found no collectors for /work/main/mutants/tests/unit/test_segmenter.py::test_stored_metrics
"""
# a test id that does not exist: pytest exits 4 too, with no collection error
NOT_FOUND = """
no tests ran in 0.01s
ERROR: not found: /work/main/mutants/tests/unit/test_x.py::test_bad_input_is_named[axis]
(no match in any of [<Module test_x.py>])
"""
FAILED = """
F
FAILED tests/unit/test_repro.py::test_band_bad_input[args0] - AssertionError: ERROR collecting is no header here
1 failed in 2.01s
"""


def test_function_of_a_mutant():
    assert mutate.function_of("course_lib.repro.x_recipe__mutmut_2") == "course_lib.repro.x_recipe"
    assert mutate.function_of("course_lib.models.attention.xǁKVCacheǁupdate__mutmut_13") == \
        "course_lib.models.attention.xǁKVCacheǁupdate"
    for bad in ("course_lib.repro.x_recipe", "course_lib.repro.x_recipe__mutmut_", "__mutmut_3"):
        with pytest.raises(ValueError) as err:
            mutate.function_of(bad)
        assert str(err.value) == f"name must be a mutmut mutant name '<function>__mutmut_<n>', got {bad!r}"


@pytest.mark.parametrize("output, module", [(COLLECTION_ERROR, "tests/unit/test_segmenter.py"), (NOT_FOUND, None),
                                            (FAILED, None), ("", None)])
def test_import_failure_is_read_from_the_collection_error_only(output, module):
    assert mutate.import_failure(output) == module


@pytest.fixture
def stats(tmp_path):
    path = tmp_path / "mutmut-stats.json"
    path.write_text(json.dumps({
        "function_hashes": {"course_lib.repro.x_recipe": "aaa", "course_lib.repro.x_band": "bbb"},
        "tests_by_mangled_function_name": {"course_lib.repro.x_recipe": ["tests/unit/b.py::t2", "tests/unit/a.py::t1"],
                                           "course_lib.repro.x_band": ["tests/unit/c.py::t3"]}}), "utf-8")
    return path


def test_verify_errors_runs_each_mutants_tests_under_it_once(tmp_path, stats):
    calls = []

    def run(cmd, cwd, env, capture_output, text):
        calls.append((env["MUTANT_UNDER_TEST"], cmd[cmd.index("-x") + 1:], Path(cwd).name))
        output = COLLECTION_ERROR if env["MUTANT_UNDER_TEST"].endswith("x_recipe__mutmut_2") else NOT_FOUND
        return subprocess.CompletedProcess(cmd, 4, stdout=output, stderr="")

    cache = tmp_path / "kills.json"
    names = ["course_lib.repro.x_recipe__mutmut_2", "course_lib.repro.x_band__mutmut_7"]
    got = mutate.verify_errors(names, cache_path=cache, run=run, stats_path=stats)
    assert got == {names[0]: "tests/unit/test_segmenter.py", names[1]: None}
    assert calls == [(names[0], ["tests/unit/a.py::t1", "tests/unit/b.py::t2"], "mutants"),
                     (names[1], ["tests/unit/c.py::t3"], "mutants")]
    assert mutate.verify_errors(names, cache_path=cache, run=run, stats_path=stats) == got
    assert len(calls) == 2                                               # cached: nothing runs again
    # the function changed: its mutants are verified again
    data = json.loads(stats.read_text("utf-8"))
    data["function_hashes"]["course_lib.repro.x_band"] = "ccc"
    stats.write_text(json.dumps(data), "utf-8")
    assert mutate.verify_errors(names, cache_path=cache, run=run, stats_path=stats, cached_only=True) == \
        {names[0]: "tests/unit/test_segmenter.py", names[1]: None}
    assert len(calls) == 2                                               # cached_only runs nothing
    mutate.verify_errors(names, cache_path=cache, run=run, stats_path=stats)
    assert [c[0] for c in calls[2:]] == [names[1]]


def test_report_counts_kills_at_import_as_kills(capsys):
    results = {f"m.x_f__mutmut_{i}": (status, "course_lib/m.py") for i, status in enumerate(
        [mutate.KILLED] * 6 + [mutate.KILLED_AT_IMPORT] * 2 + [mutate.SURVIVED] * 2 + [mutate.ERROR]
        + [mutate.TIMEOUT] + [mutate.NOT_RUN])}
    equivalent = {"m.x_f__mutmut_9": "a reason"}                         # one of the two survivors
    share = mutate.report(results, equivalent, None)
    out = capsys.readouterr().out
    # 12 ran, 1 equivalent: 11 judged; 6 + 2 killed; 8 + 1 timeout + 1 error detected
    assert share == 8 / 11
    assert "killed:        8   (2 of them at import" in out
    assert "killed share of non-equivalent mutants: 8/11 = 72.7 % (goal 90 %: not met); " \
           "killed, timed out or error: 10/11 = 90.9 %" in out
    assert "\n  course_lib/m.py                              8    1    1    1    1     1\n" in out
    assert "1 survivors" in out and "m.x_f__mutmut_8" in out
    assert "\n1 equivalent mutants (their change cannot alter a result; tools/mutation_equivalent.txt):\n" \
           "  m.x_f__mutmut_9: a reason\n" in out


def test_files_a_mutant_writes_into_data_are_removed_and_named(tmp_path, capsys):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    old = folder / "ch01-translator.json"
    old.write_text("{}", "utf-8")
    (tmp_path / "notes.txt").write_text("outside checkpoints/", "utf-8")
    before = mutate.data_files(tmp_path)
    assert before == {old}
    stray, stray_weights = folder / "toy.json", folder / "toy.safetensors"
    retrained = folder / "ch07-finetune-pretrained-100.json"                # a make train beside the run
    for p in (stray, stray_weights, retrained, tmp_path / "later.txt"):
        p.write_text("{}", "utf-8")
    keep = {"ch01-translator", "ch07-finetune-pretrained-100"}
    assert mutate.remove_strays(before, tmp_path, keep) == [stray, stray_weights]
    assert not stray.exists() and not stray_weights.exists()
    assert old.exists() and retrained.exists() and (tmp_path / "later.txt").exists()
    assert f"removed {stray}: written by a mutant" in capsys.readouterr().err
    assert mutate.remove_strays(before | {retrained}, tmp_path, keep) == []


def test_the_recipe_names_are_the_labs_checkpoints():
    names = mutate.recipe_names()
    assert {"ch07-bert-mlm-reviews", "ch07-finetune-pretrained-100", "ch01-translator"} <= names
    assert "toy" not in names
