"""The verdict on one code listing of the source documents (appendix "Source listings").

``Listing`` and its ``VERDICTS``: the registry ``listings_data.LISTINGS`` is built
from them, and ``listings`` reads it (coverage, running, the appendix's table).
Its own module so that the registry and the code reading it import it, not each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._claims import SOURCES

__all__ = ["VERDICTS", "Listing"]

VERDICTS = {
    "ok": "runs and is right ✓ · 可运行且正确",
    "erratum": "erratum · 勘误",
    "diagram": "diagram · 图示",
    "output": "output log · 输出日志",
    "not-runnable": "not runnable · 无法直接运行",
}


@dataclass(frozen=True)
class Listing:
    """The verdict on one fenced block: ``(source, index)`` as in the snapshot.

    ``where``: book locations, ``"book/<file>.md"`` or ``"book/<file>.md#<anchor>"``,
    where the anchor is a MyST label ``(anchor)=`` or text of a heading in that file.
    """

    source: str
    index: int
    verdict: str
    where: tuple = ()
    errata: tuple = ()
    evidence: str = ""
    note_en: str = ""
    note_zh: str = ""

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {sorted(SOURCES)}, got {self.source!r}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {list(VERDICTS)}, got {self.verdict!r}")
