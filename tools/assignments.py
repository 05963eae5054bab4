"""`make assignments`: one student notebook and one autograder per chapter, built from the book.

    python tools/assignments.py [ch02 ch03 …] [--out _build/assignments]

For every chapter whose exercises call a checker (``ex.check_…(answer)``), it writes

- ``student/<chapter>.ipynb``: the whole chapter as the book shows it (text,
  code, stored outputs), with every gated solution taken out
  (``{solution-start}`` … ``{solution-end}``: its prose and its code cells).
  Each ``{exercise-start}`` gate becomes a visible "✎ Exercise" heading; the
  exercise's cells, with their stubs and checker calls, stay as they are, so a
  student checks their work in the notebook exactly as in the book. Two cells
  at the top (English, Chinese) say what to do and how it is graded.
- ``autograder/<chNN>/autograder.zip``: an Otter-Grader autograder (``otter
  run`` grades one notebook with it, no Docker). Per exercise one test file:
  the case ``checker`` (1 point) runs the chapter's own checker on the
  student's answer; the case ``hidden`` (1 point, where ``tools/hidden/chNN.py``
  has one) runs cases the notebook never shows. The hidden module travels in
  the zip (``files/``), never in the student notebook.
- ``autograder/<chNN>/manifest.json``: the exercises, their answers' names and
  points (``tools/grade.py`` reads it).

The build fails if a kept cell needs a name that only a removed solution
defined (the student notebook would then raise NameError).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import copy
import json
import re
import symtable
import sys
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
from toc import ROOT, notebooks  # noqa: E402

HIDDEN_DIR = ROOT / "tools" / "hidden"
DEFAULT_OUT = ROOT / "_build" / "assignments"
#: ZIP entries get this date, so that a rebuild of the same book gives the same bytes.
ZIP_DATE = (2020, 1, 1, 0, 0, 0)

GATE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<kind>exercise|solution)-(?P<edge>start|end)\}"
                  r"[ \t]*(?P<arg>[^\n]*)$", re.M)


@dataclass
class Exercise:
    """One graded exercise: the cell whose last line is ``ex.check_<name>(<answer>)``."""

    label: str
    title: str
    checker: str          # e.g. "check_softmax", in course_lib.chapters.<chapter>.exercises
    answer: str           # the expression passed to it, e.g. "my_softmax"
    points: dict = field(default_factory=dict)   # {"checker": 1, "hidden": 1}


@dataclass
class Assignment:
    chapter: str          # "ch02"
    page: str             # "ch02_worked_qkv"
    notebook: nbformat.NotebookNode
    exercises: list[Exercise]
    problems: list[str]


def chapter_of(page: str) -> str | None:
    m = re.match(r"(ch\d\d)", page)
    return m.group(1) if m else None


def _pieces(text: str):
    """Split markdown into ``("text", s)`` and ``("gate", kind, edge, arg, label)`` pieces."""
    out, pos = [], 0
    for m in GATE.finditer(text):
        if m.start() < pos:
            continue
        close = re.compile(rf"^{re.escape(m['fence'])}[ \t]*$", re.M).search(text, m.end())
        body = text[m.end():close.start() if close else len(text)]
        label = re.search(r"^:label:\s*(\S+)", body, re.M)
        out.append(("text", text[pos:m.start()]))
        out.append(("gate", m["kind"], m["edge"], m["arg"].strip(), label.group(1) if label else ""))
        pos = close.end() if close else len(text)
    out.append(("text", text[pos:]))
    return out


def _checker_call(source: str):
    """``(checker, answer)`` if the cell's last statement is ``ex.check_…(answer)``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    last = tree.body[-1] if tree.body else None
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)):
        return None
    fn = last.value.func
    if (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "ex"
            and fn.attr.startswith("check_") and len(last.value.args) == 1):
        return fn.attr, ast.get_source_segment(source, last.value.args[0])
    return None


def _names(source: str) -> tuple[set, set]:
    """``(defined, used)``: the global names a cell binds and the global names it reads."""
    try:
        table = symtable.symtable(source, "<cell>", "exec")
    except SyntaxError:
        return set(), set()
    defined = {s.get_name() for s in table.get_symbols()
               if s.is_assigned() or s.is_imported() or s.is_namespace()}
    used = {s.get_name() for s in table.get_symbols() if s.is_referenced()}

    def free_globals(t):       # names a function, class or comprehension reads from the cell's globals
        for child in t.get_children():
            used.update(s.get_name() for s in child.get_symbols()
                        if s.is_referenced() and s.is_global() and not s.is_assigned())
            free_globals(child)
    free_globals(table)
    return defined, used


def header_cells(chapter: str, page: str) -> list:
    n = int(chapter[2:])
    en = (f"**Student notebook · 学生笔记本.** This is chapter {n} of the book (`{page}`) with the "
          "solutions taken out. Write your answers in the cells under each **✎ Exercise** heading, in "
          "place of `raise NotImplementedError` or `...`, and run the cell: its last line is a checker "
          "that prints ✓, or what is wrong with a hint. Keep the names the exercises ask for "
          "(`my_softmax`, `my_weights`, …) and the file's name, save, and hand in this file. "
          "The grader runs the whole notebook from the top in a fresh kernel, then scores each "
          "exercise with the same checker and with further cases that this notebook does not show; "
          "a cell that runs for too long is stopped.")
    zh = (f"**学生笔记本.** 这是本书第 {n} 章（`{page}`）去掉答案后的版本。在每个 **✎ 练习** 标题下的"
          "单元格里写答案，替换掉 `raise NotImplementedError` 或 `...`，然后运行该单元格：最后一行的"
          "检查函数会打印 ✓，或者指出哪里错了并给出提示。练习要求的名字（`my_softmax`、`my_weights` 等）"
          "和文件名都不要改，保存后提交本文件。评分时会在新的内核中从头运行整个笔记本，再用同一个"
          "检查函数和本笔记本没有展示的更多用例给每道练习打分；运行过久的单元格会被中止。")
    return [nbformat.v4.new_markdown_cell(en, metadata={"tags": ["en"]}),
            nbformat.v4.new_markdown_cell(zh, metadata={"tags": ["zh"]})]


def student_notebook(ipynb: Path) -> Assignment:
    """The chapter's notebook without its solutions, and its graded exercises."""
    page, chapter = ipynb.stem, chapter_of(ipynb.stem)
    src = nbformat.read(ipynb, as_version=4)
    cells, exercises, problems = header_cells(chapter, page), [], []
    exercise, in_solution = None, False          # exercise: (label, title) while inside its gate
    solution_of = ""                             # the label of the solution being removed
    removed_defs: dict[str, str] = {}            # name -> label of the solution that defined it
    kept_defs: set = set(dir(builtins)) | {"display", "get_ipython", "In", "Out"}
    for cell in src.cells:
        if cell.cell_type == "markdown":
            text = []
            for piece in _pieces(cell.source):
                if piece[0] == "text":
                    if not in_solution:
                        text.append(piece[1])
                    continue
                _, kind, edge, arg, label = piece
                if kind == "solution":
                    in_solution, solution_of = edge == "start", arg
                elif edge == "start":
                    exercise = (label, arg)
                    text.append(f"### ✎ Exercise · 练习: {arg}\n\n`{label}`")
                else:
                    exercise = None
            body = re.sub(r"\n{3,}", "\n\n", "".join(text)).strip()
            if body:
                new = copy.deepcopy(cell)
                new.source = body
                cells.append(new)
            continue
        if cell.cell_type != "code":
            if not in_solution:
                cells.append(copy.deepcopy(cell))
            continue
        defined, used = _names(cell.source)
        if in_solution:
            for name in defined - kept_defs:
                removed_defs.setdefault(name, solution_of)
            continue
        missing = sorted(n for n in used - kept_defs - defined if n in removed_defs)
        if missing:
            problems.append(f"{page}: a kept cell reads {', '.join(missing)}, defined only in the "
                            f"removed solution(s) {sorted({removed_defs[n] for n in missing})}")
        kept_defs |= defined
        new = copy.deepcopy(cell)
        new.metadata.pop("jupyter", None)
        call = _checker_call(cell.source) if exercise else None
        if call:
            exercises.append(Exercise(exercise[0], exercise[1], *call))
            new.metadata["course_exercise"] = exercise[0]
        cells.append(new)
    nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(src.metadata))
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["course_assignment"] = {"chapter": chapter, "page": page,
                                        "exercises": [e.label for e in exercises]}
    for i, c in enumerate(nb.cells):     # stable ids: a rebuild of the same book is the same file
        c["id"] = f"{chapter}-{i:03d}"
    labels = [e.label for e in exercises]
    if len(set(labels)) != len(labels):
        problems.append(f"{page}: an exercise has two checker cells: {labels}")
    return Assignment(chapter, page, nb, exercises, problems)


def solutions(ipynb: Path) -> dict[str, str]:
    """``{label: code}``: each exercise's reference solution, as a student would type it.

    The solution cell's checker call gets the exercise's answer name (``my_weights =
    weights.round(2)`` before ``ex.check_hand_weights(my_weights)``), so that the
    autograder finds the answer where it finds a student's.
    """
    answers = {e.label: e.answer for e in student_notebook(ipynb).exercises}
    out, label, in_solution = {}, None, False
    for cell in nbformat.read(ipynb, as_version=4).cells:
        if cell.cell_type == "markdown":
            for piece in _pieces(cell.source):
                if piece[0] == "gate" and piece[1] == "solution":
                    in_solution = piece[2] == "start"
                    label = piece[3] if in_solution else None
        elif in_solution and label in answers and _checker_call(cell.source):
            checker, arg = _checker_call(cell.source)
            lines = cell.source.rstrip().splitlines()
            call = f"ex.{checker}({answers[label]})"
            if arg != answers[label]:
                lines[-1:] = [f"{answers[label]} = {arg}", call]
            out[label] = "\n".join(lines)
    return out


def fill(student: nbformat.NotebookNode, answers: dict[str, str]) -> nbformat.NotebookNode:
    """A copy of a student notebook with some exercise cells replaced: ``{label: code}``."""
    nb = copy.deepcopy(student)
    for cell in nb.cells:
        label = cell.metadata.get("course_exercise")
        if label in answers:
            cell.source = answers[label]
            cell.outputs, cell.execution_count = [], None
    return nb


def hidden_checks(chapter: str) -> tuple[Path | None, set]:
    """The chapter's hidden-case module and the labels it covers."""
    path = HIDDEN_DIR / f"{chapter}.py"
    if not path.exists():
        return None, set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:     # HIDDEN = {"label": function, ...} (read without importing)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "HIDDEN" for t in node.targets):
            return path, {k.value for k in node.value.keys}
    raise SystemExit(f"{path}: no HIDDEN = {{label: checker}} dict")


TEST_FILE = '''\
"""Autograder test for {label} ({title}); generated by tools/assignments.py."""

from otter.test_files import test_case

OK_FORMAT = False
name = {label!r}
points = {total}


def _answer(env):
    """The student's answer, {answer}, from the notebook's namespace (None if it is missing)."""
    try:
        return eval({answer!r}, dict(env))
    except Exception:
        return None


@test_case(name="checker", points={checker_points})
def checker(env):
    from course_lib.chapters.{chapter} import exercises
    verdict = exercises.{checker}(_answer(env))
    assert verdict.ok, repr(verdict)
'''

HIDDEN_CASE = '''

@test_case(name="hidden", points={hidden_points}, hidden=True)
def hidden(env):
    import course_hidden_{chapter} as hidden_cases
    verdict = hidden_cases.HIDDEN[{label!r}](_answer(env))
    assert verdict.ok, repr(verdict)
'''


def _zip_write(zf: zipfile.ZipFile, name: str, data: str) -> None:
    info = zipfile.ZipInfo(name, ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


def write_autograder(a: Assignment, out: Path) -> dict:
    """Write ``autograder.zip`` and ``manifest.json`` into ``out``; return the manifest."""
    hidden_path, hidden_labels = hidden_checks(a.chapter)
    unknown = hidden_labels - {e.label for e in a.exercises}
    if unknown:
        raise SystemExit(f"{hidden_path}: hidden cases for exercises that do not exist: {sorted(unknown)}")
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out / "autograder.zip", "w") as zf:
        _zip_write(zf, "otter_config.json", json.dumps({"debug": False, "print_summary": False}))
        for e in a.exercises:
            e.points = {"checker": 1, **({"hidden": 1} if e.label in hidden_labels else {})}
            test = TEST_FILE.format(label=e.label, title=e.title, total=sum(e.points.values()),
                                    answer=e.answer, chapter=a.chapter, checker=e.checker,
                                    checker_points=e.points["checker"])
            if "hidden" in e.points:
                test += HIDDEN_CASE.format(chapter=a.chapter, label=e.label,
                                           hidden_points=e.points["hidden"])
            _zip_write(zf, f"tests/{e.label}.py", test)
        if hidden_path:
            _zip_write(zf, f"files/course_hidden_{a.chapter}.py", hidden_path.read_text(encoding="utf-8"))
    manifest = {"chapter": a.chapter, "page": a.page, "notebook": f"{a.page}.ipynb",
                "exercises": [asdict(e) for e in a.exercises],
                "max_score": sum(sum(e.points.values()) for e in a.exercises)}
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n",
                                       encoding="utf-8")
    return manifest


def build(chapters: list[str] | None = None, out: Path = DEFAULT_OUT) -> list[dict]:
    """Build the student notebooks and autograders; return the manifests."""
    pages = [p for p in notebooks() if chapter_of(p.stem)]
    if chapters:
        pages = [p for p in pages if chapter_of(p.stem) in chapters]
        if len(pages) != len(set(chapters)):
            raise SystemExit(f"unknown chapter(s) among {chapters}")
    built, problems = [], []
    for ipynb in pages:
        a = student_notebook(ipynb)
        problems += a.problems
        if not a.exercises:
            continue
        (out / "student").mkdir(parents=True, exist_ok=True)
        nbformat.write(a.notebook, out / "student" / f"{a.page}.ipynb")
        built.append(write_autograder(a, out / "autograder" / a.chapter))
    if problems:
        raise SystemExit("assignments:\n  " + "\n  ".join(problems))
    return built


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("chapters", nargs="*", help="e.g. ch02 ch03 (default: every chapter)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    for m in build(args.chapters or None, args.out):
        hidden = sum("hidden" in e["points"] for e in m["exercises"])
        print(f"{m['chapter']}: {len(m['exercises'])} graded exercise(s), {hidden} with hidden cases, "
              f"{m['max_score']} points -> student/{m['notebook']}, autograder/{m['chapter']}/")
    print(f"assignments: written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
