"""Edit (Levenshtein) distance: the count behind the error rates of chapters 5 and 10.

The fewest substitutions, insertions and deletions (each costing 1) that turn one
sequence into another, by the usual dynamic programme over prefixes, one row at a
time. Chapter 5's phoneme error rate (:mod:`course_lib.labs.g2p_eval`) and chapter
10's character error rate (:mod:`course_lib.labs.speech`) both divide its sum by the
length of the references; each checks its own inputs before calling it.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["levenshtein"]


def levenshtein(a: Sequence, b: Sequence) -> int:
    """Edit distance between sequences ``a`` and ``b`` (any items comparable with ``!=``)."""
    prev = list(range(len(b) + 1))            # distances from a[:0] to every prefix of b
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]
