"""Chapter 5's G2P task, its metrics and its error groups.

- :func:`edit_distance`: Levenshtein distance between two phoneme sequences
  (substitution, insertion and deletion each cost 1).
- :func:`score`: phoneme error rate (PER) and word error rate (WER) against
  *every* listed pronunciation of a word, the usual convention for CMUdict:
  a prediction is right if it equals any of them. PER sums, over the words,
  the edit distance to the closest reference, divided by the summed lengths
  of those closest references.
- :func:`word_group`: which group a held-out word belongs to when chapter 5
  sorts its errors (homographs, common words, foreign-looking spellings, the rest).
- :data:`PUBLISHED`: published CMUdict figures the chapter quotes; :data:`PUBLISHED_RANGE`: a later
  paper's summary of them, which names the Transformer G2P of Yolchuyeva et al. (2019).
"""

from __future__ import annotations

import re
from typing import Sequence

from ..analysis.edit import levenshtein

__all__ = ["edit_distance", "closest", "score", "FOREIGN_SPELLING", "GROUPS", "word_group", "PUBLISHED",
           "PUBLISHED_RANGE"]


def _check_seq(x, name: str) -> tuple:
    if isinstance(x, str) or not isinstance(x, Sequence):
        raise TypeError(f"{name} must be a sequence of phonemes (e.g. a tuple of strings), got {x!r}")
    return tuple(x)


def edit_distance(a, b) -> int:
    """Fewest substitutions, insertions and deletions turning sequence ``a`` into ``b`` (chapter 5)."""
    return levenshtein(_check_seq(a, "a"), _check_seq(b, "b"))


def closest(prediction, references) -> tuple[int, int]:
    """``(distance, length)`` of the reference closest to ``prediction`` (the first listed one on a tie)."""
    prediction = _check_seq(prediction, "prediction")
    if isinstance(references, str) or not isinstance(references, Sequence) or not references:
        raise TypeError(f"references must be a non-empty list of pronunciations, got {references!r}")
    best = min(((edit_distance(prediction, r), i) for i, r in enumerate(references)))
    return best[0], len(references[best[1]])


def score(predictions, references) -> dict[str, float]:
    """PER and WER of predicted pronunciations (chapter 5).

    Args:
        predictions: one predicted phoneme sequence per word.
        references: per word, the list of its listed pronunciations.

    Returns:
        ``{"per": Σ distance / Σ length, "wer": share of words whose prediction
        equals none of their references}``, both against each word's closest
        reference.
    """
    if isinstance(predictions, str) or not isinstance(predictions, Sequence) or not predictions:
        raise TypeError("predictions must be a non-empty list of phoneme sequences")
    if isinstance(references, str) or not isinstance(references, Sequence) or len(references) != len(predictions):
        raise ValueError(f"references must hold one list of pronunciations per prediction ({len(predictions)})")
    errors = length = wrong = 0
    for p, refs in zip(predictions, references):
        d, n = closest(p, refs)
        errors, length, wrong = errors + d, length + n, wrong + (d > 0)
    return {"per": errors / length, "wer": wrong / len(predictions)}


#: Letter patterns rare in native English spelling and common in words taken from other
#: languages (Italian -ini, -etti; Slavic -ski, -sky, -vich, cz; German sch, -stein, -mann;
#: Dutch ij, aa; Spanish -ez …). A rule to sort errors by, not a test of etymology.
FOREIGN_SPELLING = re.compile(r"(sch|cz|zz|ij|aa|ii|uu|kk|tz|zh|ae|oe|^x|ski$|sky$|vich$|ez$|ini$|elli$|etti$"
                              r"|ov$|ova$|enko$|escu$|stein$|mann$|berg$|eau$|ux$)")

#: The groups of :func:`word_group`, in the order a word is tested for them.
GROUPS = ("homograph", "common word", "foreign spelling", "other")


def word_group(word: str, n_pronunciations: int, common: set) -> str:
    """The group of a held-out word (chapter 5), the first that applies:

    ``"homograph"`` — the dictionary lists several pronunciations;
    ``"common word"`` — it occurs in lower case in Shakespeare's First Folio (``common``);
    ``"foreign spelling"`` — it matches :data:`FOREIGN_SPELLING`;
    ``"other"`` — the rest: rare words and, mostly, names (CMUdict lists tens of thousands of surnames).
    """
    if not isinstance(word, str) or not word:
        raise TypeError(f"word must be a non-empty string, got {word!r}")
    if isinstance(n_pronunciations, bool) or not isinstance(n_pronunciations, int) or n_pronunciations < 1:
        raise ValueError(f"n_pronunciations must be an int >= 1, got {n_pronunciations!r}")
    if not isinstance(common, (set, frozenset)):
        raise TypeError(f"common must be a set of words, got {type(common).__name__}")
    if n_pronunciations > 1:
        return "homograph"
    if word in common:
        return "common word"
    return "foreign spelling" if FOREIGN_SPELLING.search(word) else "other"


#: Published CMUdict G2P results, quoted (percent, as printed) with where they were read.
#: Each entry: system, PER (None where the source gives none), WER, citation.
PUBLISHED = [
    {"system": "encoder-decoder LSTM with alignment (Yao & Zweig 2015)", "per": "5.45", "wer": "23.55",
     "cite": "K. Yao, G. Zweig, Sequence-to-sequence neural net models for grapheme-to-phoneme conversion, "
             "Interspeech 2015 (arXiv 1506.00196); figures as quoted in github.com/lifefeel/Grapheme-to-Phoneme"},
    {"system": "deep bidirectional LSTM with many-to-many alignments (2016)", "per": "5.37", "wer": "23.23",
     "cite": "Deep bidirectional long short-term memory recurrent neural networks for grapheme-to-phoneme "
             "conversion utilizing complex many-to-many alignments, Interspeech 2016; figures as quoted in "
             "github.com/lifefeel/Grapheme-to-Phoneme"},
    {"system": "deep bidirectional LSTM with a CTC layer (Rao et al. 2015)", "per": None, "wer": "25.8",
     "cite": "Grapheme-to-phoneme conversion using long short-term memory recurrent neural networks, ICASSP 2015 "
             "(IEEE document 7178767); figure from the paper's abstract (it gives no PER)"},
    {"system": "the same combined with a joint n-gram model (Rao et al. 2015)", "per": None, "wer": "21.3",
     "cite": "the same paper's abstract"},
]

#: How a later paper sums up published CMUdict word error rates, the Transformer G2P of Yolchuyeva,
#: Németh and Gyires-Tóth (Interspeech 2019) among them, quoted as printed: the Transformer paper's own
#: tables could not be read here, so chapter 5 quotes this summary instead of typing figures from memory.
PUBLISHED_RANGE = {"wer_low": "20", "wer_high": "30",
                   "cite": "M. Řezáčková, J. Švec, D. Tihelka, T5G2P: Using Text-to-Text Transfer Transformer for "
                           "Grapheme-to-Phoneme Conversion, Interspeech 2021, section 4: \"in recent years, the "
                           "published results range between 20% and 30% word error rate\" (citing Yolchuyeva et al. 2019)",
                   "yolchuyeva": "S. Yolchuyeva, G. Németh, B. Gyires-Tóth, Transformer based grapheme-to-phoneme "
                                 "conversion, Interspeech 2019, pp. 2095–2099 (arXiv 2004.06338)"}
