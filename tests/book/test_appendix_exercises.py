"""The exercise index's sentences, compared with the chapters and the Makefile.

``tests/chapters/test_exercises.py`` already requires every exercise label in the index. This module
holds the rest of ``book/appendix/exercises.md``: a row per chapter in the book's order, a checker
call in every coding exercise (a ``raise NotImplementedError`` stub), a solution gate after every
exercise, and ``make solutions`` running the reference solutions. Each reader runs on a plant too.
"""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "book" / "appendix" / "exercises.md"


def chapter_pages() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [ROOT / f"{c['file']}.md" for p in toc["parts"] for c in p["chapters"]
            if re.match(r"book/ch\d\d_", c["file"])]


def first_label(path: Path) -> str:
    return re.search(r"(?m)^\((\S+)\)=\s*$", path.read_text(encoding="utf-8")).group(1)


def index_rows(text: str) -> list[str]:
    """The chapter label of each row of the index's table, in order."""
    return re.findall(r"(?m)^\| \{ref\}`([\w-]+)` \|", text)


def test_one_row_per_chapter_in_the_books_order():
    chapters = chapter_pages()
    assert len(chapters) >= 12
    assert index_rows(INDEX.read_text(encoding="utf-8")) == [first_label(p) for p in chapters]


def test_a_missing_or_misplaced_row_is_caught():
    text = INDEX.read_text(encoding="utf-8")
    rows = text.splitlines()
    ch03 = next(i for i, r in enumerate(rows) if r.startswith("| {ref}`ch03`"))
    swapped = rows[:ch03 - 1] + [rows[ch03], rows[ch03 - 1]] + rows[ch03 + 1:]
    assert index_rows("\n".join(swapped)) != [first_label(p) for p in chapter_pages()]


def exercise_problems(text: str, name: str) -> list[str]:
    """A coding exercise without a checker call, or an exercise with no solution after it."""
    out = []
    for m in re.finditer(r"\{exercise-start\}[^\n]*\n:label: (\S+)(.*?)\{exercise-end\}(.*?)(?=\{exercise-start\}|\Z)",
                         text, re.S):
        label, body, after = m.groups()
        if "NotImplementedError" in body and not re.search(r"(?m)^ex\.check_\w+\(", body):
            out.append(f"{name} {label}: a coding exercise without a checker call")
        if "{solution-start}" not in after and "{solution}" not in after:
            out.append(f"{name} {label}: no solution after it")
    return out


def test_every_coding_exercise_calls_a_checker_and_every_exercise_has_a_solution():
    problems = []
    for path in chapter_pages():
        problems += exercise_problems(path.read_text(encoding="utf-8"), path.stem)
    assert problems == []


def test_a_coding_exercise_without_its_checker_is_caught():
    text = (ROOT / "book" / "ch02_worked_qkv.md").read_text(encoding="utf-8")
    planted = re.sub(r"(?m)^ex\.check_softmax\(.*$", "print(my_softmax)", text, count=1)
    assert planted != text
    assert exercise_problems(planted, "ch02") == ["ch02 ch02-ex-softmax: a coding exercise without a checker call"]


def test_make_solutions_runs_every_reference_solution():
    recipe = re.search(r"(?m)^solutions:[^\n]*\n((?:\t[^\n]*\n)+)", (ROOT / "Makefile").read_text(encoding="utf-8"))
    assert recipe and "tools/solutions.py" in recipe.group(1)
    doc = (ROOT / "tools" / "solutions.py").read_text(encoding="utf-8")
    assert "run every exercise's reference solution against its checker" in doc
    assert "`make solutions`" in INDEX.read_text(encoding="utf-8")
