"""course_lib.analysis.ngram: the unigram/bigram baselines and bits per character of chapter 7,
checked against values computed by hand."""

import math

import numpy as np
import pytest
import torch

from course_lib.analysis import ngram

# A tiny alphabet a=0, b=1, c=2 (V = 3). Training text "abab", held-out text "abc":
# the targets are "b" and "c" (the first held-out token is never predicted).
TRAIN, HELD, V = [0, 1, 0, 1], [0, 1, 2], 3


def test_unigram_add_one_by_hand():
    # counts a 2, b 2, c 0; N = 4; p(w) = (c(w) + 1) / (4 + 3)
    nll, n = ngram.ngram_nll(TRAIN, HELD, V, order=1)
    assert n == 2
    assert nll == pytest.approx(-math.log(3 / 7) - math.log(1 / 7), abs=1e-12)


def test_bigram_add_one_by_hand():
    # pairs ab, ba, ab -> c(a,b) = 2, c(b,a) = 1; histories c(a) = 2, c(b) = 1
    # p(b|a) = (2 + 1) / (2 + 3) = 3/5, p(c|b) = (0 + 1) / (1 + 3) = 1/4
    nll, n = ngram.ngram_nll(TRAIN, HELD, V, order=2)
    assert n == 2
    assert nll == pytest.approx(math.log(5 / 3) + math.log(4), abs=1e-12)


def test_add_alpha_and_tensors():
    # alpha = 0.5: p(b|a) = 2.5 / 3.5, p(c|b) = 0.5 / 2.5
    nll, _ = ngram.ngram_nll(torch.tensor(TRAIN), np.array(HELD), V, order=2, alpha=0.5)
    assert nll == pytest.approx(-math.log(2.5 / 3.5) - math.log(0.5 / 2.5), abs=1e-12)


def test_perplexity_and_bits_per_char_by_hand():
    nll = math.log(5 / 3) + math.log(4)
    assert ngram.perplexity(nll, 2) == pytest.approx(math.sqrt(5 / 3 * 4), abs=1e-12)
    # the same nats spread over 4 characters (e.g. two 2-character BPE tokens)
    assert ngram.bits_per_char(nll, 4) == pytest.approx(math.log2(5 / 3 * 4) / 4, abs=1e-12)
    assert ngram.bits_per_char(2 * math.log(2), 2) == 1.0      # two fair coin flips, one per character


def test_bad_input():
    with pytest.raises(ValueError, match="order"):
        ngram.ngram_nll(TRAIN, HELD, V, order=3)
    with pytest.raises(ValueError, match="eval_ids"):
        ngram.ngram_nll(TRAIN, [0, 5], V, order=1)
    with pytest.raises(ValueError, match="eval_ids"):
        ngram.ngram_nll(TRAIN, [0], V, order=1)
    with pytest.raises(TypeError, match="train_ids"):
        ngram.ngram_nll([0.5, 1.0], HELD, V, order=1)
    with pytest.raises(ValueError, match="alpha"):
        ngram.ngram_nll(TRAIN, HELD, V, order=1, alpha=0)
    with pytest.raises(ValueError, match="vocab_size"):
        ngram.ngram_nll(TRAIN, HELD, 0, order=1)
    with pytest.raises(ValueError, match="nll"):
        ngram.perplexity(-1.0, 2)
    with pytest.raises(ValueError, match="n_chars"):
        ngram.bits_per_char(1.0, 0)
    with pytest.raises(ValueError, match="nll"):
        ngram.bits_per_char(float("nan"), 3)
