"""Why long digit strings fail (chapter 12): errors by string length, by position and by kind.

Each reference string is aligned with its transcript by the edit distance's cheapest script
(:func:`course_lib.analysis.edit.alignment`)::

    said   3 1 4 1          said   3 1 4 1          said   3 1 4 1
    heard  3 1 4 4          heard  3 4 1            heard  3 1 4 1 1
           = = = S                 = D = =                 = = = = I

A reference digit is *right* when the script keeps it (``=``); :func:`position_errors` counts,
for the strings of one length, what happened at each of their positions, and where insertions
fell (after how many reference digits). :func:`compounding` sets the observed sequence accuracy
beside what independent errors would give: the product of the per-position accuracies.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_positive_int
from ..analysis.edit import alignment

__all__ = ["position_errors", "compounding", "error_totals"]


def _pairs(refs, hyps):
    refs, hyps = [str(r) for r in refs], [str(h) for h in hyps]
    if len(refs) != len(hyps) or not refs:
        raise ValueError(f"refs and hyps must be non-empty and of equal length, got {len(refs)} and {len(hyps)}")
    if not all(r.isdigit() for r in refs):
        raise ValueError("refs must be non-empty digit strings")
    return refs, hyps


def position_errors(refs, hyps, length: int) -> dict:
    """Counts over the references of ``length`` digits (chapter 12).

    Args:
        refs, hyps: digit strings said and written, one each per utterance.
        length: which references to count.

    Returns:
        ``{"n": strings, "right", "sub", "del": (length,) int arrays, one per reference position,
        "ins": (length + 1,) int array, insertions after 0 … length reference digits}``.
    """
    refs, hyps = _pairs(refs, hyps)
    length = check_positive_int(length, "length")
    out = {"n": 0, "right": np.zeros(length, int), "sub": np.zeros(length, int), "del": np.zeros(length, int),
           "ins": np.zeros(length + 1, int)}
    key = {"=": "right", "S": "sub", "D": "del"}
    for r, h in zip(refs, hyps):
        if len(r) != length:
            continue
        out["n"] += 1
        consumed = 0
        for op, i, _ in alignment(r, h):
            if op == "I":
                out["ins"][consumed] += 1
            else:
                out[key[op]][i] += 1
                consumed = i + 1
    if not out["n"]:
        raise ValueError(f"no reference has length {length}")
    return out


def compounding(refs, hyps, length: int) -> dict:
    """Observed sequence accuracy of the ``length``-digit strings against independent errors (chapter 12).

    Returns:
        ``{"n", "position_acc": (length,) fraction kept right at each position, "digit_acc": all
        positions pooled, "independent": product of position_acc, "observed": fraction of strings
        written exactly, "ratio": observed / independent}``. Under independent errors, and no
        insertions, ``observed`` would be near ``independent``; far below it, errors come together.
    """
    counts = position_errors(refs, hyps, length)
    refs, hyps = _pairs(refs, hyps)
    n = counts["n"]
    pos = counts["right"] / n
    observed = float(np.mean([r == h for r, h in zip(refs, hyps) if len(r) == length]))
    independent = float(np.prod(pos))
    return {"n": n, "position_acc": pos, "digit_acc": float(counts["right"].sum() / (n * length)),
            "independent": independent, "observed": observed,
            "ratio": observed / independent if independent else float("nan")}


def error_totals(refs, hyps) -> dict:
    """``{"sub", "del", "ins", "ref_digits"}`` summed over all pairs; ``(sub + del + ins) / ref_digits`` is the CER."""
    refs, hyps = _pairs(refs, hyps)
    tot = {"sub": 0, "del": 0, "ins": 0, "ref_digits": sum(len(r) for r in refs)}
    name = {"S": "sub", "D": "del", "I": "ins"}
    for r, h in zip(refs, hyps):
        for op, _, _ in alignment(r, h):
            if op in name:
                tot[name[op]] += 1
    return tot
