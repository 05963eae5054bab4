"""Edit (Levenshtein) distance: the count behind the error rates of chapters 5 and 10.

The fewest substitutions, insertions and deletions (each costing 1) that turn one
sequence into another, by the usual dynamic programme over prefixes, one row at a
time. Chapter 5's phoneme error rate (:mod:`course_lib.labs.g2p_eval`) and chapter
10's character error rate (:mod:`course_lib.labs.speech`) both divide its sum by the
length of the references; each checks its own inputs before calling it.
:func:`alignment` walks the same table back and says which edit each item took
(chapter 12 counts its errors by position with it).
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["levenshtein", "alignment"]


def levenshtein(a: Sequence, b: Sequence) -> int:
    """Edit distance between sequences ``a`` and ``b`` (any items comparable with ``!=``)."""
    prev = list(range(len(b) + 1))            # distances from a[:0] to every prefix of b
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def alignment(a: Sequence, b: Sequence) -> list[tuple[str, int | None, int | None]]:
    """One cheapest edit script from ``a`` (reference) to ``b`` (hypothesis), in order.

    Each step is ``(op, i, j)``: ``"="`` ``a[i]`` kept as ``b[j]``; ``"S"`` ``a[i]`` replaced by ``b[j]``;
    ``"D"`` ``a[i]`` deleted (``j`` None); ``"I"`` ``b[j]`` inserted (``i`` None). The number of
    ``S``, ``D`` and ``I`` steps is :func:`levenshtein`'s distance. Ties between equally cheap
    scripts are broken the same way every time: walking back from the end, a diagonal step
    (keep or substitute) first, then a deletion, then an insertion.
    """
    n, m = len(a), len(b)
    d = [[0] * (m + 1) for _ in range(n + 1)]           # d[i][j]: distance from a[:i] to b[:j]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    steps, i, j = [], n, m
    while i or j:
        if i and j and d[i][j] == d[i - 1][j - 1] + (a[i - 1] != b[j - 1]):
            steps.append(("=" if a[i - 1] == b[j - 1] else "S", i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i and d[i][j] == d[i - 1][j] + 1:
            steps.append(("D", i - 1, None))
            i -= 1
        else:
            steps.append(("I", None, j - 1))
            j -= 1
    return steps[::-1]
