"""The teachers' page says what ``make assignments`` and ``make grade`` do, as their code does it.

``tests/book/test_teachers_page.py`` holds the grader's statuses and time limits; this module
holds the rest of the page's factual sentences, each read from its source: which chapters have
hidden cases (``tools/hidden/``, the chapters' exercise cells), the points, the header cells, the
CSV's columns (``tools/grade.py``), the page's table against every note the grader can write, the
Makefile's ``CHAPTERS``, ``SUBMISSIONS`` and ``JOBS``, and what ``tests/book/test_grading.py``
grades. Each reader is also run on a planted page or source, so a stale sentence is caught.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "appendix" / "teachers.md"
GRADER = ROOT / "tools" / "grade.py"
BUILDER = ROOT / "tools" / "assignments.py"
HIDDEN = ROOT / "tools" / "hidden"
GRADING_TEST = ROOT / "tests" / "book" / "test_grading.py"


def page() -> str:
    return PAGE.read_text(encoding="utf-8")


# --- hidden cases: which chapters, which exercises --------------------------------------------

def page_hidden_chapters(text: str) -> tuple[set[int], set[int]]:
    """The chapters the page says have hidden cases, in English and in Chinese."""
    en = re.search(r"today every coding exercise of chapters ([\d, and]+), and none of the other chapters", text)
    zh = re.search(r"目前第 ([\d、]+) 章的每道编程题都有隐藏用例，其他章节没有", text)
    return ({int(n) for n in re.findall(r"\d+", en.group(1))} if en else set(),
            {int(n) for n in re.findall(r"\d+", zh.group(1))} if zh else set())


def hidden_labels() -> dict[int, set[str]]:
    """``{chapter: labels}`` of every ``HIDDEN`` dict in tools/hidden/chNN.py, read without importing."""
    out = {}
    for path in sorted(HIDDEN.glob("ch[0-9][0-9].py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "HIDDEN" for t in node.targets):
                out[int(path.stem[2:])] = {k.value for k in node.value.keys}
    return out


def exercises(chapter: int) -> dict[str, str]:
    """``{label: "coding" | "hand"}`` of one chapter's exercises that end in a checker call: coding
    when the cell's stub is ``raise NotImplementedError``, by hand when it is ``...``."""
    path = next((ROOT / "book").glob(f"ch{chapter:02d}_*.md"))
    out = {}
    for m in re.finditer(r"\{exercise-start\}[^\n]*\n:label: (\S+)(.*?)\{exercise-end\}",
                         path.read_text(encoding="utf-8"), re.S):
        body = m.group(2)
        if re.search(r"^ex\.check_\w+\(", body, re.M):
            out[m.group(1)] = "coding" if "NotImplementedError" in body else "hand"
    return out


def test_the_page_names_the_chapters_with_hidden_cases():
    chapters = set(hidden_labels())
    assert chapters                                            # the reader finds tools/hidden/
    assert page_hidden_chapters(page()) == (chapters, chapters)


def test_every_coding_exercise_of_those_chapters_has_hidden_cases_and_no_hand_one_does():
    for chapter, labels in hidden_labels().items():
        kinds = exercises(chapter)
        assert labels == {label for label, kind in kinds.items() if kind == "coding"}, chapter


def test_a_chapter_left_out_of_the_sentence_is_caught():
    planted = page().replace("chapters 2, 5, 7, 8 and 9", "chapters 2, 5, 7 and 8", 1)
    assert planted != page()
    assert page_hidden_chapters(planted)[0] != set(hidden_labels())


def test_the_reader_tells_coding_from_hand_exercises():
    kinds = exercises(2)
    assert kinds["ch02-ex-hand"] == "hand" and kinds["ch02-ex-softmax"] == "coding"


# --- points and the student notebook's header -------------------------------------------------

def test_one_point_for_the_checker_and_one_for_the_hidden_cases():
    source = BUILDER.read_text(encoding="utf-8")
    assert 'e.points = {"checker": 1, **({"hidden": 1} if e.label in hidden_labels else {})}' in source
    assert "worth one point for passing the chapter's own checker, and one more where" in page()
    assert "每道计分练习通过该章自带的检查函数得一分；如果评分程序里有这道题的隐藏用例，全部通过再加一分" in page()


def test_two_cells_at_the_top():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import assignments
    finally:
        sys.path.remove(str(ROOT / "tools"))
    cells = assignments.header_cells("ch02", "ch02_worked_qkv")
    assert len(cells) == 2
    assert "Two cells at the top tell students" in page() and "笔记本开头有两个单元格" in page()


# --- the CSV's columns --------------------------------------------------------------------------

def csv_columns(source: str) -> list[str]:
    """The fixed columns of the grader's ``csv.DictWriter``, ``*labels`` shown as ``"<exercises>"``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "DictWriter":
            return ["<exercises>" if isinstance(e, ast.Starred) else e.value for e in node.args[1].elts]
    raise AssertionError("no csv.DictWriter in tools/grade.py")


# the page's words for each column, in the page's order
PAGE_COLUMNS = {"student": "the student", "chapter": "the chapter", "notebook": "the file",
                "status": "a status", "score": "the score", "max_score": "the maximum",
                "<exercises>": "one column per exercise", "note": "a note in both languages"}


def test_the_page_lists_the_csv_columns_in_order():
    columns = csv_columns(GRADER.read_text(encoding="utf-8"))
    assert set(columns) == set(PAGE_COLUMNS)
    sentence = re.search(r"The result is `_build/assignments/grades\.csv`[^.]*\.", page()).group(0)
    positions = [sentence.find(PAGE_COLUMNS[c]) for c in columns]
    assert -1 not in positions and positions == sorted(positions), (columns, positions)
    assert "学生、章节、文件名、状态" in page() and "得分和满分" in page()


def test_a_new_column_is_caught():
    source = GRADER.read_text(encoding="utf-8").replace('"max_score", *labels,', '"max_score", "late", *labels,')
    assert set(csv_columns(source)) != set(PAGE_COLUMNS)


# --- the table of bad notebooks against every note the grader writes -------------------------

def grader_notes(source: str) -> list[str]:
    """The English text (its opening constant part) of every ``_note(en, zh)`` the grader writes."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_note" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant):
                out.append(first.value)
            elif isinstance(first, ast.JoinedStr):
                out.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in first.values))
    return out


# each note the grader can write -> the row of the page's table that describes it (English side),
# or None for a note that is not a kind of bad notebook (it continues another row's note)
ROWS = {
    "not a notebook: the file is not valid JSON": "not valid JSON, or JSON that is not a notebook",
    "not a notebook: {}": "not valid JSON, or JSON that is not a notebook",
    "kernel {} is not the course's {}: graded with {}": "another kernel than the course's `python3`",
    "stopped after {} s: the notebook did not finish": "the notebook runs longer than `--notebook-timeout`",
    "the grader failed on this notebook": "the grader itself stops on the notebook",
    "{} stopped after {} s": "a cell runs longer than `--cell-timeout`",
    "{} raised {}: {}": "a cell raises an error",
    "and {} more cell error(s)": None,
    "no notebook in this folder": "a student's folder with no notebook",
    "not in a student's folder": "a notebook outside a student's folder",
    "no autograder for chapter {}": "a notebook whose name starts with no chapter that has an autograder",
}


def unmapped_notes(notes: list[str], text: str) -> list[str]:
    """Notes with no entry above, and entries whose row the page's table lacks."""
    table = "\n".join(line for line in text.splitlines() if line.startswith("| "))
    bad = []
    for note in notes:
        key = next((k for k in ROWS if note.startswith(k)), "")
        if not key:
            bad.append(f"unmapped note: {note}")
        elif ROWS[key] is not None and f"| {ROWS[key]}" not in table:
            bad.append(f"no row for: {note}")
    return bad


def test_every_note_the_grader_writes_has_its_row_in_the_table():
    notes = grader_notes(GRADER.read_text(encoding="utf-8"))
    assert len(notes) >= 9                                   # the reader finds the notes
    assert unmapped_notes(notes, page()) == []


def test_a_row_taken_out_of_the_table_is_caught():
    text = "\n".join(line for line in page().splitlines() if not line.startswith("| a student's folder with no"))
    assert unmapped_notes(grader_notes(GRADER.read_text(encoding="utf-8")), text) == [
        "no row for: no notebook in this folder"]


def test_a_new_kind_of_note_in_the_grader_is_caught():
    source = GRADER.read_text(encoding="utf-8") + '\n\ndef _late():\n    return _note("handed in late", "迟交")\n'
    assert unmapped_notes(grader_notes(source), page()) == ["unmapped note: handed in late"]


# --- the Makefile's variables -----------------------------------------------------------------

def make_recipe(target: str) -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.search(rf"(?m)^{target}:[^\n]*\n((?:\t[^\n]*\n)+)", makefile).group(1)


def test_the_make_variables_the_page_uses_reach_the_tools():
    assert "tools/assignments.py $(CHAPTERS)" in make_recipe("assignments")
    grade = make_recipe("grade")
    assert "tools/grade.py $(SUBMISSIONS)" in grade and "--jobs $(JOBS)" in grade
    assert 'make assignments CHAPTERS="ch02 ch05"' in page()
    assert "`make grade SUBMISSIONS=submissions/ JOBS=2` grades two at a time" in page()


# --- what tests/book/test_grading.py grades ---------------------------------------------------

# a kind of bad notebook -> what test_grading.py must assert of it (its note or its status)
GRADED_KINDS = {
    "not valid JSON": '("corrupt", "not valid JSON")',
    "not a notebook": '("not_a_notebook", "not a notebook")',
    "another kernel": "is not the course's 'python3': graded with python3",
    "a cell raises": "raised ValueError: my mistake",
    "a cell runs too long": "stopped after 20 s",
    "the notebook runs too long": 'rows["swallows"]["status"] == "timeout"',
    "an empty folder": "no notebook in this folder",
    "a loose file": "SUBMISSIONS/<student>/",
}
NOT_GRADED = {"a failure of the grader": '== "failed"', "a name that gives no chapter": "no autograder"}


def grading_gaps(source: str) -> list[str]:
    """What the page says test_grading.py checks and its source does not (or no longer leaves out)."""
    gaps = []
    if 'assignments.build(["ch02"]' not in source:
        gaps.append("chapter 2 is not the chapter built")
    gaps += [kind for kind, assertion in GRADED_KINDS.items() if assertion not in source]
    gaps += [f"now covers {kind}: the page's exception is stale" for kind, absent in NOT_GRADED.items()
             if absent in source]
    for what, assertion in [("full marks", '_scores(rows["reference"]) == FULL'),
                            ("stubs zero", '_scores(rows["stubs"]) == ZERO'),
                            ("two slips, two exercises", '{**FULL, "ch02-ex-hand": 0, "ch02-ex-masked": 0}')]:
        if assertion not in source:
            gaps.append(what)
    return gaps


def test_make_test_grades_what_the_page_says():
    assert grading_gaps(GRADING_TEST.read_text(encoding="utf-8")) == []
    assert "except two: a failure of the grader itself, and a name that gives no chapter" in page()
    assert "只有两种例外：评分程序自身出错，以及文件名里没有章节号" in page()


def test_make_check_leaves_test_grading_to_make_test_only():
    # the page says make test runs it: tools/test_all.py runs all of tests/, check.py only skips it
    assert "tests/book/test_grading.py" in (ROOT / "tools" / "check.py").read_text(encoding="utf-8")
    assert "test_grading" not in (ROOT / "tools" / "test_all.py").read_text(encoding="utf-8")
    assert "test_grading" not in (ROOT / "Makefile").read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", sorted(GRADED_KINDS))
def test_a_kind_that_test_grading_stops_checking_is_caught(kind):
    source = GRADING_TEST.read_text(encoding="utf-8").replace(GRADED_KINDS[kind], "")
    assert grading_gaps(source) == [kind]


def test_a_test_of_the_graders_failure_makes_the_exception_stale():
    source = GRADING_TEST.read_text(encoding="utf-8") + '\nassert row["status"] == "failed"\n'
    assert grading_gaps(source) == ["now covers a failure of the grader: the page's exception is stale"]
