"""Chapter 7's label-efficiency curve: the subsets, the steps, the two starts, the recipes and
their stored results, and bad input naming its argument."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch

from course_lib import repro
from course_lib.labs import capstone, label_efficiency as le, pretrain_reviews as pr


def test_subsets_are_distinct_sorted_draws_one_per_seed():
    n = 15363
    drawn = [le.subset(300, s, n) for s in le.SEEDS]
    for idx in drawn:
        assert len(idx) == 300 == len(np.unique(idx))
        assert (np.diff(idx) > 0).all() and idx.min() >= 0 and idx.max() < n
    assert not np.array_equal(drawn[0], drawn[1]) and not np.array_equal(drawn[1], drawn[2])
    assert np.array_equal(le.subset(300, 1, n), drawn[1])                    # the same draw again
    assert np.array_equal(le.subset(None, 2, n), np.arange(n))


def test_one_seeds_subsets_are_nested():
    # seed 0 draws one permutation: its 100 reviews are the first 100 of its 1000
    a, b = le.subset(100, 0, 5000), le.subset(1000, 0, 5000)
    assert set(a) <= set(b)


def test_steps_three_passes_between_60_and_300():
    assert le.steps_for(100, 15363) == 60                  # 3 * 100 / 32 = 9.4 passes' worth: the floor
    assert le.steps_for(1000, 15363) == 94                 # ceil(3000 / 32)
    assert le.steps_for(3000, 15363) == 282                # ceil(9000 / 32)
    assert le.steps_for(None, 15363) == 300                # the ceiling


def test_ten_recipes_registered():
    repro_names = {n for n in repro.RECIPES if n.startswith("ch07-finetune-")}
    assert repro_names == {f"ch07-finetune-{s}-{z}" for s in ("scratch", "pretrained")
                           for z in ("100", "300", "1000", "3000", "all")}
    for name in repro_names:
        r = repro.RECIPES[name]
        assert r.check_prefix == le.CHECK_PREFIX and r.curve_tolerance >= repro.CURVE_TOLERANCE_MIN


def test_the_data_is_chapter_8s_split_with_the_pretraining_vocabulary():
    d, c = le.reviews(), capstone.load_reviews()
    assert d.vocab.itos == pr.vocab().itos
    assert torch.equal(d.y_test, c.y_test) and len(d.y_test) == capstone.TEST_SIZE
    assert d.split.test == c.split.test


def test_pretrained_start_holds_the_stored_encoder_and_heads_differ_by_seed():
    d = le.reviews()
    model = le.build("pretrained", len(d.vocab))
    encoder = pr.load_encoder()
    for member in model.members:
        for (k, a), (_, b) in zip(member.bert.state_dict().items(), encoder.state_dict().items()):
            assert torch.equal(a, b), k
    heads = [m.classifier.weight for m in model.members]
    assert not torch.equal(heads[0], heads[1])
    scratch = le.build("scratch", len(d.vocab))
    assert not torch.equal(scratch.members[0].bert.tok_emb.weight, encoder.tok_emb.weight)


def test_stored_points_hold_three_seeds_and_their_steps():
    n_train = len(le.reviews().X_train)
    for start in le.STARTS:
        for size in le.SIZES:
            meta = repro.checkpoint_meta(le.checkpoint_name(start, size))
            assert sorted(meta["metrics"])[:3] == [f"accuracy_seed{s}" for s in le.SEEDS]
            assert meta["config"]["steps"] == le.steps_for(size, n_train)
            assert meta["config"]["seeds"] == list(le.SEEDS)


def test_stored_ngrams_on_all_reviews_equal_chapter_10s_baseline():
    # with every label the three seeds fit the same reviews: each equals the baseline fitted directly
    from course_lib.labs.textclf import ngram_baseline, scores
    split = capstone.load_reviews().split
    model = ngram_baseline(split.train, split.y_train, ngram_range=(1, 2))
    whole = scores(split.y_test, model.predict(split.test), 2)["accuracy"]
    m = repro.checkpoint_meta(le.checkpoint_name("scratch", None))["metrics"]
    assert [m[f"ngram_whole_seed{s}"] for s in le.SEEDS] == [whole] * 3


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="size"):
        le.subset(50, 0, 1000)
    with pytest.raises(ValueError, match="size"):
        le.subset(3000, 0, 1000)
    with pytest.raises(ValueError, match="start"):
        le.build("random", 10)
    with pytest.raises(TypeError, match="model"):
        le.fit_seeds(torch.nn.Linear(2, 2), "scratch", 100)
    with pytest.raises(ValueError, match="steps"):
        le.fit_seeds(le.Seeds([]), "scratch", 100, steps=61)
