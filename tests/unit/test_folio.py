"""Chapter 7's genre task (course_lib.labs.folio and corpora.folio_play): the
First Folio's table, the passages, and the split by whole plays."""

import collections

import numpy as np
import pytest
from sklearn.metrics import f1_score

from course_lib import corpora
from course_lib.labs import folio


@pytest.fixture(scope="module")
def data():
    return folio.load_folio()


def test_the_genre_table_is_the_first_folio():
    counts = collections.Counter(folio.FOLIO_GENRES.values())
    assert counts == {"comedy": 14, "history": 10, "tragedy": 12}      # the Folio's 35 titles + Troilus
    assert set(folio.FOLIO_GENRES) == set(corpora.FOLIO_SHA256)
    assert "pericles" not in folio.FOLIO_GENRES                           # not in the Folio
    # a few the Folio classifies against modern habit or by its own title
    assert folio.FOLIO_GENRES["cymbeline"] == "tragedy"
    assert folio.FOLIO_GENRES["winters_tale"] == "comedy" and folio.FOLIO_GENRES["tempest"] == "comedy"
    assert folio.FOLIO_GENRES["troilus_and_cressida"] == "tragedy"
    assert all(folio.FOLIO_GENRES[p] == "history" for p in folio.FOLIO_GENRES if p.startswith(("henry", "richard")))
    assert folio.GENRES == ("comedy", "history", "tragedy")


def test_held_out_plays_cover_every_genre():
    assert set(folio.HELD_OUT) <= set(folio.FOLIO_GENRES)
    assert {folio.FOLIO_GENRES[p] for p in folio.HELD_OUT} == set(folio.GENRES)


def test_speeches_drop_speakers_and_directions():
    text = ("THE PLAY\n\nPERSONS.\nHAMLET, a prince.\n\nACT I.\n\nSCENE I. A room.\n\n[Enter Hamlet.]\n\n"
            "HAMLET.\nTo be, or not to be, that is the question: [Aside.]\nWhether 'tis nobler in the mind\n\n"
            "Ber.\nWho's there?\n\nTHESEUS\nGo, Philostrate,\nStir up the Athenian youth\n")
    assert folio.speeches(text) == [["To be, or not to be, that is the question:", "Whether 'tis nobler in the mind"],
                                     ["Who's there?"], ["Go, Philostrate,", "Stir up the Athenian youth"]]
    assert folio.passages(text, lines=2, min_words=8) == [
        "To be, or not to be, that is the question: Whether 'tis nobler in the mind"]
    assert folio.passages(text, lines=2, min_words=3) == [
        "To be, or not to be, that is the question: Whether 'tis nobler in the mind",
        "Go, Philostrate, Stir up the Athenian youth"]


def test_real_plays_yield_passages_without_cast_lists():
    ps = folio.passages(corpora.folio_play("hamlet"))
    assert ps[0].startswith("For this relief much thanks")              # Francisco, the first speech of two lines
    assert len(ps) > 1000 and all(len(p.split()) >= folio.MIN_WORDS for p in ps)
    assert not any("[" in p or "]" in p for p in ps)
    john = folio.passages(corpora.folio_play("john"))
    assert not any("servant to Lady Falconbridge" in p for p in john)  # the cast list is skipped


def test_the_split_holds_out_whole_plays_and_is_balanced(data):
    assert set(data.train_plays).isdisjoint(data.test_plays)
    assert set(data.test_plays) == set(folio.HELD_OUT)
    assert set(data.train_plays) == set(folio.FOLIO_GENRES) - set(folio.HELD_OUT)
    assert set(data.train_texts).isdisjoint(data.test_texts)
    for labels, side in ((data.train_labels, "train"), (data.test_labels, "test")):
        assert np.bincount(labels).tolist() == [folio.PER_GENRE[side]] * 3
    for texts, labels, plays in ((data.train_texts, data.train_labels, data.train_plays),
                                 (data.test_texts, data.test_labels, data.test_plays)):
        assert all(folio.GENRES[y] == folio.FOLIO_GENRES[p] for y, p in zip(labels, plays))
        assert len(texts) == len(labels) == len(plays)
    ham = set(folio.passages(corpora.folio_play("hamlet")))
    assert all(t in ham for t, p in zip(data.test_texts, data.test_plays) if p == "hamlet")


def test_the_split_is_seeded(data):
    again = folio.load_folio()
    assert again.train_texts == data.train_texts and again.test_texts == data.test_texts
    assert folio.load_folio(seed=1).train_texts != data.train_texts


def test_bad_input():
    with pytest.raises(TypeError, match="text"):
        folio.speeches(None)
    with pytest.raises(ValueError, match="ACT I"):
        folio.speeches("HAMLET.\nTo be.\n")
    with pytest.raises(ValueError, match="lines"):
        folio.passages("ACT I.\n", lines=0)
    with pytest.raises(ValueError, match="min_words"):
        folio.passages("ACT I.\n", min_words=1.5)
    with pytest.raises(ValueError, match="seed"):
        folio.load_folio(seed=-1)
    with pytest.raises(ValueError, match="name"):
        corpora.folio_play("pericles")
    with pytest.raises(ValueError, match="y_true"):
        folio.confusion([0, 1], [0])
    with pytest.raises(TypeError, match="data"):
        folio.tfidf_baseline(["text"])


def test_a_changed_text_is_refused(monkeypatch):
    monkeypatch.setitem(corpora.FOLIO_SHA256, "hamlet", "0" * 64)
    with pytest.raises(ValueError, match="sha256"):
        corpora.folio_play("hamlet")


def test_scores_and_confusion_match_a_reference():
    y_true, y_pred = [0, 0, 1, 2], [0, 1, 1, 1]
    assert folio.confusion(y_true, y_pred).tolist() == [[1, 1, 0], [0, 1, 0], [0, 1, 0]]
    rng = np.random.default_rng(0)
    y_true, y_pred = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    s = folio.scores(y_true, y_pred)
    assert s["accuracy"] == pytest.approx(np.mean(y_true == y_pred))
    assert s["macro_f1"] == pytest.approx(f1_score(y_true, y_pred, average="macro"))
    assert folio.scores([0, 0], [1, 1])["macro_f1"] == 0.0


def test_the_baseline_is_deterministic_and_beats_chance(data):
    pred, pipe = folio.tfidf_baseline(data)
    again, _ = folio.tfidf_baseline(data)
    assert np.array_equal(pred, again) and pred.shape == data.test_labels.shape
    assert folio.scores(data.test_labels, pred)["accuracy"] > 1 / 3
    assert pipe.predict(data.train_texts[:50]).tolist() != [pred[0]] * 50
