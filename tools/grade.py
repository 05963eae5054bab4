"""`make grade SUBMISSIONS=dir/`: grade students' notebooks with the chapters' autograders.

    python tools/grade.py SUBMISSIONS [--autograders _build/assignments/autograder]
                          [--out _build/assignments/grades.csv] [--cell-timeout 60] [--notebook-timeout 600]

``SUBMISSIONS`` holds one folder per student, named after the student, with the
notebooks they hand in: ``SUBMISSIONS/<student>/ch02_worked_qkv.ipynb``. A
notebook's chapter comes from its name (``chNN…``), else from its metadata.
Each notebook is graded by ``otter run`` with its chapter's autograder (built by
``make assignments``), locally, without Docker or network: in a fresh kernel,
top to bottom, then every exercise's test file (the chapter's checker and the
hidden cases).

The CSV has one row per (student, notebook): ``status`` (``graded``,
``invalid``, ``timeout``, ``failed``), a bilingual ``note``, the total, and one
column per exercise. A bad notebook gets its row and zero points, never stops
the run:

- not JSON, or not a notebook: ``invalid``;
- another kernel than the course's ``python3`` (or none): graded with
  ``python3``, and the note says so;
- a cell that runs longer than ``--cell-timeout`` seconds: interrupted
  (KeyboardInterrupt in that cell), the rest runs on; the note names the cell;
- a notebook that runs longer than ``--notebook-timeout`` seconds in all (e.g.
  a loop that swallows the interrupt): stopped, with its kernel, ``timeout``;
- a cell that raises: the rest runs on (as in Jupyter), the note names it.

Next to the CSV, ``results/<student>/<notebook>.json`` keeps each test case's
message (what the checker said), for feedback to the student.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
from assignments import DEFAULT_OUT, chapter_of  # noqa: E402

KERNEL = "python3"
#: Runs first in every graded notebook: stops a cell that runs too long, via KeyboardInterrupt.
#: (Not SIGALRM: the chapters' checkers use it for their own per-call time limit.)
WATCHDOG = '''\
# inserted by the course grader (tools/grade.py): a cell running longer than {limit} s is interrupted
def _course_grader_watchdog(limit):
    import _thread
    import threading
    timer = []

    def start(info=None):
        if "from otter.execute import Checker" in (getattr(info, "raw_cell", "") or ""):
            return  # the tests themselves: each checker call has its own time limit
        timer.append(threading.Timer(limit, _thread.interrupt_main))
        timer[-1].daemon = True
        timer[-1].start()

    def stop(result=None):
        while timer:
            timer.pop().cancel()
    get_ipython().events.register("pre_run_cell", start)
    get_ipython().events.register("post_run_cell", stop)


_course_grader_watchdog({limit})
del _course_grader_watchdog
'''


def _note(en: str, zh: str) -> str:
    return f"{en} · {zh}"


def load_manifests(autograders: Path) -> dict:
    out = {}
    for m in sorted(autograders.glob("ch*/manifest.json")):
        data = json.loads(m.read_text(encoding="utf-8"))
        data["zip"] = m.parent / "autograder.zip"
        out[data["chapter"]] = data
    return out


def read_submission(path: Path):
    """``(notebook, notes)``, or raise ValueError with a bilingual reason."""
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(_note(f"not a notebook: the file is not valid JSON ({e.__class__.__name__}: "
                               f"{str(e)[:80]})", "不是笔记本：文件不是有效的 JSON")) from None
    try:
        nb = nbformat.from_dict(raw)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("no cells")
        nb = nbformat.convert(nb, 4) if nb.get("nbformat") != 4 else nb
        nbformat.validate(nb)
    except Exception as e:  # noqa: BLE001 - any malformed structure
        raise ValueError(_note(f"not a notebook: {str(e).splitlines()[0][:100]}",
                               "不是有效的笔记本结构")) from None
    notes = []
    spec = nb.metadata.get("kernelspec") or {}
    name = spec.get("name")
    if name != KERNEL:
        notes.append(_note(f"kernel {name!r} is not the course's {KERNEL!r}: graded with {KERNEL}",
                           f"内核 {name!r} 不是课程的 {KERNEL!r}：已改用 {KERNEL} 评分"))
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    return nb, notes


def _grade_child(nb_path: str, zip_path: str, out_json: str, log_path: str) -> None:
    """In a child process: ``otter run`` one notebook, write a summary JSON."""
    with open(log_path, "w", encoding="utf-8") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.stdout = sys.stderr = log      # under pytest they are capture objects, not fds 1 and 2
        from otter.run import main as otter_run
        results = otter_run(nb_path, autograder=zip_path, output_dir=None, no_logo=True)
        tests = {}
        for name, tf in results.results.items():
            tests[name] = {"score": tf.score, "possible": tf.possible,
                           "cases": [{"name": r.test_case.name, "hidden": r.test_case.hidden,
                                      "passed": r.passed, "message": r.message}
                                     for r in tf.test_case_results]}
        errors, cells = [], results.notebook.cells if results.notebook else []
        first = next((i + 1 for i, c in enumerate(cells) if c.source.startswith(WATCHDOG[:40])), 0)
        for i, cell in enumerate(cells[first:], 1):     # 1-based, as the student counts cells
            for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
                if o.get("output_type") == "error":
                    errors.append({"cell": i, "label": cell.metadata.get("course_exercise"),
                                   "ename": o.get("ename", ""), "evalue": str(o.get("evalue", ""))[:200]})
        Path(out_json).write_text(json.dumps({"tests": tests, "errors": errors}, ensure_ascii=False),
                                  encoding="utf-8")


def _kill_tree(pid: int) -> None:
    import psutil
    try:
        parent = psutil.Process(pid)
        procs = parent.children(recursive=True) + [parent]   # the kernel runs in its own session
    except psutil.NoSuchProcess:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)


class _Job:
    """One notebook being graded in a child process (see :func:`_grade_child`)."""

    def __init__(self, nb, manifest: dict, cell_timeout: float, notebook_timeout: float):
        self.tmp = tempfile.TemporaryDirectory(prefix="course-grade-")
        work = Path(self.tmp.name)
        nb = copy.deepcopy(nb)
        nb.cells.insert(0, nbformat.v4.new_code_cell(WATCHDOG.format(limit=cell_timeout)))
        nb_path = work / manifest["notebook"]
        nbformat.write(nb, nb_path)
        self.out_json, self.log = work / "summary.json", work / "log.txt"
        self.cell_timeout, self.notebook_timeout = cell_timeout, notebook_timeout
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods()
                                          else "spawn")
        self.process = ctx.Process(target=_grade_child, args=(
            str(nb_path), str(manifest["zip"]), str(self.out_json), str(self.log)))
        self.start = time.monotonic()
        self.process.start()
        self.deadline = self.start + notebook_timeout

    def result(self, timed_out: bool) -> dict:
        """Stop what is left of the child and its kernel; read what it wrote."""
        _kill_tree(self.process.pid)
        self.process.join()
        try:
            return self._result(timed_out)
        finally:
            self.tmp.cleanup()

    def _result(self, timed_out: bool) -> dict:
        if timed_out:
            t = self.notebook_timeout
            return {"status": "timeout", "notes": [_note(
                f"stopped after {t:g} s: the notebook did not finish (an endless loop?)",
                f"运行 {t:g} 秒后被停止：笔记本没有运行完（是否有死循环？）")]}
        if self.process.exitcode != 0 or not self.out_json.exists():
            text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
            tail = " ".join(text.strip().splitlines()[-1:])[:200]
            return {"status": "failed", "notes": [_note(
                f"the grader failed on this notebook (exit {self.process.exitcode}): {tail}",
                "评分程序无法处理这个笔记本")]}
        summary = json.loads(self.out_json.read_text(encoding="utf-8"))
        notes = []
        for e in summary["errors"]:
            label = e["label"]
            where_en = f"cell {e['cell']}" + (f" ({label})" if label else "")
            where_zh = f"第 {e['cell']} 个单元格" + (f"（{label}）" if label else "")
            if e["ename"] == "KeyboardInterrupt":
                notes.append(_note(f"{where_en} stopped after {self.cell_timeout:g} s",
                                   f"{where_zh}运行超过 {self.cell_timeout:g} 秒被中止"))
            else:
                notes.append(_note(f"{where_en} raised {e['ename']}: {e['evalue'][:80]}",
                                   f"{where_zh}抛出 {e['ename']}"))
        if len(notes) > 3:
            notes[3:] = [_note(f"and {len(notes) - 3} more cell error(s)",
                               f"另有 {len(notes) - 3} 个单元格出错")]
        summary.update(status="graded", notes=notes, seconds=round(time.monotonic() - self.start, 1))
        return summary


def run_jobs(todo: list, cell_timeout: float, notebook_timeout: float, jobs: int = 1):
    """Grade ``[(key, nb, manifest)]``, ``jobs`` at a time; yield ``(key, result)`` as each ends.

    One thread: children are forked from it (never from a second thread) and
    waited on through their sentinels, each against its own deadline.
    """
    from multiprocessing.connection import wait

    todo, running = list(todo), {}
    while todo or running:
        while todo and len(running) < max(1, jobs):
            key, nb, manifest = todo.pop(0)
            running[key] = _Job(nb, manifest, cell_timeout, notebook_timeout)
        soonest = min(j.deadline for j in running.values())
        wait([j.process.sentinel for j in running.values()], max(0.0, soonest - time.monotonic()))
        for key, job in list(running.items()):
            done = not job.process.is_alive()
            if done or time.monotonic() >= job.deadline:
                del running[key]
                yield key, job.result(timed_out=not done)


def find_submissions(root: Path):
    """``(student, path)`` for every notebook, and rows for what is not where it should be."""
    found, strays = [], []
    for entry in sorted(root.iterdir()):
        if entry.is_dir():
            nbs = sorted(entry.glob("*.ipynb"))
            if not nbs:
                strays.append((entry.name, entry, _note("no notebook in this folder", "文件夹里没有笔记本")))
            found += [(entry.name, nb) for nb in nbs]
        elif entry.suffix == ".ipynb":
            strays.append((entry.stem, entry, _note(
                "not in a student's folder: put it in SUBMISSIONS/<student>/",
                "不在学生文件夹中：请放到 SUBMISSIONS/<学生>/ 下")))
    return found, strays


def grade(submissions: Path, autograders: Path, out: Path, cell_timeout: float = 60,
          notebook_timeout: float = 600, jobs: int = 1, log=print) -> list[dict]:
    """Grade every submission; write the CSV and per-notebook results; return the rows."""
    manifests = load_manifests(autograders)
    if not manifests:
        raise SystemExit(f"no autograders in {autograders}: run `make assignments` first")
    found, strays = find_submissions(submissions)
    rows = [{"student": s, "chapter": "", "notebook": p.name, "status": "invalid", "note": note,
             "score": 0, "max_score": 0} for s, p, note in strays]
    todo, notes_of = [], {}
    for student, path in found:
        row = {"student": student, "chapter": "", "notebook": path.name, "status": "invalid",
               "note": "", "score": 0, "max_score": 0}
        rows.append(row)
        chapter = chapter_of(path.name)
        try:
            nb, notes = read_submission(path)
        except ValueError as e:
            nb, notes = None, [str(e)]
        if nb is not None and chapter is None:
            chapter = (nb.metadata.get("course_assignment") or {}).get("chapter")
        manifest = manifests.get(chapter)
        if manifest is None:
            notes.append(_note(f"no autograder for chapter {chapter!r}: is the file named chNN_….ipynb?",
                               "找不到对应章节的评分程序：文件名是 chNN_….ipynb 吗？"))
        else:
            row.update(chapter=chapter, max_score=manifest["max_score"])
            row.update({e["label"]: 0 for e in manifest["exercises"]})
        row["note"] = "; ".join(notes)
        if nb is None or manifest is None:
            log(f"{student:<16} {path.name:<28} invalid")
            continue
        todo.append(((student, path), nb, manifest))
        notes_of[(student, path)] = (row, notes)
    for (student, path), result in run_jobs(todo, cell_timeout, notebook_timeout, jobs):
        row, notes = notes_of[(student, path)]
        row["status"] = result["status"]
        row["note"] = "; ".join(notes + result["notes"])
        for label, t in result.get("tests", {}).items():
            if label in row:
                row[label] = t["score"]
        row["score"] = sum(row[e["label"]] for e in manifests[row["chapter"]]["exercises"])
        detail = out.parent / "results" / student / f"{path.stem}.json"
        detail.parent.mkdir(parents=True, exist_ok=True)
        detail.write_text(json.dumps({**row, **result}, ensure_ascii=False, indent=1), encoding="utf-8")
        log(f"{student:<16} {path.name:<28} {row['status']:<8} {row['score']:g}/{row['max_score']:g}"
            f"  {result.get('seconds', '')}")
    labels = [e["label"] for m in manifests.values() for e in m["exercises"]
              if any(e["label"] in r for r in rows)]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, ["student", "chapter", "notebook", "status", "score", "max_score", *labels,
                               "note"], restval="")
        w.writeheader()
        w.writerows(sorted(rows, key=lambda r: (r["student"], r["chapter"], r["notebook"])))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("submissions", type=Path)
    p.add_argument("--autograders", type=Path, default=DEFAULT_OUT / "autograder")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT / "grades.csv")
    p.add_argument("--cell-timeout", type=float, default=60, help="seconds per cell (default 60)")
    p.add_argument("--notebook-timeout", type=float, default=600,
                   help="seconds per notebook, tests included (default 600)")
    p.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default 1)")
    args = p.parse_args(argv)
    if not args.submissions.is_dir():
        p.error(f"{args.submissions} is not a folder")
    rows = grade(args.submissions, args.autograders, args.out, args.cell_timeout, args.notebook_timeout,
                 args.jobs)
    bad = sum(r["status"] != "graded" for r in rows)
    print(f"grade: {len(rows)} notebook(s), {bad} not graded normally -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
