"""course_lib.labs.bpe: characters and byte-level BPE as tokens (chapter 7)."""

import pytest

from course_lib.labs import bpe

TEXT = "the cat sat on the mat. the cat ate the rat.\n" * 20


def test_char_codec_round_trip_and_unknowns():
    codec = bpe.CharCodec("abca")
    assert codec.vocab_size == 4 + 3                  # <pad> <sos> <eos> <unk>, then a b c
    ids = codec.encode("cab")
    assert codec.decode(ids) == "cab" and len(ids) == 3
    assert codec.encode("z") == [codec.vocab.unk_id] and codec.decode(codec.encode("az")) == "a\ufffd"
    assert codec.first_token_chars("cab") == 1
    assert bpe.CharCodec("aab", min_freq=2).encode("ab") == [4, 3]   # b is rarer than 2 -> <unk>


def test_bpe_merges_frequent_pairs_and_round_trips():
    codec = bpe.train_bpe(TEXT, 265)
    assert codec.vocab_size == 265
    text = "the cat sat on the rat."
    ids = codec.encode(text)
    assert codec.decode(ids) == text
    assert len(ids) < len(text)                           # merges: fewer tokens than characters
    pieces = [codec.decode([i]) for i in ids]
    assert "".join(pieces) == text                        # ASCII: every token decodes to whole characters
    assert codec.first_token_chars(text) == len(pieces[0]) and pieces[0].startswith("the")


def test_bpe_is_deterministic_and_survives_json():
    a, b = bpe.train_bpe(TEXT, 265), bpe.train_bpe(TEXT, 265)
    assert a.to_str() == b.to_str()
    c = bpe.BPECodec(a.to_str())
    assert c.encode("the mat") == a.encode("the mat") and c.vocab_size == 265


def test_bpe_never_meets_an_unknown_character():
    codec = bpe.train_bpe(TEXT, 265)
    ids = codec.encode("猫 sat")                            # bytes the training text never had
    assert codec.decode(ids) == "猫 sat"


def test_bad_input():
    with pytest.raises(TypeError, match="train_text"):
        bpe.CharCodec(["a"])
    with pytest.raises(ValueError, match="train_text"):
        bpe.train_bpe("", 300)
    with pytest.raises(ValueError, match="vocab_size"):
        bpe.train_bpe(TEXT, 256)
    with pytest.raises(TypeError, match="tokenizer"):
        bpe.BPECodec(42)
    with pytest.raises(TypeError, match="text"):
        bpe.CharCodec("ab").encode(None)
    with pytest.raises(ValueError, match="text"):
        bpe.train_bpe(TEXT, 265).first_token_chars("")
