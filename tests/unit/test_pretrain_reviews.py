"""Chapter 7's in-domain masked-LM pretraining: the corpus refuses a held-out review, the
vocabulary leaves at most 1 % of held-out review characters unknown, the counting baselines
match their formulas worked by hand, and bad input names its argument."""

import math
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch

from course_lib.labs import capstone, pretrain_reviews as pr
from course_lib.labs.textclf import SplitTexts
from course_lib.text import BERT_SPECIALS, Vocab


def _split(train, test):
    return SplitTexts(list(train), np.zeros(len(train), dtype=np.int64), list(test),
                      np.zeros(len(test), dtype=np.int64), {})


NEWS = ["人民日报报道了今天的新闻内容", "经济发展稳中有进成绩显著"]


def test_corpus_keeps_the_training_side_and_no_held_out_review():
    out = pr.corpus(_split(["这本书很好看", "酒店服务太差了"], ["留出的评论一条很长"]), NEWS)
    assert out["reviews"] == ["这本书很好看", "酒店服务太差了"]
    assert out["news"] == NEWS
    assert out["held_out"] == ["留出的评论一条很长"]
    assert out["dropped"] == 0


def test_a_planted_held_out_review_in_the_training_reviews_fails():
    held = "留出的评论一条很长"
    with pytest.raises(ValueError, match="held-out reviews"):
        pr.corpus(_split(["这本书很好看", held], [held, "另一条留出评论"]), NEWS)


def test_a_planted_held_out_review_in_the_news_fails():
    held = "留出的评论一条很长"
    with pytest.raises(ValueError, match="held-out reviews"):
        pr.corpus(_split(["这本书很好看"], [held]), NEWS + [held])
    # as a piece of a longer paragraph (its second piece of 62 characters)
    with pytest.raises(ValueError, match="held-out review"):
        pr.corpus(_split(["这本书很好看"], [held]), NEWS + ["新" * 62 + held])


def test_a_training_review_ending_with_a_held_out_one_loses_that_piece():
    held = "留出的评论一条很长"
    out = pr.corpus(_split(["好" * 62 + held, "这本书很好看"], [held]), NEWS)
    assert out["reviews"] == ["好" * 62, "这本书很好看"]
    assert out["dropped"] == 1


def test_pieces_cut_whole_texts_and_drop_short_tails():
    text = "一" * 62 + "二" * 62 + "三" * (pr.MIN_PIECE - 1)
    assert pr.pieces([text, "短"]) == ["一" * 62, "二" * 62, "短"]
    assert pr.pieces(["四" * 70], size=62) == ["四" * 62, "四" * 8]


def test_real_corpus_is_disjoint_from_the_held_out_reviews_and_covers_them():
    c = pr.corpus()
    split = capstone.load_reviews().split
    held = set(split.test)
    assert held.isdisjoint(c["reviews"] + c["news"])
    assert set(c["held_out"]).isdisjoint(c["reviews"] + c["news"])
    # every training review is read whole: its characters, less only the dropped pieces
    read = sum(len(p) for p in c["reviews"])
    total = sum(len(t) for t in split.train)
    assert total - read < 62 * (c["dropped"] + 1) + pr.MIN_PIECE * len(split.train)


def test_vocabulary_leaves_at_most_one_percent_of_held_out_characters_unknown():
    split = capstone.load_reviews().split
    share = pr.unk_share(pr.vocab(), split.test)
    assert share <= pr.MAX_UNK == 0.01
    # the classifier vocabulary of chapter 8 alone, on the same characters, leaves more out
    assert pr.unk_share(capstone.load_reviews().vocab, split.test) > share


def test_unk_share_counts_tokens_outside_the_vocabulary():
    v = Vocab.build(["好书"], specials=BERT_SPECIALS)
    assert pr.unk_share(v, ["好书差", "坏"]) == 2 / 4


def test_baselines_match_their_formulas_by_hand():
    train = ["好书", "好书", "好看"]                                  # a b, a b, a c
    v = Vocab.build(train, specials=BERT_SPECIALS)
    V = len(v)
    X, _ = pr.rows(v, ["好书"])
    labels = torch.full_like(X, -100)
    labels[0, 1], labels[0, 2] = X[0, 1], X[0, 2]                 # predict a (after <cls>) and b (after a)
    out = pr._baselines(v, train, X, labels)
    n = 6 + V                                                     # a 3, b 2, c 1, each count + 1
    uni_a, uni_b = 4 / n, 3 / n
    # Witten-Bell: <cls> was followed 3 times by 1 kind; a 3 times by 2 kinds (b twice, c once)
    p_a = (3 + 1 * uni_a) / (3 + 1)
    p_b = (2 + 2 * uni_b) / (3 + 2)
    assert out["unigram_loss"] == pytest.approx(-(math.log(uni_a) + math.log(uni_b)) / 2, rel=1e-12)
    assert out["bigram_loss"] == pytest.approx(-(math.log(p_a) + math.log(p_b)) / 2, rel=1e-12)


def test_learning_rate_schedule():
    lr, warm, steps = pr.PRETRAIN["lr"], pr.PRETRAIN["warmup"], pr.PRETRAIN["steps"]
    assert pr.learning_rate(0) == pytest.approx(lr / warm)
    assert pr.learning_rate(warm - 1) == pytest.approx(lr)
    assert pr.learning_rate(steps) == pytest.approx(lr / 10)


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="split"):
        pr.corpus("not a split", NEWS)
    with pytest.raises(TypeError, match="texts"):
        pr.pieces("a string")
    with pytest.raises(ValueError, match="steps"):
        pr.pretrain(pr.PRETRAIN["steps"] + 1)
    with pytest.raises(TypeError, match="mlm"):
        pr.held_out_scores(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="texts"):
        pr.unk_share(Vocab.build(["好书"], specials=BERT_SPECIALS), [""])


def test_held_out_scores_of_a_model_at_bert_init_is_the_uniform_guess_with_both_baselines():
    # the recipe's own path (baselines=True): a model drawn with BERT's initialisation and never trained
    # gives every character about the same logit, so its loss is ln V; the counting baselines come back
    # beside it, each below the uniform guess, the bigram below the unigram
    v = pr.vocab()
    s = pr.held_out_scores(pr.build_mlm(len(v)), v)
    assert s["mlm_loss"] == pytest.approx(math.log(len(v)), abs=0.05)
    assert s["predicted"] > 0
    assert s["bigram_loss"] < s["unigram_loss"] < math.log(len(v))
