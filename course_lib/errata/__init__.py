"""Where a source document's arithmetic is wrong: found by code, explained in words.

``compare`` recomputes a worked example and sets every number the source
printed beside the computed one, rounded the way the source rounds.
``ERRATA`` explains each mismatch in both languages; ``show`` renders one
erratum as a box (in the chapter), ``show_all`` renders them all (on the
errata appendix). The test suite checks that every mismatch has an erratum
and every erratum still points at a real mismatch.
"""

from __future__ import annotations

from ._core import Box, Erratum, compare, compare_grid, mismatches
from .ch02 import ERRATA as _CH02
from .ch04 import ERRATA as _CH04
from .ch06 import ERRATA as _CH06
from .ch05 import ERRATA as _CH05
from .ch07 import ERRATA as _CH07
from .ch08 import ERRATA as _CH08

__all__ = ["Erratum", "ERRATA", "compare", "compare_grid", "mismatches", "show", "show_all"]

#: Every erratum of the book, in chapter order.
ERRATA = [*_CH02, *_CH04, *_CH05, *_CH06, *_CH07, *_CH08]


def _find(key: str) -> Erratum:
    for e in ERRATA:
        if e.key == key:
            return e
    raise ValueError(f"key must be one of {[e.key for e in ERRATA]}, got {key!r}")


def show(key: str) -> Box:
    """The erratum ``key`` as a box: wrong entries, correct values, and why."""
    return Box([_find(key)], link_chapter=False)


def show_all(chapter: str | None = None) -> Box:
    """Every erratum (or those of one chapter), each linking to its chapter."""
    chosen = [e for e in ERRATA if chapter is None or e.chapter == chapter]
    if not chosen:
        raise ValueError(f"chapter must be one of {sorted({e.chapter for e in ERRATA})}, "
                         f"got {chapter!r}")
    return Box(chosen, link_chapter=True)
