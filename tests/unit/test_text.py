"""course_lib.text: the book's one tokenizer and vocabulary class (chapters 1, 7, 8)."""

import pytest

from course_lib.text import BERT_SPECIALS, EOS_ID, PAD_ID, SOS_ID, SPECIALS, UNK_ID, Vocab, tokenize


def test_tokenize_splits_words_and_characters():
    assert tokenize("I loved it! 这部电影很棒。") == ["i", "loved", "it", "!", "这", "部", "电", "影",
                                                     "很", "棒", "。"]
    assert tokenize("Don't stop", keep_punct=False) == ["don't", "stop"]
    assert tokenize("好，ok", keep_punct=False) == ["好", "ok"]
    assert tokenize("") == []


def test_vocab_ids_padding_and_truncation():
    v = Vocab.build(["a b b", "b c", "好 好"], min_freq=2, specials=BERT_SPECIALS)
    assert v.itos[:5] == list(BERT_SPECIALS) and v.itos[5:] == ["b", "好"]
    assert v.encode("b a 好") == [v.cls_id, 5, v.unk_id, 6, v.sep_id]
    ids, mask = v.encode_batch(["b", "b b b b b b"], max_len=4)
    assert ids.tolist() == [[2, 5, 3, 0], [2, 5, 5, 3]] and mask.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert v.decode(ids[0]) == ["<cls>", "b", "<sep>", "<pad>"]
    assert v.unk_rate(["a b", "c c"]) == pytest.approx(0.75)
    assert v.special_ids == [0, 1, 2, 3, 4] and len(v) == 7


def test_the_books_convention():
    assert (PAD_ID, SOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3) and SPECIALS[:3] == ("<pad>", "<sos>", "<eos>")
    closed = Vocab(["x", "y"])                       # chapter 1: no <unk>, unknown words are errors
    assert closed.itos == ["<pad>", "<sos>", "<eos>", "x", "y"] and closed.unk_id is None
    assert closed.encode(["y", "x"]) == [SOS_ID, 4, 3, EOS_ID]
    assert closed.encode(["y"], add_special=False) == [4]
    assert closed.decode([SOS_ID, 4, EOS_ID, 3, PAD_ID], strip=True) == ["y"]
    opened = Vocab.build(["x y", "y"])               # built from texts: <unk> = 3
    assert opened.itos[:5] == list(SPECIALS) + ["y"] and opened.encode("y z") == [SOS_ID, 4, UNK_ID, EOS_ID]


def test_build_is_deterministic():
    texts = ["the cat", "a dog", "the dog"]
    assert Vocab.build(texts).itos == Vocab.build(list(reversed(texts))).itos


@pytest.mark.parametrize("call, err, match", [
    (lambda: tokenize(3), TypeError, "text must be a str"),
    (lambda: Vocab.build("abc"), TypeError, "texts must be a list"),
    (lambda: Vocab.build(["a"], min_freq=0), ValueError, "min_freq"),
    (lambda: Vocab(["a", 1]), TypeError, "tokens must be strings"),
    (lambda: Vocab(["a"]).encode_batch("a", 4), TypeError, "texts must be a list"),
    (lambda: Vocab(["a"]).encode("a", max_len=2), ValueError, "max_len"),
    (lambda: Vocab(["a"], specials=("<sos>",)), ValueError, "starting with '<pad>'"),
    (lambda: Vocab.build(["a"], specials=("<pad>",)), ValueError, "must contain '<unk>'"),
    (lambda: Vocab(["a"], specials=("<pad>",)).encode("a"), ValueError, "use add_special=False"),
    (lambda: Vocab(["a"]).unk_rate([""]), ValueError, "at least one token"),
])
def test_bad_arguments_are_named(call, err, match):
    with pytest.raises(err, match=match):
        call()
