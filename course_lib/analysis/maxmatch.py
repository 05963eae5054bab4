"""Dictionary maximum matching: the classic word segmenter without learning (chapter 7).

Chapter 7 (``ch07_bert``, section *Word segmentation with an encoder*)
segments People's Daily clauses with a BERT-style tagger and compares it with
this baseline. The dictionary is the set of words of the training clauses
(:func:`build_dictionary`); the longest word is the longest the data has.

- **Forward** (:func:`forward_max_match`): from the left, take the longest
  dictionary word that starts here (a single character if none does), repeat.
- **Backward** (:func:`backward_max_match`): the same from the right, taking
  the longest dictionary word that ends here.
- **Bidirectional** (:func:`bidirectional_max_match`): run both and keep the
  segmentation with fewer words; on a tie, the one with fewer single-character
  words; on a second tie, the backward one (the usual rule, e.g. Sun & Zou 2001,
  since backward matching errs less often on Chinese).

So ``研究生命起源`` with the words ``研究 研究生 生命 命 起源``: forward gives
``研究生 / 命 / 起源``, backward ``研究 / 生命 / 起源``.
"""

from __future__ import annotations

from typing import Iterable

from .._validate import check_positive_int

__all__ = ["build_dictionary", "forward_max_match", "backward_max_match", "bidirectional_max_match",
           "MATCHERS"]


def build_dictionary(clauses: Iterable) -> tuple[frozenset, int]:
    """The words of ``clauses`` (lists of words) and the length of the longest one (chapter 7).

    Returns:
        ``(words, max_len)``: a frozenset of strings and an int.
    """
    if isinstance(clauses, (str, bytes)):
        raise TypeError("clauses must be an iterable of clauses (lists of words), got a string")
    words = set()
    for i, clause in enumerate(clauses):
        if isinstance(clause, str) or not clause or not all(isinstance(w, str) and w for w in clause):
            raise ValueError(f"clauses[{i}] must be a non-empty list of non-empty strings, got {clause!r}")
        words.update(clause)
    if not words:
        raise ValueError("clauses must hold at least one clause")
    return frozenset(words), max(map(len, words))


def _check(text, dictionary, max_len):
    if not isinstance(text, str) or not text:
        raise TypeError(f"text must be a non-empty string, got {text!r}")
    if not isinstance(dictionary, (set, frozenset)):
        raise TypeError(f"dictionary must be a set of words, got {type(dictionary).__name__}")
    return check_positive_int(max_len, "max_len")


def forward_max_match(text: str, dictionary, max_len: int) -> list[str]:
    """Forward maximum matching: the longest dictionary word from the left, repeatedly (chapter 7).

    Args:
        text: the characters to segment.
        dictionary: a set of words.
        max_len: the longest word length tried (from :func:`build_dictionary`).

    Returns:
        The words, in order; ``"".join(words) == text``.
    """
    max_len = _check(text, dictionary, max_len)
    words, i = [], 0
    while i < len(text):
        n = next((n for n in range(min(max_len, len(text) - i), 1, -1) if text[i:i + n] in dictionary), 1)
        words.append(text[i:i + n])
        i += n
    return words


def backward_max_match(text: str, dictionary, max_len: int) -> list[str]:
    """Backward maximum matching: the longest dictionary word ending at the right, repeatedly (chapter 7).

    Arguments and result as for :func:`forward_max_match`.
    """
    max_len = _check(text, dictionary, max_len)
    words, j = [], len(text)
    while j > 0:
        n = next((n for n in range(min(max_len, j), 1, -1) if text[j - n:j] in dictionary), 1)
        words.append(text[j - n:j])
        j -= n
    return words[::-1]


def bidirectional_max_match(text: str, dictionary, max_len: int) -> list[str]:
    """Both directions; keep fewer words, then fewer single characters, then backward (chapter 7).

    Arguments and result as for :func:`forward_max_match`.
    """
    fwd = forward_max_match(text, dictionary, max_len)
    bwd = backward_max_match(text, dictionary, max_len)
    if len(fwd) != len(bwd):
        return fwd if len(fwd) < len(bwd) else bwd
    singles_f, singles_b = (sum(len(w) == 1 for w in s) for s in (fwd, bwd))
    return fwd if singles_f < singles_b else bwd


#: The three matchers by name, in the order the chapter's table shows them.
MATCHERS = {"forward": forward_max_match, "backward": backward_max_match,
            "bidirectional": bidirectional_max_match}
