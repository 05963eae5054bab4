"""`make assignments` and `make grade`, end to end on chapter 2 (tools/assignments.py, tools/grade.py).

The student notebook keeps the chapter and its checkers, loses the solutions
and never holds a hidden case. Otter-Grader then grades real notebooks and the
CSV must give exact scores per exercise: the reference solutions get full
marks, the untouched stubs zero, two planted slips lose exactly their two
exercises, and an answer tailored to the visible checker loses the hidden
point only. Bad notebooks (not JSON, not a notebook, a wrong kernel, a cell
that raises, an endless loop in a cell, a loop that swallows the interrupt,
a file outside a student's folder) each get a clear row, and the run goes on.

Chapter 2 is cheap: its whole notebook runs in seconds. The bad notebooks keep
only the exercise section (the grader's handling, not the chapter, is tested).
Grading runs in three calls, two notebooks at a time (~1.5 min on 2 idle cores).
"""

import csv
import json
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import assignments  # noqa: E402
import grade  # noqa: E402

BOOK = ROOT / "book" / "ch02_worked_qkv.ipynb"
PAGE = BOOK.name
LABELS = ["ch02-ex-hand", "ch02-ex-softmax", "ch02-ex-masked", "ch02-ex-attention"]
FULL = {"ch02-ex-hand": 1, "ch02-ex-softmax": 2, "ch02-ex-masked": 2, "ch02-ex-attention": 2}
ZERO = dict.fromkeys(LABELS, 0)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    manifests = assignments.build(["ch02"], out)
    student = nbformat.read(out / "student" / PAGE, as_version=4)
    return out, manifests[0], student, assignments.solutions(BOOK)


# --- the student notebook and the autograder (no execution) -----------------------------------

def test_student_notebook_keeps_the_chapter_and_checkers_and_drops_the_solutions(built):
    out, manifest, student, solutions = built
    book = nbformat.read(BOOK, as_version=4)
    text = "\n".join(c.source for c in student.cells)
    assert [e["label"] for e in manifest["exercises"]] == LABELS
    assert manifest["max_score"] == sum(FULL.values())
    # the chapter is all there: every cell outside the solutions, in order, with its outputs
    assert "## Two heads · 两个头" in text and "## Summary · 小结" in text
    kept = [c.source for c in student.cells if c.cell_type == "code"]
    assert kept[0] == next(c.source for c in book.cells if c.cell_type == "code")
    # no solution: neither its code nor its prose, nor the gates
    for code in solutions.values():
        assert code.split("\n")[1] not in text
    assert "The dot products are $1, 1, 2$" not in text          # the hand exercise's solution prose
    assert "{solution-start}" not in text and "{exercise-start}" not in text
    # every exercise cell still holds its stub and ends with its checker
    cells = {c.metadata["course_exercise"]: c.source for c in student.cells
             if "course_exercise" in c.metadata}
    assert list(cells) == LABELS
    assert cells["ch02-ex-hand"].startswith("my_weights = ...")
    assert "raise NotImplementedError" in cells["ch02-ex-softmax"]
    assert cells["ch02-ex-softmax"].rstrip().endswith("ex.check_softmax(my_softmax)")
    # the exercise text stays, with a heading a student can find
    assert "### ✎ Exercise · 练习: A stable softmax · 稳定的 softmax" in text
    assert "It must survive logits like 1000." in text
    assert student.metadata["course_assignment"]["exercises"] == LABELS
    assert [c.metadata.get("tags") for c in student.cells[:2]] == [["en"], ["zh"]]


def test_hidden_cases_travel_with_the_autograder_only(built):
    out, manifest, student, _ = built
    import zipfile
    zf = zipfile.ZipFile(out / "autograder" / "ch02" / "autograder.zip")
    names = zf.namelist()
    softmax_test = zf.read("tests/ch02-ex-softmax.py").decode()
    assert "hidden=True" in softmax_test and "HIDDEN['ch02-ex-softmax'](_answer(env))" in softmax_test
    assert "exercises.check_softmax(_answer(env))" in softmax_test
    assert "hidden=True" not in zf.read("tests/ch02-ex-hand.py").decode()   # a number: nothing to hide
    assert sorted(names) == sorted(["otter_config.json", "files/course_hidden_ch02.py",
                                    *(f"tests/{label}.py" for label in LABELS)])
    student_text = (out / "student" / PAGE).read_text(encoding="utf-8")
    hidden_source = (ROOT / "tools" / "hidden" / "ch02.py").read_text(encoding="utf-8")
    assert "rows far apart" in hidden_source and "rows far apart" not in student_text
    assert "course_hidden" not in student_text and "otter" not in student_text
    assert [e["points"] for e in manifest["exercises"]] == [
        {"checker": 1}, {"checker": 1, "hidden": 1}, {"checker": 1, "hidden": 1}, {"checker": 1, "hidden": 1}]


def test_the_build_is_reproducible_and_covers_every_chapter(built, tmp_path):
    out, *_ = built
    again = assignments.build(["ch02"], tmp_path)
    assert (tmp_path / "autograder/ch02/autograder.zip").read_bytes() == \
        (out / "autograder/ch02/autograder.zip").read_bytes()
    assert (tmp_path / "student" / PAGE).read_bytes() == (out / "student" / PAGE).read_bytes()
    assert again[0]["max_score"] == 7
    every = assignments.build(None, tmp_path / "all")       # fails on a name only a solution defines
    assert [m["chapter"] for m in every] == [f"ch{n:02d}" for n in range(1, 13)]
    assert all(m["exercises"] for m in every)


def test_a_kept_cell_that_needs_a_solution_fails_the_build(tmp_path):
    book = nbformat.read(BOOK, as_version=4)
    i = max(i for i, c in enumerate(book.cells) if "{solution-end}" in c.source)
    book.cells.insert(i + 1, nbformat.v4.new_code_cell("print(my_softmax, scores)"))
    bad = tmp_path / PAGE
    nbformat.write(book, bad)
    problems = assignments.student_notebook(bad).problems
    assert problems and "scores" in problems[0] and "ch02-ex-hand" in problems[0]


HIDDEN = sorted((ROOT / "tools" / "hidden").glob("ch*.py"))


@pytest.mark.parametrize("path", HIDDEN, ids=[p.stem for p in HIDDEN])
def test_reference_solutions_pass_every_hidden_case(path):
    """Each chapter's solutions, run in order in one namespace, pass its hidden cases (no kernel)."""
    import contextlib
    import importlib.util
    import io

    chapter = path.stem
    book = next(p for p in assignments.notebooks() if assignments.chapter_of(p.stem) == chapter)
    spec = importlib.util.spec_from_file_location(f"course_hidden_{chapter}", path)
    hidden = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hidden)
    answers = {e.label: e.answer for e in assignments.student_notebook(book).exercises}
    assert set(hidden.HIDDEN) <= set(answers)
    namespace = {}
    exec(f"import numpy as np\nfrom course_lib.chapters.{chapter} import exercises as ex", namespace)
    for label, code in assignments.solutions(book).items():
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)
        if label in hidden.HIDDEN:
            verdict = hidden.HIDDEN[label](eval(answers[label], namespace))
            assert verdict.ok, f"{label}: {verdict!r}"
            assert not hidden.HIDDEN[label](None).ok


# --- grading, end to end ---------------------------------------------------------------------

def _submit(root: Path, student: str, nb) -> None:
    (root / student).mkdir(parents=True, exist_ok=True)
    if isinstance(nb, str):
        (root / student / PAGE).write_text(nb, encoding="utf-8")
    else:
        nbformat.write(nb, root / student / PAGE)


def _rows(csv_path: Path) -> dict:
    with open(csv_path, encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def _scores(row) -> dict:
    return {label: float(row[label]) for label in LABELS}


def _exercise_section(student):
    """The header and the exercise section only: the bad notebooks need nothing else."""
    nb = nbformat.reads(nbformat.writes(student), as_version=4)
    start = next(i for i, c in enumerate(nb.cells) if "(ch02-exercises)=" in c.source)
    nb.cells = nb.cells[:2] + [nbformat.v4.new_code_cell("import numpy as np")] + nb.cells[start:]
    return nb


SLIPS = {
    # the weights without dividing by √d_k
    "ch02-ex-hand": "my_weights = [0.21, 0.21, 0.58]\nex.check_hand_weights(my_weights)",
}


SLIPPED_MASKED = """\
def my_masked_softmax(x, mask):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.where(mask, e / e.sum(axis=-1, keepdims=True), 0.0)   # masks after normalising


ex.check_masked_softmax(my_masked_softmax)"""


def test_three_submissions_get_their_exact_scores(built, tmp_path):
    out, manifest, student, solutions = built
    subs = tmp_path / "submissions"
    _submit(subs, "reference", assignments.fill(student, solutions))
    _submit(subs, "stubs", student)
    slips = {**solutions, **SLIPS, "ch02-ex-masked": SLIPPED_MASKED}
    _submit(subs, "slips", assignments.fill(student, slips))
    rows = _rows_after(subs, out, tmp_path / "grades.csv", cell_timeout=120, notebook_timeout=600)

    assert set(rows) == {"reference", "stubs", "slips"}
    assert all(r["status"] == "graded" and r["note"] == "" for r in rows.values()), rows
    assert _scores(rows["reference"]) == FULL and float(rows["reference"]["score"]) == 7
    assert _scores(rows["stubs"]) == ZERO and float(rows["stubs"]["score"]) == 0
    assert _scores(rows["slips"]) == {**FULL, "ch02-ex-hand": 0, "ch02-ex-masked": 0}
    assert float(rows["slips"]["score"]) == 4 and rows["slips"]["max_score"] == "7"
    # what the checker said is kept for feedback
    detail = json.loads((tmp_path / "results" / "slips" / "ch02_worked_qkv.json").read_text(encoding="utf-8"))
    message = detail["tests"]["ch02-ex-masked"]["cases"][0]["message"]
    assert "some keys masked" in message and "renormalised" in message


def _rows_after(subs, out, csv_path, **limits):
    grade.grade(subs, out / "autograder", csv_path, jobs=2, log=lambda *a: None, **limits)
    return _rows(csv_path)


BAD = {"corrupt", "not_a_notebook", "empty_folder", "loose_file"}


def test_bad_submissions_get_a_clear_row_and_the_run_goes_on(built, tmp_path):
    out, manifest, student, solutions = built
    section = _exercise_section(student)
    subs = tmp_path / "submissions"
    _submit(subs, "reference", assignments.fill(section, solutions))
    _submit(subs, "corrupt", '{"cells": [{"cell_type": "code", "source": "x = 1"')   # cut short
    _submit(subs, "not_a_notebook", '{"hello": "world"}')
    wrong_kernel = assignments.fill(section, solutions)
    wrong_kernel.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    _submit(subs, "wrong_kernel", wrong_kernel)
    _submit(subs, "raises", assignments.fill(section, {
        **solutions, "ch02-ex-hand": "raise ValueError('my mistake')\n" + solutions["ch02-ex-hand"]}))
    # a cell that never ends (sleeping, so that it leaves the CPU to the rest of a loaded test run;
    # the busy loop that swallows the interrupt is the next test's)
    _submit(subs, "loops", assignments.fill(section, {
        **solutions, "ch02-ex-masked": "import time\nwhile True:\n    time.sleep(0.05)\n" + solutions["ch02-ex-masked"]}))
    tailored = solutions["ch02-ex-softmax"].replace("x.max(axis=-1, keepdims=True)", "x.max()")
    assert tailored != solutions["ch02-ex-softmax"]
    _submit(subs, "tailored", assignments.fill(section, {**solutions, "ch02-ex-softmax": tailored}))
    (subs / "empty_folder").mkdir()
    nbformat.write(section, subs / "loose_file.ipynb")
    # Limits far above what a legitimate cell or notebook needs even on a starved CI worker (make test
    # runs this beside the book build, at lower priority): only the endless cell may reach one.
    rows = _rows_after(subs, out, tmp_path / "grades.csv", cell_timeout=20, notebook_timeout=600)
    assert {r["status"] for n, r in rows.items() if n not in BAD} == {"graded"}, rows

    assert rows["reference"]["status"] == "graded" and _scores(rows["reference"]) == FULL
    for name, says in [("corrupt", "not valid JSON"), ("not_a_notebook", "not a notebook")]:
        assert rows[name]["status"] == "invalid" and says in rows[name]["note"], rows[name]
        assert _scores(rows[name]) == ZERO and rows[name]["max_score"] == "7"
    assert rows["wrong_kernel"]["status"] == "graded" and _scores(rows["wrong_kernel"]) == FULL
    assert "kernel 'ir' is not the course's 'python3': graded with python3" in rows["wrong_kernel"]["note"]
    assert _scores(rows["raises"]) == {**FULL, "ch02-ex-hand": 0}, rows["raises"]
    assert "(ch02-ex-hand) raised ValueError: my mistake" in rows["raises"]["note"]
    assert _scores(rows["loops"]) == {**FULL, "ch02-ex-masked": 0}, rows["loops"]
    assert "(ch02-ex-masked) stopped after 20 s" in rows["loops"]["note"], rows["loops"]
    # right on every visible case, wrong on a hidden one: it loses the hidden point only
    assert _scores(rows["tailored"]) == {**FULL, "ch02-ex-softmax": 1}
    assert "no notebook in this folder" in rows["empty_folder"]["note"]
    assert rows["loose_file"]["status"] == "invalid" and "SUBMISSIONS/<student>/" in rows["loose_file"]["note"]


def test_a_notebook_that_never_ends_is_stopped_with_its_kernel(built, tmp_path):
    import psutil
    out, manifest, student, solutions = built
    subs = tmp_path / "submissions"
    # it sleeps, so that it leaves the CPU to the rest of a loaded test run: the interrupt still
    # lands, in the sleep, and is swallowed
    swallow = ("import time\nwhile True:\n    try:\n        while True:\n            time.sleep(0.05)\n"
               "    except KeyboardInterrupt:\n        pass\n")
    _submit(subs, "swallows", assignments.fill(_exercise_section(student), {"ch02-ex-hand": swallow}))
    before, start = {p.pid for p in psutil.Process().children(recursive=True)}, time.time() - 1
    rows = _rows_after(subs, out, tmp_path / "grades.csv", cell_timeout=3, notebook_timeout=10)
    assert rows["swallows"]["status"] == "timeout" and _scores(rows["swallows"]) == ZERO
    assert "stopped after 10 s" in rows["swallows"]["note"]
    left = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert not left, "a grading process outlived its notebook"
    # the kernel runs in its own session: once its parent is gone it is nobody's child, so look
    # for any process started since, working in an Otter grading folder
    kernels = []
    for p in psutil.process_iter(["pid", "create_time", "cwd", "cmdline"]):
        if p.info["create_time"] >= start and "autograder/submission" in (p.info["cwd"] or ""):
            kernels.append((p.info["pid"], " ".join(p.info["cmdline"] or [])[:80]))
    assert not kernels, f"a kernel outlived its notebook: {kernels}"
