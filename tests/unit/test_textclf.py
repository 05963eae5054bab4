"""Chapter 10's text-classification kit (course_lib.labs.textclf): deduplication, the stratified
split, the n-gram baseline on a hand-checkable set, the metrics, and the training helpers."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch

from course_lib.labs.sentiment import build_classifier
from course_lib.labs.textclf import (SplitTexts, TextData, confusion, dedupe, encode_split, evaluate, fit,
                                     ngram_baseline, scores, split_texts)
from course_lib.training import logged_curve


# ---------------------------------------------------------------- dedupe and split

def test_dedupe_by_hand():
    texts = ["a", "b", "a", "c", "c", "d"]
    kept, y, info = dedupe(texts, [1, 0, 1, 0, 1, 0])
    assert kept == ["a", "b", "d"]                 # "c" carries both labels: dropped
    assert y.tolist() == [1, 0, 0]
    assert info == {"rows": 6, "kept": 3, "duplicates": 2, "conflicting": 1}


@pytest.mark.parametrize("texts,labels,err,match", [
    ("abc", [1, 0, 1], TypeError, "texts must be a list of strings"),
    (["a", 3], [1, 0], TypeError, "texts must be a list of strings"),
    (["a", "b"], [1], ValueError, "labels must be one label per text"),
    (["a", "b"], [0.5, 1.0], TypeError, "labels must be integers"),
])
def test_dedupe_bad_input(texts, labels, err, match):
    with pytest.raises(err, match=match):
        dedupe(texts, labels)


def _toy(n_pos=70, n_neg=30):
    texts = [f"好{i}" for i in range(n_pos)] + [f"差{i}" for i in range(n_neg)]
    return texts, [1] * n_pos + [0] * n_neg


def test_split_is_stratified_and_has_no_text_on_both_sides():
    texts, labels = _toy()
    texts += texts[:10] + texts[-5:]                 # 15 exact duplicates
    labels += labels[:10] + labels[-5:]
    s = split_texts(texts, labels, test_size=20, seed=0)
    assert s.info["duplicates"] == 15 and s.info["kept"] == 100
    assert len(s.test) == s.info["test"] == 20 and len(s.train) == s.info["train"] == 80
    assert not set(s.train) & set(s.test)
    assert len(set(s.train)) == len(s.train) and len(set(s.test)) == len(s.test)
    assert int(s.y_test.sum()) == 14 and int(s.y_train.sum()) == 56          # 70 % positive on both sides
    assert all((t[0] == "好") == bool(y) for t, y in zip(s.test + s.train, [*s.y_test, *s.y_train]))
    again = split_texts(texts, labels, test_size=20, seed=0)
    assert again.test == s.test                      # a fixed seed, the same split
    assert split_texts(texts, labels, test_size=20, seed=1).test != s.test


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(test_size="20"), TypeError, "test_size must be an int count or a float share"),
    (dict(test_size=1.5), ValueError, r"test_size as a share must be in \(0, 1\)"),
    (dict(test_size=0), ValueError, "test_size as a count must be >= 1"),
    (dict(test_size=100), ValueError, "test_size must be below the 100 distinct texts"),
    (dict(test_size=10, seed=-1), ValueError, "seed"),
])
def test_split_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        split_texts(*_toy(), **kwargs)


def test_encode_split_builds_the_vocabulary_on_training_only():
    s = SplitTexts(["好书", "差书"], np.array([1, 0]), ["好评"], np.array([1]), {})
    d = encode_split(s, ("neg", "pos"), max_len=5)
    assert isinstance(d, TextData) and d.X_train.shape == (2, 5) and d.X_test.shape == (1, 5)
    assert "评" not in d.vocab.stoi                                    # only in the held-out text
    assert d.vocab.decode(d.X_test[0]) == ["<cls>", "好", "<unk>", "<sep>", "<pad>"]
    assert d.M_test[0].tolist() == [1, 1, 1, 1, 0] and d.y_test.tolist() == [1]
    with pytest.raises(TypeError, match="split must be a SplitTexts"):
        encode_split((["a"], [0]), ("neg", "pos"), max_len=5)
    with pytest.raises(ValueError, match="class_names must name at least 2 classes"):
        encode_split(s, ("pos",), max_len=5)
    with pytest.raises(ValueError, match=r"labels must lie in 0 … 1"):
        encode_split(SplitTexts(["a"], np.array([2]), ["b"], np.array([0]), {}), ("neg", "pos"), max_len=5)
    with pytest.raises(ValueError, match="max_len"):
        encode_split(s, ("neg", "pos"), max_len=2)


# ---------------------------------------------------------------- the baseline on a set checkable by hand

def test_ngram_baseline_by_hand():
    texts, labels = ["好好", "好", "很好", "差差", "差", "很差"], [1, 1, 1, 0, 0, 0]
    model = ngram_baseline(texts, labels, ngram_range=(1, 2))
    vec, clf = model[0], model[-1]
    # every character and every pair of neighbours, each seen at least once (tiny set: min_df 1)
    assert set(vec.vocabulary_) == {"好", "好好", "很", "很好", "差", "差差", "很差"}
    w = dict(zip(vec.get_feature_names_out(), clf.coef_[0]))
    assert w["好"] > 0 > w["差"]                     # the opinion characters carry the weight …
    assert abs(w["很"]) < min(w["好"], -w["差"])     # … "very" occurs on both sides
    assert model.predict(["好", "差", "很好很好", "差差差"]).tolist() == [1, 0, 1, 0]
    unigrams = ngram_baseline(texts, labels, ngram_range=(1, 1))
    assert set(unigrams[0].vocabulary_) == {"好", "很", "差"}


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(ngram_range=(2, 1)), ValueError, "ngram_range must be a pair of ints"),
    (dict(ngram_range=[1, 2]), ValueError, "ngram_range must be a pair of ints"),
    (dict(C=0), ValueError, "C must be a positive number"),
])
def test_ngram_baseline_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        ngram_baseline(["好", "差"] * 3, [1, 0] * 3, **kwargs)


def test_ngram_baseline_bad_data():
    with pytest.raises(ValueError, match="texts must not be empty"):
        ngram_baseline([], [])
    with pytest.raises(ValueError, match="labels must contain at least 2 classes"):
        ngram_baseline(["好", "好好"], [1, 1])
    with pytest.raises(TypeError, match="texts must be a list of strings"):
        ngram_baseline("好差", [1, 0])


# ---------------------------------------------------------------- metrics

def test_scores_by_hand():
    y_true, y_pred = [0, 0, 1, 1, 2], [0, 1, 1, 1, 0]
    r = scores(y_true, y_pred, 3)
    assert r["confusion"].tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 0]]
    # class 0: TP 1, FP 1, FN 1 -> 2/4; class 1: TP 2, FP 1 -> 4/5; class 2: never right -> 0
    np.testing.assert_allclose(r["f1_per_class"], [0.5, 0.8, 0.0])
    assert r["macro_f1"] == pytest.approx((0.5 + 0.8) / 3)
    assert r["accuracy"] == pytest.approx(3 / 5) and r["f1"] == pytest.approx(0.8)


def test_scores_agree_with_scikit_learn():
    from sklearn.metrics import accuracy_score, f1_score
    rng = np.random.default_rng(0)
    t, p = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    r = scores(t, p, 4)
    assert r["macro_f1"] == pytest.approx(f1_score(t, p, average="macro"))
    assert r["accuracy"] == pytest.approx(accuracy_score(t, p))


@pytest.mark.parametrize("args,match", [
    (([0, 1], [0], 2), "same length"),
    (([0, 2], [0, 1], 2), r"labels must lie in 0 … 1"),
    (([0, -1], [0, 1], 2), r"labels must lie in 0 … 1"),
    (([0, 1], [0, 1], 1), "num_classes"),
])
def test_confusion_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        confusion(*args)


def test_scores_empty():
    with pytest.raises(ValueError, match="y_true must not be empty"):
        scores([], [], 2)


# ---------------------------------------------------------------- fit and evaluate

TRAINING = dict(steps=6, batch_size=4, lr=3e-3, warmup=2, clip=1.0, seed=0)


@pytest.fixture(scope="module")
def tiny():
    texts = ["好书", "很好", "好好好", "非常好", "差书", "很差", "差差差", "非常差"] * 3
    labels = [1, 1, 1, 1, 0, 0, 0, 0] * 3
    texts = [t + str(i) for i, t in enumerate(texts)]            # distinct texts
    return encode_split(split_texts(texts, labels, test_size=8, seed=0), ("neg", "pos"), max_len=8)


def _model(vocab_size):
    return build_classifier(vocab_size, d_model=16, num_heads=2, num_layers=1, max_len=8, seed=0)


def test_fit_first_steps_equal_the_start_of_the_full_run(tiny):
    torch.manual_seed(0)
    full = fit(_model(len(tiny.vocab)), tiny, TRAINING)
    torch.manual_seed(0)
    start = fit(_model(len(tiny.vocab)), tiny, TRAINING, steps=3)
    assert len(full) == 6 and start == full[:3]


def test_fit_bands_against_a_curve(tiny, capsys):
    torch.manual_seed(0)
    curve = logged_curve(fit(_model(len(tiny.vocab)), tiny, TRAINING), 2)
    torch.manual_seed(0)
    capsys.readouterr()
    fit(_model(len(tiny.vocab)), tiny, TRAINING, steps=4, log_every=2, reference=curve, rel=1e-3, name="x")
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["x · step 2/4 · loss", "x · step 4/4 · loss"]
    with pytest.raises(AssertionError, match="outside its band"):
        torch.manual_seed(0)
        fit(_model(len(tiny.vocab)), tiny, TRAINING, steps=2, log_every=2,
            reference={k: 10 * v for k, v in curve.items()}, rel=0.1)


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(steps=7), ValueError, r"steps must be at most training\['steps'\] = 6"),
    (dict(steps=0), ValueError, "steps"),
])
def test_fit_bad_input(tiny, kwargs, err, match):
    with pytest.raises(err, match=match):
        fit(_model(len(tiny.vocab)), tiny, TRAINING, **kwargs)


def test_fit_needs_textdata_and_a_full_training_dict(tiny):
    with pytest.raises(TypeError, match="data must be a TextData"):
        fit(_model(10), "data", TRAINING)
    with pytest.raises(ValueError, match=r"training must give \['warmup'\]"):
        fit(_model(len(tiny.vocab)), tiny, {k: v for k, v in TRAINING.items() if k != "warmup"})


def test_evaluate_is_float64_and_leaves_the_model(tiny):
    model = _model(len(tiny.vocab)).eval()
    ev = evaluate(model, tiny)
    with torch.no_grad():
        p32 = model(tiny.X_test, attention_mask=tiny.M_test).softmax(-1).numpy()
    assert ev["probs"].dtype == np.float64 and ev["probs"].shape == (8, 2)
    np.testing.assert_allclose(ev["probs"], p32, atol=1e-5)
    assert ev["pred"].tolist() == ev["probs"].argmax(-1).tolist()
    assert ev["accuracy"] == pytest.approx((ev["pred"] == tiny.y_test.numpy()).mean())
    assert next(model.parameters()).dtype == torch.float32
    with pytest.raises(TypeError, match="data must be a TextData"):
        evaluate(model, None)


def test_evaluate_in_batches_gives_the_probabilities_of_one_pass(tiny, monkeypatch):
    """Batches of 3 over the 8 held-out texts (3 + 3 + 2, the last one short): every probability
    is that of one float64 pass over all 8 with their masks. Not always to the last bit: the BLAS
    may sum a product of 3 rows in another order than one of 8 (here 1.1e-16 apart), as another
    CPU does; a text scored with another's mask, or one left out, is off by far more."""
    import copy
    import dataclasses

    from course_lib.labs import textclf
    # padding that differs between the texts, so that a mask taken from the wrong rows shows
    X, M = tiny.X_test.clone(), tiny.M_test.clone()
    M[1::2, 3:] = False
    data = dataclasses.replace(tiny, X_test=X, M_test=M)
    model = _model(len(tiny.vocab)).eval()
    with torch.no_grad():
        whole = copy.deepcopy(model).double()(X, attention_mask=M).softmax(-1).numpy()     # (8, 2)
    monkeypatch.setattr(textclf, "EVAL_BATCH", 3)
    batched = evaluate(model, data)["probs"]
    assert batched.shape == (8, 2)
    np.testing.assert_allclose(batched, whole, rtol=0, atol=4e-16)           # a few units of the last place
    with pytest.raises(ValueError, match="at least one held-out text"):
        evaluate(model, dataclasses.replace(tiny, X_test=X[:0], M_test=M[:0], y_test=tiny.y_test[:0]))
