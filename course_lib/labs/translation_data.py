"""Chapter 5's lab, its data: the source documents' digits-to-letters translation test.

Chapter 5 (*The full Transformer*, ``ch05_transformer``) reproduces the
source's ``test.py``: a Transformer learns to translate digit sequences into
letters (1 -> A, …, 5 -> E) with the source's vocabularies (:data:`SRC_VOCAB`,
:data:`TGT_VOCAB`, as the source prints them)::

    source: {0: <PAD>, 1: "1", …, 5: "5"}
    target: {0: <PAD>, 1: "A", …, 5: "E", 6: <SOS>, 7: <EOS>}

A digit and its letter share an id, so a target is the source plus
``<SOS>``/``<EOS>``. ``SAMPLE_RULES`` lists candidate ways to build the
source's 28 training samples; :func:`split_sequences` and :func:`unseen_groups`
give the held-out sequences, :func:`make_batch` the tensors. The vocabularies
are the source's own, not the book's ``<sos>`` = 1 convention. The model, its
training, its evaluation and the recipes are in :mod:`course_lib.labs.translation`.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import torch

from .._validate import check_choice, check_positive_int

__all__ = ["SRC_VOCAB", "TGT_VOCAB", "PAD_ID", "SOS_ID", "EOS_ID", "DIGITS", "SAMPLE_RULES", "SOURCE_RULE",
           "training_sequences", "all_sequences", "split_sequences", "unseen_groups", "make_batch",
           "expected_tokens"]

#: The source's vocabularies, as its ``test.py`` prints them.
SRC_VOCAB = {0: "<PAD>", 1: "1", 2: "2", 3: "3", 4: "4", 5: "5"}
TGT_VOCAB = {0: "<PAD>", 1: "A", 2: "B", 3: "C", 4: "D", 5: "E", 6: "<SOS>", 7: "<EOS>"}

PAD_ID, SOS_ID, EOS_ID = 0, 6, 7
DIGITS = (1, 2, 3, 4, 5)


def _all(lengths):
    return [list(t) for L in lengths for t in itertools.product(DIGITS, repeat=L)]


def _runs(lengths):
    """Ascending runs of consecutive digits, e.g. [2, 3, 4]."""
    return [list(range(a, a + L)) for L in lengths for a in DIGITS if a + L - 1 <= DIGITS[-1]]


_SINGLES = [[d] for d in DIGITS]
_DISTINCT_PAIRS = [[a, b] for a in DIGITS for b in DIGITS if a != b]

#: Candidate rules for the source's training set: name -> list of digit sequences.
SAMPLE_RULES: dict[str, list[list[int]]] = {
    "all sequences of length 1–3 · 长度 1–3 的全部序列": _all((1, 2, 3)),
    "all sequences of length 1–2 · 长度 1–2 的全部序列": _all((1, 2)),
    "increasing, length 1–3 (subsets) · 严格递增，长度 1–3": [
        list(c) for L in (1, 2, 3) for c in itertools.combinations(DIGITS, L)],
    "non-decreasing, length 1–2 · 非递减，长度 1–2": [
        list(c) for L in (1, 2) for c in itertools.combinations_with_replacement(DIGITS, L)],
    "consecutive runs, length 1–3 · 连续递增串，长度 1–3": _runs((1, 2, 3)),
    "consecutive runs, length 1–5 · 连续递增串，长度 1–5": _runs((1, 2, 3, 4, 5)),
    "singles + distinct pairs · 单个 + 不同数字对": _SINGLES + _DISTINCT_PAIRS,
    "all pairs + runs of 3 · 全部数字对 + 三连串": _all((2,)) + _runs((3,)),
    "singles + distinct pairs + runs of 3 · 单个 + 不同数字对 + 三连串":
        _SINGLES + _DISTINCT_PAIRS + _runs((3,)),
}

#: The rule the book adopts for the source's 28 samples (chapter 5 explains why).
SOURCE_RULE = "singles + distinct pairs + runs of 3 · 单个 + 不同数字对 + 三连串"


def training_sequences(rule: str = SOURCE_RULE) -> list[list[int]]:
    """The digit sequences of one of ``SAMPLE_RULES`` (default: the book's choice, 28)."""
    check_choice(rule, "rule", SAMPLE_RULES)
    return [list(s) for s in SAMPLE_RULES[rule]]


def all_sequences(lengths) -> list[list[int]]:
    """Every digit sequence (digits 1–5) whose length is in ``lengths``."""
    if isinstance(lengths, int) or not all(isinstance(L, int) and L >= 1 for L in lengths):
        raise TypeError(f"lengths must be a list of positive integers, got {lengths!r}")
    return _all(lengths)


def split_sequences(lengths, held_out: float, seed: int = 0):
    """Split :func:`all_sequences` into ``(train, held)``, stratified by length.

    For each length in turn, its sequences are shuffled (one seeded
    generator for all lengths) and ``round(held_out · count)`` of them are
    held out, so every length keeps most of its sequences in training.

    Args:
        lengths: sequence lengths to include, e.g. ``(1, 2, 3, 4)``.
        held_out: fraction in ``(0, 1)`` kept out of training.
        seed: seed of the shuffle.
    """
    if not isinstance(held_out, float) or not 0 < held_out < 1:
        raise ValueError(f"held_out must be a fraction in (0, 1), got {held_out!r}")
    all_sequences(lengths)                                   # validates lengths
    gen = torch.Generator().manual_seed(check_positive_int(seed, "seed", minimum=0))
    train, held = [], []
    for L in lengths:
        seqs = _all((L,))
        order = torch.randperm(len(seqs), generator=gen).tolist()
        k = round(held_out * len(seqs))
        held += [seqs[i] for i in order[:k]]
        train += [seqs[i] for i in order[k:]]
    return train, held


def make_batch(seqs: Sequence[Sequence[int]]):
    """Right-padded tensors for teacher forcing.

    Args:
        seqs: non-empty list of digit sequences (ids 1–5).

    Returns:
        ``(src, tgt_in, tgt_out)``: ``src`` ``(B, L)`` digits padded with 0;
        ``tgt_in`` ``(B, L + 1)`` = ``<SOS> y_1 … y_n``; ``tgt_out``
        ``(B, L + 1)`` = ``y_1 … y_n <EOS>`` (``L`` = longest sequence).
    """
    if isinstance(seqs, (str, bytes)) or not isinstance(seqs, Sequence) or len(seqs) == 0:
        raise TypeError("seqs must be a non-empty list of digit sequences, e.g. [[3, 4], [5]]")
    rows = []
    for i, s in enumerate(seqs):
        s = [int(d) for d in s] if isinstance(s, Sequence) else None
        if not s or any(d not in DIGITS for d in s):
            raise ValueError(f"seqs[{i}] must be a non-empty sequence of digits 1–5, got {seqs[i]!r}")
        rows.append(s)
    L = max(map(len, rows))

    def pad(r, n):
        return r + [PAD_ID] * (n - len(r))
    src = torch.tensor([pad(r, L) for r in rows])
    tgt_in = torch.tensor([pad([SOS_ID] + r, L + 1) for r in rows])
    tgt_out = torch.tensor([pad(r + [EOS_ID], L + 1) for r in rows])
    return src, tgt_in, tgt_out


def expected_tokens(seq: Sequence[int]) -> list[str]:
    """The correct translation of ``seq`` as tokens: ``<SOS>``, letters, ``<EOS>``."""
    vocab = TGT_VOCAB
    return [vocab[SOS_ID]] + [vocab[d] for d in seq] + [vocab[EOS_ID]]


def unseen_groups(train: Sequence[Sequence[int]] | None = None) -> dict[str, list[list[int]]]:
    """The sequences of length 1–3 that a model trained on ``train`` (default: the
    book's reconstruction of the source's 28 samples) never saw, by kind: ``"repeated_pairs"`` (``[1, 1]``, …)
    and ``"other_len3"``; every single digit is a training sample."""
    seen = {tuple(s) for s in (training_sequences() if train is None else train)}
    unseen = [s for s in all_sequences((1, 2, 3)) if tuple(s) not in seen]
    return {"repeated_pairs": [s for s in unseen if len(s) == 2],
            "other_len3": [s for s in unseen if len(s) == 3]}
