"""A chapter's opening line: its reading time and the time its live cells take, from measurements.

``tools/chapter_times.py --store`` measures each paired chapter (English prose words at
:data:`WORDS_PER_MINUTE`; the notebook executed in a fresh kernel on 2 threads) and writes
``data/chapter_times.json``. A chapter opens with a hide-input cell::

    chapters.opening("ch02_worked_qkv")

which prints one bilingual line, e.g. ::

    Reading time ≈ 35 min · live cells ≈ 40 s of CPU time (2 threads, measured 2026-11-29) · 阅读约 35 分钟 · 现场单元格约 40 秒 CPU 时间（2 线程，2026-11-29 测）

The live cells' time is the CPU time of the notebook's kernel (all its threads), which another program
on the same machine barely changes; the wall-clock time on 2 free cores is about the same or less.

Nothing is typed: a chapter that is not in the file is an error that names it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..data import data_dir

__all__ = ["WORDS_PER_MINUTE", "times_path", "chapter_times", "opening_line", "opening"]

#: Reading speed, English prose words per minute (a declared definition, not a measurement).
WORDS_PER_MINUTE = 200


def times_path() -> Path:
    """``data/chapter_times.json``."""
    return data_dir() / "chapter_times.json"


def chapter_times(chapter: str, path=None) -> dict:
    """The stored measurement of ``chapter`` (its file name without ``.md``, e.g. ``"ch02_worked_qkv"``,
    or just ``"ch02"`` when one chapter starts so) from ``path`` (default :func:`times_path`)."""
    if not isinstance(chapter, str) or not re.fullmatch(r"ch\d\d(_\w+)?", chapter):
        raise ValueError(f"chapter must be a chapter's name such as 'ch02_worked_qkv' or 'ch02', got {chapter!r}")
    path = Path(path) if path is not None else times_path()
    if not path.is_file():
        raise FileNotFoundError(f"no chapter times at {path}: run `python tools/chapter_times.py --store`")
    stored = json.loads(path.read_text(encoding="utf-8")).get("chapters", {})
    if chapter in stored:
        return stored[chapter]
    matches = [k for k in stored if k.split("_", 1)[0] == chapter]
    if len(matches) == 1:
        return stored[matches[0]]
    raise KeyError(f"chapter {chapter!r} is not in {path.name} (it has {sorted(stored)}): measure it with "
                   f"`python tools/chapter_times.py --store book/{chapter}.md`")


def opening_line(chapter: str, path=None) -> str:
    """The bilingual opening line of ``chapter`` (see the module docstring)."""
    t = chapter_times(chapter, path)
    try:
        minutes = max(1, round(t["reading_minutes"]))
        seconds = max(1, round(t["live_cpu_seconds"]))
        threads, date = int(t["threads"]), str(t["date"])     # the notebook ran on this many threads
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"chapter {chapter!r}: its entry needs reading_minutes, live_cpu_seconds, threads and "
                         f"date, got {t!r}") from err
    return (f"Reading time ≈ {minutes} min · live cells ≈ {seconds} s of CPU time ({threads} threads, "
            f"measured {date}) · 阅读约 {minutes} 分钟 · 现场单元格约 {seconds} 秒 CPU 时间（{threads} 线程，{date} 测）")


def opening(chapter: str, path=None) -> None:
    """Print ``chapter``'s opening line (:func:`opening_line`): the first cell of a chapter calls it."""
    print(opening_line(chapter, path))
