"""The book's one tokenizer and one vocabulary class (chapters 1, 7 and 8).

:func:`tokenize` splits English into words and Chinese into single
characters. Chinese is written without spaces, so a tokenizer that splits on
spaces turns a whole Chinese sentence into one "word" that will almost never
be seen twice; characters give a small vocabulary (a few thousand cover almost
every text) in which an unseen sentence still consists of known pieces.

::

    tokenize("I loved it! 这部电影很棒。")
    -> ['i', 'loved', 'it', '!', '这', '部', '电', '影', '很', '棒', '。']

:class:`Vocab` maps tokens to ids. Its special tokens come first, and the
book's convention for them is :data:`SPECIALS`::

    <pad> = 0   padding, ignored by attention and by the loss
    <sos> = 1   start of a sequence (what a decoder reads first)
    <eos> = 2   end of a sequence
    <unk> = 3   a token not in the vocabulary (only if the vocabulary needs one)

Chapter 1's copy/reverse tasks and toy corpus use the first three
(``Vocab(words)``: a closed vocabulary, an unknown word is an error).
BERT (chapters 7 and 8) has its own special tokens, :data:`BERT_SPECIALS`
(``<pad>`` is 0 there too): chapter 7 prints and trains with those ids, so
they are kept. Chapter 5's digits-to-letters test keeps the source
document's own vocabulary (``<SOS>`` = 6, ``<EOS>`` = 7), which is data of
the source: see :mod:`course_lib.chapters.ch05.source`.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

import numpy as np

from ._validate import check_positive_int

__all__ = ["tokenize", "Vocab", "SPECIALS", "BERT_SPECIALS", "PAD_ID", "SOS_ID", "EOS_ID", "UNK_ID"]

SPECIALS = ("<pad>", "<sos>", "<eos>", "<unk>")
"""The book's special tokens, in id order: ``<pad>`` 0, ``<sos>`` 1, ``<eos>`` 2, ``<unk>`` 3."""

PAD_ID, SOS_ID, EOS_ID, UNK_ID = range(len(SPECIALS))

BERT_SPECIALS = ("<pad>", "<unk>", "<cls>", "<sep>", "<mask>")
"""BERT's special tokens, in id order (chapters 7 and 8)."""

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
        The tokens, in order. Chapters 7 and 8 use them for BERT's sentiment data.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tokens = _TOKEN.findall(text.lower())
    if not keep_punct:
        tokens = [t for t in tokens if t[0].isalnum()]
    return tokens


class Vocab:
    """Token <-> id mapping: the special tokens first, then the ordinary tokens.

    Args:
        tokens: the ordinary tokens, in id order (duplicates dropped); they
            may not be special tokens.
        specials: the special tokens, in id order; ``<pad>`` must be first.
            Default: ``<pad> <sos> <eos>`` (chapter 1's closed vocabularies);
            :data:`SPECIALS` adds ``<unk>``, :data:`BERT_SPECIALS` is BERT's.

    Attributes:
        itos: list, id -> token.  stoi: dict, token -> id.
        pad_id, sos_id, eos_id, unk_id, cls_id, sep_id, mask_id: the id of
            each special token, or None if the vocabulary has no such token.

    Build one from raw texts with :meth:`build`.
    """

    def __init__(self, tokens: Sequence[str], specials: Sequence[str] = SPECIALS[:3]):
        if isinstance(tokens, str):
            raise TypeError("tokens must be a sequence of strings (one per token), not one string")
        tokens = list(tokens)
        if not all(isinstance(t, str) for t in tokens):
            raise TypeError("tokens must be strings")
        specials = tuple(specials)
        if not specials or specials[0] != "<pad>" or len(set(specials)) != len(specials):
            raise ValueError(f"specials must be distinct tokens starting with '<pad>', got {specials!r}")
        clash = [t for t in tokens if t in specials]
        if clash:
            raise ValueError(f"tokens must not contain the special token {clash[0]!r}")
        self.specials = specials
        self.itos = list(specials) + list(dict.fromkeys(tokens))
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        for name in ("pad", "sos", "eos", "unk", "cls", "sep", "mask"):
            setattr(self, f"{name}_id", self.stoi.get(f"<{name}>"))

    @classmethod
    def build(cls, texts, min_freq: int = 1, tokenizer=tokenize,
              specials: Sequence[str] = SPECIALS) -> "Vocab":
        """A vocabulary of every token that occurs at least ``min_freq`` times.

        Args:
            texts: iterable of strings.
            min_freq: rarer tokens become ``<unk>``.
            tokenizer: ``str -> list[str]``; :func:`tokenize` by default.
            specials: as in :class:`Vocab`; must contain ``<unk>`` (default
                :data:`SPECIALS`; chapters 7 and 8 pass :data:`BERT_SPECIALS`).

        Returns:
            A :class:`Vocab`; tokens are ordered by frequency, then alphabetically,
            so the same texts always give the same ids.
        """
        min_freq = check_positive_int(min_freq, "min_freq")
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, not one string")
        if "<unk>" not in specials:
            raise ValueError("specials must contain '<unk>': a built vocabulary meets unknown tokens")
        counts = Counter(t for text in texts for t in tokenizer(text))
        ordered = sorted((t for t, c in counts.items() if c >= min_freq and t not in specials),
                         key=lambda t: (-counts[t], t))
        return cls(ordered, specials)

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def special_ids(self) -> list[int]:
        """Ids of all special tokens (never masked by MLM)."""
        return list(range(len(self.specials)))

    def _ends(self):
        if self.cls_id is not None and self.sep_id is not None:
            return self.cls_id, self.sep_id
        if self.sos_id is not None and self.eos_id is not None:
            return self.sos_id, self.eos_id
        raise ValueError("this vocabulary has neither <cls>/<sep> nor <sos>/<eos>: use add_special=False")

    def encode(self, text, max_len: int | None = None, add_special: bool = True,
               tokenizer=tokenize) -> list[int]:
        """Ids of one text: ``start tokens end``, truncated to ``max_len``.

        Args:
            text: a string (split by ``tokenizer``) or a list of tokens (used as is).
            max_len: at most this many ids (the end token is kept); None: no limit.
            add_special: wrap in ``<cls> … <sep>`` (BERT) or ``<sos> … <eos>``.
            tokenizer: as in :meth:`build`.

        A token not in the vocabulary becomes ``<unk>``; a vocabulary without
        ``<unk>`` raises ``ValueError`` instead.
        """
        tokens = tokenizer(text) if isinstance(text, str) else list(text)
        if self.unk_id is None:
            unknown = [t for t in tokens if t not in self.stoi]
            if unknown:
                raise ValueError(f"text contains {unknown[0]!r}, which is not in the vocabulary (it has no <unk>)")
        ids = [self.stoi.get(t, self.unk_id) for t in tokens]
        if max_len is not None:
            max_len = check_positive_int(max_len, "max_len", minimum=3 if add_special else 1)
            ids = ids[:max_len - 2] if add_special else ids[:max_len]
        if not add_special:
            return ids
        start, end = self._ends()
        return [start] + ids + [end]

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

    def decode(self, ids, strip: bool = False) -> list[str]:
        """Tokens of a sequence of ids.

        Args:
            ids: a list, array or 1-D tensor of ids.
            strip: False: every token, padding included. True: stop at the
                first ``<eos>``/``<sep>`` and drop the other special tokens
                (what a decoder's output means; chapter 1).
        """
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        if not strip:
            return [self.itos[int(i)] for i in ids]
        ends = {self.eos_id, self.sep_id} - {None}
        out = []
        for i in ids:
            i = int(i)
            if i in ends:
                break
            if i >= len(self.specials):
                out.append(self.itos[i])
        return out

    def unk_rate(self, texts, tokenizer=tokenize) -> float:
        """Fraction of the tokens of ``texts`` that are not in the vocabulary (0 to 1)."""
        tokens = [t for text in texts for t in tokenizer(text)]
        if not tokens:
            raise ValueError("texts must contain at least one token")
        return sum(t not in self.stoi for t in tokens) / len(tokens)
