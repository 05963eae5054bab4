"""Two ways to cut text into tokens for chapter 8's GPT (``ch08_gpt``): characters, or
byte-level byte-pair encoding (BPE) trained with Hugging Face's ``tokenizers``.

Both are *codecs* with the same small interface, so the lab treats them alike::

    codec.encode(text)        -> list of ids           codec.decode(ids) -> text
    codec.vocab_size          -> V                     codec.first_token_chars(text) -> int

- :class:`CharCodec`: one token per character, a :class:`course_lib.text.Vocab`
  of the characters seen at least ``min_freq`` times in the training text
  (rarer ones become ``<unk>``).
- :class:`BPECodec`: GPT-2's recipe in miniature. The text is first turned
  into bytes (so no character is ever unknown), then the most frequent
  adjacent pair of symbols is merged into a new symbol, again and again,
  until the vocabulary holds ``vocab_size`` symbols: 256 bytes plus the
  merges. It is trained on the training split only (:func:`train_bpe`).

``first_token_chars`` is the number of characters of ``text`` that the first
token covers: a language model never predicts its first token, so bits per
character divide by the characters of the *predicted* tokens only.
"""

from __future__ import annotations

from ..text import SPECIALS, Vocab

__all__ = ["CharCodec", "BPECodec", "train_bpe"]


def _check_text(text, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string, got {type(text).__name__}")
    if not text:
        raise ValueError(f"{name} must not be empty")
    return text


class CharCodec:
    """Characters as tokens (chapter 8).

    Args:
        train_text: the training text; its characters (seen at least
            ``min_freq`` times) form the vocabulary, after the book's four
            special tokens (``<pad> <sos> <eos> <unk>``).
        min_freq: rarer characters become ``<unk>`` (id 3).

    Attributes:
        vocab: the :class:`~course_lib.text.Vocab`; vocab_size: its size ``V``.
    """

    kind = "char"

    def __init__(self, train_text: str, min_freq: int = 1):
        self.vocab = Vocab.build([_check_text(train_text, "train_text")], min_freq=min_freq,
                                 tokenizer=list, specials=SPECIALS)
        self.vocab_size = len(self.vocab)

    def encode(self, text: str) -> list[int]:
        """One id per character of ``text``; unknown characters get ``<unk>``."""
        return self.vocab.encode(list(_check_text(text)), add_special=False)

    def decode(self, ids) -> str:
        """The characters of ``ids`` (``<unk>`` is shown as ``�``)."""
        return "".join("\ufffd" if t == "<unk>" else t for t in self.vocab.decode(ids))

    def first_token_chars(self, text: str) -> int:
        """1: a character token covers one character."""
        _check_text(text)
        return 1


class BPECodec:
    """Byte-level BPE tokens, from a trained ``tokenizers.Tokenizer`` (chapter 8).

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` (from :func:`train_bpe`), or its
            JSON string (``Tokenizer.to_str()``), as a checkpoint stores it.

    Attributes:
        tokenizer, vocab_size.
    """

    kind = "bpe"

    def __init__(self, tokenizer):
        from tokenizers import Tokenizer

        if isinstance(tokenizer, str):
            tokenizer = Tokenizer.from_str(tokenizer)
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a tokenizers.Tokenizer or its JSON string, "
                            f"got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer
        self.vocab_size = tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """The BPE ids of ``text``."""
        return self.tokenizer.encode(_check_text(text)).ids

    def decode(self, ids) -> str:
        """The text of ``ids`` (bytes that do not form whole UTF-8 characters show as ``�``)."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        return self.tokenizer.decode([int(i) for i in ids])

    def first_token_chars(self, text: str) -> int:
        """The number of characters of ``text`` that its first BPE token covers."""
        return self.tokenizer.encode(_check_text(text)).offsets[0][1]

    def to_str(self) -> str:
        """The tokenizer as a JSON string (stored in a checkpoint's config)."""
        return self.tokenizer.to_str()


def train_bpe(train_text: str, vocab_size: int) -> BPECodec:
    """Train a byte-level BPE on ``train_text`` only (chapter 8).

    GPT-2's pre-tokenisation (split before spaces and punctuation, then map
    every byte to a printable symbol) followed by merges of the most frequent
    pairs until there are ``vocab_size`` symbols. Deterministic: the same
    text gives the same merges.

    Args:
        train_text: the training split's text.
        vocab_size: the number of symbols, at least 257 (256 bytes and one merge).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    _check_text(train_text, "train_text")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 257:
        raise ValueError(f"vocab_size must be an integer >= 257 (256 bytes plus merges), got {vocab_size!r}")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tokenizer.train_from_iterator([train_text], trainer=trainer)
    return BPECodec(tokenizer)
