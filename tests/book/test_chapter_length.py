"""Each chapter is finishable in one sitting: its source has about 1,600 lines at most (MAX_LINES, 1,700,
leaves a chapter room for a few folded check cells above that).

A chapter that grows past it is split (as chapter 7 was, into BERT, GPT and training a language
model well) or cut where it repeats a point its output already makes (CONTRIBUTING, "Writing a chapter").
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 1700
CHAPTERS = sorted((ROOT / "book").glob("ch[0-9][0-9]_*.md"))


def too_long(text: str, limit: int = MAX_LINES) -> bool:
    """True when a chapter's source has more than ``limit`` lines."""
    return len(text.splitlines()) > limit


def test_there_are_twelve_chapters():
    assert [p.stem[:4] for p in CHAPTERS] == [f"ch{i:02d}" for i in range(1, 13)]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_fits_one_sitting(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.stem}: {n} lines, more than {MAX_LINES}: split it or cut what repeats itself"


def test_the_rule_counts_lines():
    assert not too_long("line\n" * MAX_LINES)
    assert too_long("line\n" * (MAX_LINES + 1))          # a planted over-long chapter
    assert too_long("a\nb\nc\n", limit=2) and not too_long("a\nb\n", limit=2)
