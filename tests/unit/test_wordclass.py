"""Chapter 10's multi-class task (course_lib.labs.wordclass): labels derived from the tags, the
split by word type, the corpus loader, and the stored checkpoint."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch

from course_lib import corpora, repro
from course_lib.labs import wordclass


def test_word_classes_by_hand():
    paragraphs = [[("北京", "ns"), ("发展", "v"), ("很", "d"), ("好", "a")],
                  [("发展", "vn"), ("北京", "ns"), ("的", "u"), ("人民", "n")],
                  [("发展", "v"), ("人民", "n")]]
    words, labels, info = wordclass.word_classes(paragraphs)
    # 发展: v 2 of 3 times < 90 %: mixed; 的: dominant tag u, not a class
    assert words == ["北京", "很", "好", "人民"]
    assert [wordclass.TAGS[i] for i in labels] == ["ns", "d", "a", "n"]
    assert info == {"types": 6, "kept": 4, "mixed": 1, "other_tags": 1}
    words, labels, _ = wordclass.word_classes(paragraphs, min_share=0.6)
    assert "发展" in words and wordclass.TAGS[labels[words.index("发展")]] == "v"


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(min_share=0), ValueError, "min_share must be above 0"),
    (dict(min_share=1.5), ValueError, "min_share"),
    (dict(tags=("n",)), ValueError, "tags must be at least 2 distinct strings"),
    (dict(tags=("n", "n")), ValueError, "tags must be at least 2 distinct strings"),
])
def test_word_classes_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        wordclass.word_classes([[("北京", "ns")]], **kwargs)


def test_word_classes_bad_paragraphs():
    with pytest.raises(TypeError, match=r"paragraphs must hold \(word, tag\) pairs"):
        wordclass.word_classes([["北京/ns"]])


def test_tagged_corpus_loader():
    paragraphs = corpora.peoples_daily_tagged()
    assert paragraphs[0][:3] == [("迈向", "v"), ("充满", "v"), ("希望", "n")]
    raw = corpora.peoples_daily()
    assert len(raw) == len(paragraphs)
    assert "".join(w for w, _ in paragraphs[5]) == raw[5]          # the same file, tags kept


def test_the_task_split_by_word_type():
    data = wordclass.load_word_classes()
    s = data.split
    assert not set(s.train) & set(s.test)                            # every held-out word is unseen
    assert len(s.test) == s.info["test"] and s.info["duplicates"] == 0
    share_train = np.bincount(s.y_train, minlength=5) / len(s.y_train)
    share_test = np.bincount(s.y_test, minlength=5) / len(s.y_test)
    np.testing.assert_allclose(share_train, share_test, atol=1 / len(s.y_test) + 1e-3)   # stratified
    k = s.test.index(next(w for w in s.test if len(w) == 2))
    assert data.vocab.decode(data.X_test[k], strip=True) == [
        c if c in data.vocab.stoi else "<unk>" for c in s.test[k]]
    assert len(data.class_names) == len(wordclass.TAGS) == 5


def test_wordclass_recipe_and_checkpoint():
    rec = repro.RECIPES["ch08-wordclass"]
    assert rec.chapter == "ch08" and set(rec.tolerance) == {"macro_f1", "accuracy"}
    data = wordclass.load_word_classes()
    model = wordclass.build(len(data.vocab))
    meta = repro.load_checkpoint("ch08-wordclass", model, dtype=torch.float64)
    assert meta["config"]["vocab"] == data.vocab.itos[len(data.vocab.specials):]
    from course_lib.labs.textclf import evaluate
    ev = evaluate(model, data)
    assert ev["macro_f1"] == pytest.approx(meta["metrics"]["macro_f1"], abs=1e-9)
    assert ev["accuracy"] == pytest.approx(meta["metrics"]["accuracy"], abs=1e-9)
