"""Each chapter's reading time and the time its live cells take, for its opening line.

    python tools/chapter_times.py                         # measure every paired chapter, print a table
    python tools/chapter_times.py book/ch02_worked_qkv.md # only those chapters
    python tools/chapter_times.py --store [FILES]         # and write data/chapter_times.json
    python tools/chapter_times.py --reading-only          # only count the words (no execution)

What is measured
----------------
- **Reading time**: the English prose words of the chapter's ``.md`` at
  ``course_lib.chapters.opening.WORDS_PER_MINUTE`` (200, a declared definition). Counted: the
  markdown cells tagged ``en`` and the untagged markdown (headings, captions, tables), never the
  ``zh`` cells or code; a word is a run of Latin letters or digits (``d_k``, ``2017``, ``don't``),
  so the Chinese half of a bilingual line counts nothing. Fenced blocks (diagrams), MyST comments,
  labels and directive options are left out.
- **Live cells**: the CPU time (user + system, all threads) of the kernel that executes the paired
  ``.ipynb`` top to bottom in a fresh kernel (nbclient, the notebook's folder as working directory),
  with ``OMP_NUM_THREADS=2`` (the book's budget is on 2 cores, ``book/appendix/reproducibility.md``,
  section *Time budgets*); the opening line prints it. Unlike the wall-clock time, also stored
  (``live_seconds``), it barely changes when other programs load the machine. Kernel start-up is not
  counted. It is stored with the CPU model, the core count and the date.

``--store`` writes ``data/chapter_times.json`` (chapters not measured this time keep their
entries), updates the file's size and SHA-256 in ``data/README.md``, and writes each measured
chapter's new opening line as the stored output of its opening cell (the one cell that calls
``chapters.opening(...)``): that output is a function of the file alone, so the chapter need not be
re-executed, and nbval checks it on the next run as every other output.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from course_lib.chapters.opening import WORDS_PER_MINUTE, times_path  # noqa: E402

THREADS = 2
LANG_SKIP = {"zh"}
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’_.-][A-Za-z0-9]+)*")
_DROP = [
    re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.S | re.M),   # fenced blocks: diagrams, directives' code
    re.compile(r"<!--.*?-->", re.S),                        # HTML comments
    re.compile(r"(?m)^\s*%.*$"),                            # MyST comments
    re.compile(r"(?m)^\s*:[\w-]+:.*$"),                     # directive options
    re.compile(r"(?m)^\s*\(\S+\)=\s*$"),                    # labels
    re.compile(r"\]\([^)]*\)"),                             # link targets
]


def reading_words(md_text: str) -> int:
    """English prose words of a chapter's MyST text (the rule in the module docstring)."""
    import jupytext

    if not isinstance(md_text, str):
        raise TypeError(f"md_text must be a chapter's MyST text (str), got {type(md_text).__name__}")
    nb = jupytext.reads(md_text, fmt="md:myst")
    words = 0
    for cell in nb.cells:
        if cell.cell_type != "markdown" or LANG_SKIP & set(cell.metadata.get("tags", [])):
            continue
        text = cell.source
        for pattern in _DROP:
            text = pattern.sub(" ", text)
        words += len(_WORD.findall(text))
    return words


def execute_seconds(ipynb: Path, threads: int = THREADS) -> tuple[float, float]:
    """Wall-clock and kernel CPU seconds to execute ``ipynb`` in a fresh kernel on ``threads`` threads
    (start-up excluded)."""
    import psutil
    import nbformat
    from nbclient import NotebookClient

    ipynb = Path(ipynb)
    if not ipynb.is_file():
        raise FileNotFoundError(f"ipynb: no notebook at {ipynb} (make sync FILES=… writes it)")
    nb = nbformat.read(ipynb, as_version=4)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONHASHSEED="0", OMP_WAIT_POLICY="PASSIVE")
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ipynb.parent)}})
    with client.setup_kernel(env=env):
        kernel = psutil.Process(client.km.provisioner.process.pid)

        def cpu() -> float:
            t = kernel.cpu_times()
            return t.user + t.system + t.children_user + t.children_system

        start, cpu0 = time.perf_counter(), cpu()
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and "chapters.opening(" in cell.source:
                continue                           # the line that prints this measurement is not timed
            client.execute_cell(cell, index)
        return time.perf_counter() - start, cpu() - cpu0


def machine() -> dict:
    """The CPU model and core count of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count()}


def chapters() -> list[Path]:
    """The paired chapters' .md files."""
    return sorted(p for p in (ROOT / "book").glob("ch*.md") if p.with_suffix(".ipynb").exists())


def measure(md: Path, execute: bool = True) -> dict:
    md = Path(md)
    words = reading_words(md.read_text(encoding="utf-8"))
    out = {"reading_words": words, "reading_minutes": round(words / WORDS_PER_MINUTE, 1)}
    if execute:
        wall, cpu = execute_seconds(md.with_suffix(".ipynb"))
        out["live_seconds"], out["live_cpu_seconds"] = round(wall, 1), round(cpu, 1)
        out.update(machine(), threads=THREADS, date=dt.date.today().isoformat())
    return out


def store(results: dict, path: Path | None = None, readme: Path | None = None) -> Path:
    """Merge ``results`` ({chapter: entry}) into the stored file and update its row in data/README.md."""
    path = Path(path) if path is not None else times_path()
    stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    entries = dict(stored.get("chapters", {}))
    entries.update(results)
    data = {"words_per_minute": WORDS_PER_MINUTE, "threads": THREADS,
            "how": "python tools/chapter_times.py --store",
            "chapters": dict(sorted(entries.items()))}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    readme = Path(readme) if readme is not None else path.parent / "README.md"
    blob = path.read_bytes()
    name = path.relative_to(readme.parent).as_posix()
    text = readme.read_text(encoding="utf-8")
    row = re.compile(rf"^\| `{re.escape(name)}` \| \d+ \| ([^|]+) \| `[0-9a-f]{{64}}` \|$", re.M)
    if not row.search(text):
        raise ValueError(f"{readme} has no checksum row for `{name}`: add one (see its Checksums table)")
    text = row.sub(lambda m: f"| `{name}` | {len(blob)} | {m.group(1)} | `{hashlib.sha256(blob).hexdigest()}` |",
                   text)
    readme.write_text(text, encoding="utf-8")
    return path


def patch_opening_output(ipynb: Path, chapter: str, path: Path | None = None) -> bool:
    """Write ``chapter``'s opening line as the stored output of the cell of ``ipynb`` that calls
    ``chapters.opening(``; True if it changed. A notebook without exactly one such cell is an error."""
    import nbformat

    from course_lib.chapters.opening import opening_line

    ipynb = Path(ipynb)
    nb = nbformat.read(ipynb, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "chapters.opening(" in c.source]
    if len(cells) != 1:
        raise ValueError(f"ipynb: {ipynb.name} has {len(cells)} cells calling chapters.opening(...), expected 1")
    want = [nbformat.v4.new_output("stream", name="stdout", text=opening_line(chapter, path) + "\n")]
    if cells[0].outputs == want:
        return False
    cells[0].outputs = want
    nbformat.write(nb, ipynb)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="chapters' .md files (default: every paired chapter)")
    parser.add_argument("--store", action="store_true", help="write data/chapter_times.json")
    parser.add_argument("--reading-only", action="store_true", help="count words only, execute nothing")
    args = parser.parse_args(argv)
    if args.store and args.reading_only:
        parser.error("--store needs the live seconds: drop --reading-only")
    paths = [Path(f) for f in args.files] or chapters()
    for p in paths:
        if p.suffix != ".md" or not p.is_file():
            parser.error(f"files: {p} is not a chapter's .md file")
    results, failed = {}, []
    print(f"{'chapter':<28} {'words':>6} {'read min':>8} {'live s':>7} {'CPU s':>7}")
    for p in paths:
        try:
            m = measure(p, execute=not args.reading_only)
        except Exception as err:        # a notebook that fails is reported and not stored; the rest go on
            failed.append(p.stem)
            last = re.sub(r"\x1b\[[0-9;]*m", "", (str(err).strip().splitlines() or [""])[-1])[:200]
            print(f"{p.stem:<28} FAILED: {type(err).__name__}: {last}", flush=True)
            continue
        results[p.stem] = m
        print(f"{p.stem:<28} {m['reading_words']:>6} {m['reading_minutes']:>8.1f} "
              f"{m.get('live_seconds', float('nan')):>7.1f} {m.get('live_cpu_seconds', float('nan')):>7.1f}",
              flush=True)
    if args.store and results:
        print(f"stored in {store(results).relative_to(ROOT)} (and its row in data/README.md)")
        for p in paths:
            if p.stem in results and "chapters.opening(" in p.read_text(encoding="utf-8"):
                if patch_opening_output(p.with_suffix(".ipynb"), p.stem):
                    print(f"  {p.with_suffix('.ipynb').resolve().relative_to(ROOT)}: its opening line's stored output")
    if failed:
        print(f"not measured (the notebook failed): {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
