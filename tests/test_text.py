"""course_lib.text: the bilingual tokenizer and vocabulary of chapter 7."""

import pytest

from course_lib.text import SPECIALS, Vocab, tokenize


def test_tokenize_splits_words_and_characters():
    assert tokenize("I loved it! 这部电影很棒。") == ["i", "loved", "it", "!", "这", "部", "电", "影",
                                                     "很", "棒", "。"]
    assert tokenize("Don't stop", keep_punct=False) == ["don't", "stop"]
    assert tokenize("好，ok", keep_punct=False) == ["好", "ok"]
    assert tokenize("") == []


def test_vocab_ids_padding_and_truncation():
    v = Vocab.build(["a b b", "b c", "好 好"], min_freq=2)
    assert v.itos[:5] == list(SPECIALS) and v.itos[5:] == ["b", "好"]
    assert v.encode("b a 好") == [v.cls_id, 5, v.unk_id, 6, v.sep_id]
    ids, mask = v.encode_batch(["b", "b b b b b b"], max_len=4)
    assert ids.tolist() == [[2, 5, 3, 0], [2, 5, 5, 3]] and mask.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert v.decode(ids[0]) == ["<cls>", "b", "<sep>", "<pad>"]
    assert v.unk_rate(["a b", "c c"]) == pytest.approx(0.75)
    assert v.special_ids == [0, 1, 2, 3, 4] and len(v) == 7


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
    (lambda: Vocab(["a"]).unk_rate([""]), ValueError, "at least one token"),
])
def test_bad_arguments_are_named(call, err, match):
    with pytest.raises(err, match=match):
        call()
