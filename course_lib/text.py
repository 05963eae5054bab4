"""A small bilingual tokenizer and vocabulary (chapter 7, ``ch07_bert_gpt``).

English is split into words, Chinese into single characters. Chinese is
written without spaces, so a tokenizer that splits on spaces turns a whole
Chinese sentence into one "word" that will almost never be seen twice;
characters give a small vocabulary (a few thousand cover almost every text)
in which an unseen sentence still consists of known pieces.

::

    tokenize("I loved it! 这部电影很棒。")
    -> ['i', 'loved', 'it', '!', '这', '部', '电', '影', '很', '棒', '。']

:class:`Vocab` maps tokens to ids with five special tokens first::

    <pad> = 0   padding, ignored by attention
    <unk> = 1   a token not in the vocabulary
    <cls> = 2   first token; BERT classifies from its vector
    <sep> = 3   end of a sentence
    <mask> = 4  hides a token for masked-language-model training

and pads or truncates to a fixed length.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from ._validate import check_positive_int

__all__ = ["tokenize", "Vocab", "SPECIALS"]

SPECIALS = ("<pad>", "<unk>", "<cls>", "<sep>", "<mask>")
"""The special tokens, in id order."""

# One CJK ideograph; or a run of Latin letters/digits, with an optional 's / 't / 're ...;
# or any other single non-space character (punctuation, full-width punctuation, emoji).
_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
                    r"|[a-z0-9]+(?:'[a-z]+)?"
                    r"|[^\sa-z0-9\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def tokenize(text: str, keep_punct: bool = True) -> list[str]:
    """Split ``text`` into lower-case English words and single Chinese characters.

    Args:
        text: any string, English, Chinese or mixed.
        keep_punct: keep punctuation marks as tokens of their own
            (``"!"``, ``"，"``); False drops them.

    Returns:
        The tokens, in order. Chapter 7 uses them for BERT's sentiment data.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tokens = _TOKEN.findall(text.lower())
    if not keep_punct:
        tokens = [t for t in tokens if t[0].isalnum()]
    return tokens


class Vocab:
    """Token <-> id mapping with BERT's special tokens (chapter 7).

    Args:
        tokens: the ordinary tokens, in id order (they follow :data:`SPECIALS`).

    Build one from texts with :meth:`build`. Attributes ``pad_id``,
    ``unk_id``, ``cls_id``, ``sep_id`` and ``mask_id`` hold the special ids.
    """

    def __init__(self, tokens):
        tokens = list(tokens)
        if not all(isinstance(t, str) for t in tokens):
            raise TypeError("tokens must be strings")
        self.itos = list(SPECIALS) + [t for t in dict.fromkeys(tokens) if t not in SPECIALS]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = range(len(SPECIALS))

    @classmethod
    def build(cls, texts, min_freq: int = 1, tokenizer=tokenize) -> "Vocab":
        """A vocabulary of every token that occurs at least ``min_freq`` times.

        Args:
            texts: iterable of strings.
            min_freq: rarer tokens become ``<unk>``.
            tokenizer: ``str -> list[str]``; :func:`tokenize` by default.

        Returns:
            A :class:`Vocab`; tokens are ordered by frequency, then alphabetically,
            so the same texts always give the same ids.
        """
        min_freq = check_positive_int(min_freq, "min_freq")
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, not one string")
        counts = Counter(t for text in texts for t in tokenizer(text))
        ordered = sorted((t for t, c in counts.items() if c >= min_freq),
                         key=lambda t: (-counts[t], t))
        return cls(ordered)

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def special_ids(self) -> list[int]:
        """Ids of all special tokens (never masked by MLM)."""
        return list(range(len(SPECIALS)))

    def encode(self, text: str, max_len: int | None = None, add_special: bool = True,
               tokenizer=tokenize) -> list[int]:
        """Ids of one text: ``<cls> tokens <sep>``, truncated to ``max_len``.

        Args:
            text: the string.
            max_len: at most this many ids (the ``<sep>`` is kept); None: no limit.
            add_special: add ``<cls>`` and ``<sep>``.
            tokenizer: as in :meth:`build`.
        """
        ids = [self.stoi.get(t, self.unk_id) for t in tokenizer(text)]
        if max_len is not None:
            max_len = check_positive_int(max_len, "max_len", minimum=3 if add_special else 1)
            ids = ids[:max_len - 2] if add_special else ids[:max_len]
        return [self.cls_id] + ids + [self.sep_id] if add_special else ids

    def encode_batch(self, texts, max_len: int, add_special: bool = True,
                     tokenizer=tokenize) -> tuple[np.ndarray, np.ndarray]:
        """Ids of several texts, padded with ``<pad>`` to one length.

        Args:
            texts: list of ``B`` strings.
            max_len: every row has exactly ``max_len`` ids (truncated or padded).

        Returns:
            ``(ids, mask)``, both int64 arrays ``(B, max_len)``; ``mask`` is 1
            for real tokens and 0 for padding (BERT's ``attention_mask``).
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings; wrap one text in a list")
        max_len = check_positive_int(max_len, "max_len")
        rows = [self.encode(t, max_len, add_special, tokenizer) for t in texts]
        ids = np.full((len(rows), max_len), self.pad_id, dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
        return ids, (ids != self.pad_id).astype(np.int64)

    def decode(self, ids) -> list[str]:
        """Tokens of a sequence of ids (padding included)."""
        return [self.itos[int(i)] for i in ids]

    def unk_rate(self, texts, tokenizer=tokenize) -> float:
        """Fraction of the tokens of ``texts`` that are not in the vocabulary (0 to 1)."""
        tokens = [t for text in texts for t in tokenizer(text)]
        if not tokens:
            raise ValueError("texts must contain at least one token")
        return sum(t not in self.stoi for t in tokens) / len(tokens)
