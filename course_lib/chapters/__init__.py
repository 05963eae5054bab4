"""Each chapter's bookkeeping, one folder per chapter, and the chapter-agnostic API.

``chNN/`` holds what exists among:

- ``source.py``: the source documents' printed numbers (``Claim``) and
  verbatim code, in one home;
- ``worked.py``: those worked examples recomputed step by step (``EXAMPLES``);
- ``errata.py``: where the source is wrong, explained (``ERRATA``);
- ``exercises.py``: the checkers of the chapter's exercises.

Shared machinery: ``_claims.py`` (``Claim``, ``SOURCES``), ``_errata.py``
(``Erratum``, ``compare``, …) and ``_check.py`` (the checker core).

The registries are collected from the chapter folders automatically (a new
``chNN/`` is found without editing this file) on first use::

    EXAMPLES   name -> (steps function, source data), every chapter's worked examples
    ERRATA     every erratum, in chapter order
    CHECKERS   "chNN.check_x" -> checker, every chapter's exercise checkers

Notebooks import a chapter's modules directly, one style for all chapters::

    from course_lib import chapters                      # chapters.show("ch02-context"), chapters.compare(...)
    from course_lib.chapters.ch02 import exercises as ex # ex.check_softmax(my_softmax)
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re

from ._claims import SOURCES, Claim
from ._errata import Box, Erratum, compare, compare_grid, mismatches
from .opening import opening  # chapters.opening("ch02_worked_qkv"): the line a chapter opens with

__all__ = ["CHAPTERS", "EXAMPLES", "ERRATA", "CHECKERS", "SOURCES", "Claim", "Erratum", "Box",
           "compare", "compare_grid", "mismatches", "show", "show_all", "chapter_module", "opening"]

#: The chapter folders, in order: ``("ch01", "ch02", …)``.
CHAPTERS = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                        if m.ispkg and re.fullmatch(r"ch\d\d", m.name)))


def chapter_module(chapter: str, kind: str):
    """``course_lib.chapters.<chapter>.<kind>`` (e.g. ``("ch02", "errata")``), or None if absent."""
    if chapter not in CHAPTERS:
        raise ValueError(f"chapter must be one of {list(CHAPTERS)}, got {chapter!r}")
    if kind not in ("source", "worked", "errata", "exercises"):
        raise ValueError(f"kind must be 'source', 'worked', 'errata' or 'exercises', got {kind!r}")
    if importlib.util.find_spec(f"{__name__}.{chapter}.{kind}") is None:
        return None
    return importlib.import_module(f"{__name__}.{chapter}.{kind}")


def _collect(name: str):
    if name == "EXAMPLES":
        out = {}
        for ch in CHAPTERS:
            mod = chapter_module(ch, "worked")
            if mod is not None:
                clash = set(out) & set(mod.EXAMPLES)
                if clash:
                    raise RuntimeError(f"{ch}/worked.py reuses example names {sorted(clash)}")
                out.update(mod.EXAMPLES)
        return out
    if name == "ERRATA":
        return [e for ch in CHAPTERS if (mod := chapter_module(ch, "errata")) for e in mod.ERRATA]
    if name == "CHECKERS":
        return {f"{ch}.{n}": getattr(mod, n) for ch in CHAPTERS
                if (mod := chapter_module(ch, "exercises")) for n in mod.__all__ if n.startswith("check_")}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __getattr__(name: str):
    # The registries import every chapter (and so torch): built on first use, then kept.
    value = _collect(name)
    globals()[name] = value
    return value


def _all_errata() -> list:
    return globals()["ERRATA"] if "ERRATA" in globals() else __getattr__("ERRATA")


def _find(key: str) -> Erratum:
    errata = _all_errata()
    for e in errata:
        if e.key == key:
            return e
    raise ValueError(f"key must be one of {[e.key for e in errata]}, got {key!r}")


def show(key: str) -> Box:
    """The erratum ``key`` as a box: wrong entries, correct values, and why."""
    return Box([_find(key)], link_chapter=False)


def show_all(chapter: str | None = None) -> Box:
    """Every erratum (or those of one chapter, e.g. ``"book/ch02_worked_qkv"``), each linking to its chapter."""
    errata = _all_errata()
    chosen = [e for e in errata if chapter is None or e.chapter == chapter]
    if not chosen:
        raise ValueError(f"chapter must be one of {sorted({e.chapter for e in errata})}, "
                         f"got {chapter!r}")
    return Box(chosen, link_chapter=True)
