"""Chapter 7's genre task (``ch07_bert``): which kind of play is a passage of Shakespeare from?

The First Folio (1623), the first collected edition of Shakespeare's plays,
sorts its 36 plays into *Comedies*, *Histories* and *Tragedies*. That
classification, by the Folio's own catalogue, is :data:`FOLIO_GENRES`. The
texts are the ``shakespeare`` package's Project Gutenberg editions (modern
spelling, public domain), read through :func:`course_lib.corpora.folio_play`
with their SHA-256 checked.

A *passage* is two consecutive lines of one speech (speaker names and stage
directions removed), at least :data:`MIN_WORDS` words long. The split holds
out **whole plays** (:data:`HELD_OUT`): no line of a test play is seen in
training, so a model cannot pass the test by remembering a play's character
names or plot. The two held-out histories (*King John*, *Henry VIII*) are the
ones whose persons do not recur in another play; the sequels (*Henry IV*,
*Henry VI*, *Richard III*) share theirs. Each side is balanced:
:data:`PER_GENRE` passages per genre, drawn with a seeded NumPy generator, so
the majority-class rate is one third. :func:`scores` (accuracy, macro-F1),
:func:`confusion` and the bag-of-words baseline :func:`tfidf_baseline`
measure any model on it (:mod:`course_lib.labs.finetune` trains MiniLM on it)::

    36 Gutenberg texts -> speeches -> 2-line passages -> 28 training plays | 8 held-out plays
                                                         1000 per genre    |  60 per genre
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import corpora

__all__ = ["GENRES", "FOLIO_GENRES", "HELD_OUT", "PER_GENRE", "MIN_WORDS", "LINES_PER_PASSAGE",
           "FolioData", "speeches", "passages", "load_folio", "confusion", "scores", "tfidf_baseline"]

GENRES = ("comedy", "history", "tragedy")
"""The three classes, in label order (label 0, 1, 2)."""

FOLIO_GENRES = {
    # Comedies, in the Folio's order
    "tempest": "comedy", "two_gentlemen_of_verona": "comedy", "merry_wives_of_windsor": "comedy",
    "measure_for_measure": "comedy", "comedy_of_errors": "comedy", "much_ado_about_nothing": "comedy",
    "loves_labours_lost": "comedy", "midsummer_nights_dream": "comedy", "merchant_of_venice": "comedy",
    "as_you_like_it": "comedy", "taming_of_the_shrew": "comedy", "alls_well_that_ends_well": "comedy",
    "twelfth_night": "comedy", "winters_tale": "comedy",
    # Histories
    "john": "history", "richard_ii": "history", "henry_iv_part_1": "history", "henry_iv_part_2": "history",
    "henry_v": "history", "henry_vi_part_1": "history", "henry_vi_part_2": "history",
    "henry_vi_part_3": "history", "richard_iii": "history", "henry_viii": "history",
    # Tragedies (Troilus and Cressida is missing from the catalogue but printed, as
    # "The Tragedie of Troylus and Cressida", at the head of the Tragedies)
    "troilus_and_cressida": "tragedy", "coriolanus": "tragedy", "tragedy_of_titus_andronicus": "tragedy",
    "romeo_and_juliet": "tragedy", "timon_of_athens": "tragedy", "julius_caesar": "tragedy",
    "macbeth": "tragedy", "hamlet": "tragedy", "lear": "tragedy", "othello": "tragedy",
    "antony_and_cleopatra": "tragedy", "cymbeline": "tragedy",
}
"""The genre of each of the 36 plays in the First Folio (1623), keyed by the file stem of
:data:`course_lib.corpora.FOLIO_SHA256`: 14 comedies, 10 histories, 12 tragedies."""

HELD_OUT = ("twelfth_night", "much_ado_about_nothing", "midsummer_nights_dream",   # comedies
            "john", "henry_viii",                                                  # histories
            "hamlet", "macbeth", "othello")                                        # tragedies
"""The plays of the test side; every other play of :data:`FOLIO_GENRES` is training."""

PER_GENRE = {"train": 1000, "test": 60}
"""Passages drawn per genre on each side."""
MIN_WORDS = 8
"""Shorter passages ("Ay, my lord. / Good night.") say too little and are dropped."""
LINES_PER_PASSAGE = 2

_SPEAKER = re.compile(r"^(?:[A-Z][A-Za-z'\-]*(?: [A-Za-z'\-]+){0,3}\.|[A-Z][A-Z'\- ]{1,30})$")  # "Ber.", "SIR TOBY."
_ACT_ONE = re.compile(r"^ *ACT[ .]+(I|1|FIRST)\b.*$", re.M | re.I)      # the play starts; the cast list is over
_DIRECTION = re.compile(r"\[[^\]]*\]?")                                 # "[Exit.]", "[Aside]"


def speeches(text: str) -> list[list[str]]:
    """The speeches of a play: for each, its lines without the speaker and stage directions.

    Reading starts at the first ``ACT I`` heading (the cast list and any
    prologue before it are skipped). A speech is a block of lines between
    blank lines whose first line is a speaker tag (``"HAMLET."``, ``"Ber."``,
    ``"THESEUS"``); bracketed directions are cut, lines in capitals
    (``"ACT II."``) and empty lines are dropped.

    Raises:
        TypeError: ``text`` is not a string.
        ValueError: ``text`` has no ``ACT I`` heading.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    start = _ACT_ONE.search(text)
    if start is None:
        raise ValueError("text must be a play with an 'ACT I' heading (as the Gutenberg texts have)")
    out = []
    for block in re.split(r"\n\s*\n", text[start.end():]):
        lines = [ln.strip() for ln in block.strip("\n").split("\n")]
        if len(lines) < 2 or not _SPEAKER.match(lines[0]):
            continue
        body = [_DIRECTION.sub("", ln).strip() for ln in lines[1:]]
        body = [ln for ln in body if ln and not ln.isupper() and not ln.startswith("]")]
        if body:
            out.append(body)
    return out


def passages(text: str, lines: int = LINES_PER_PASSAGE, min_words: int = MIN_WORDS) -> list[str]:
    """Non-overlapping runs of ``lines`` consecutive lines of one speech, joined by a space.

    Runs with fewer than ``min_words`` words are dropped, and so is the
    shorter remainder at the end of a speech.
    """
    for name, value in (("lines", lines), ("min_words", min_words)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    out = []
    for speech in speeches(text):
        for i in range(0, len(speech) - lines + 1, lines):
            passage = " ".join(speech[i:i + lines])
            if len(passage.split()) >= min_words:
                out.append(passage)
    return out


@dataclass
class FolioData:
    """The genre task's two sides. ``texts`` are passages, ``labels`` indices into
    :data:`GENRES`, ``plays`` the file stem each passage comes from."""

    train_texts: list
    train_labels: np.ndarray
    train_plays: list
    test_texts: list
    test_labels: np.ndarray
    test_plays: list


def load_folio(seed: int = 0) -> FolioData:
    """The balanced, play-held-out genre task (chapter 7).

    For each side and genre, all passages of that side's plays are pooled and
    :data:`PER_GENRE` of them drawn without replacement by
    ``np.random.default_rng(seed)``; the training side is then shuffled.

    Returns:
        :class:`FolioData`: 3000 training and 180 test passages, labels ``(N,)`` int64.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.default_rng(seed)
    sides = {}
    for side in ("train", "test"):
        texts, labels, plays = [], [], []
        for label, genre in enumerate(GENRES):
            pool = [(p, play) for play, g in FOLIO_GENRES.items() if g == genre
                    and (play in HELD_OUT) == (side == "test") for p in passages(corpora.folio_play(play))]
            pick = rng.choice(len(pool), PER_GENRE[side], replace=False)
            texts += [pool[i][0] for i in pick]
            plays += [pool[i][1] for i in pick]
            labels += [label] * len(pick)
        order = rng.permutation(len(texts)) if side == "train" else np.arange(len(texts))
        sides[side] = ([texts[i] for i in order], np.array(labels, dtype=np.int64)[order],
                       [plays[i] for i in order])
    return FolioData(*sides["train"], *sides["test"])


def confusion(y_true, y_pred, num_classes: int = len(GENRES)) -> np.ndarray:
    """``C[i, j]`` = how many passages of genre ``i`` were predicted as ``j``, ``(num_classes, num_classes)``."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError(f"y_true and y_pred must be 1-D of the same length, got {y_true.shape} and {y_pred.shape}")
    C = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(C, (y_true, y_pred), 1)
    return C


def scores(y_true, y_pred) -> dict:
    """``{"accuracy", "macro_f1"}`` (0 to 1): macro-F1 is the mean over genres of 2PR/(P+R)."""
    C = confusion(y_true, y_pred)
    tp = np.diag(C).astype(float)
    precision = np.divide(tp, C.sum(0), out=np.zeros(len(C)), where=C.sum(0) > 0)
    recall = np.divide(tp, C.sum(1), out=np.zeros(len(C)), where=C.sum(1) > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros(len(C)), where=precision + recall > 0)
    return {"accuracy": float(tp.sum() / C.sum()), "macro_f1": float(f1.mean())}


def tfidf_baseline(data: FolioData):
    """TF-IDF of words and word pairs + one-vs-rest logistic regression (liblinear: plain C code,
    the same digits on every CPU), fitted on the training side.

    Returns ``(predicted test labels (N,), the fitted sklearn pipeline)``.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline

    if not isinstance(data, FolioData):
        raise TypeError(f"data must be a FolioData (load_folio()), got {type(data).__name__}")
    pipe = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                         OneVsRestClassifier(LogisticRegression(solver="liblinear", C=4.0)))
    pipe.fit(data.train_texts, data.train_labels)
    return pipe.predict(data.test_texts), pipe
