"""Chapter 7's word segmenter (course_lib.labs.segmenter) and its baseline, dictionary maximum matching
(course_lib.analysis.maxmatch): hand-worked segmentations, the constrained decoder against brute force,
bad input, and the stored checkpoint's metrics recomputed from its weights."""

import itertools
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
import torch

from course_lib import repro
from course_lib.analysis import maxmatch as mm
from course_lib.labs import segmenter as sg
from course_lib.labs import segmenter_eval as se
from course_lib.labs.tagging_data import TAGS, build_vocabs, load_split, word_tags

# The classic ambiguity: 研究生命起源 "study the origin of life". With 研究生 ("graduate student") in
# the dictionary, forward matching grabs it; backward matching finds 起源, then 生命, then 研究.
WORDS = frozenset({"研究", "研究生", "生命", "命", "起源"})
# 结合成分子: "combine into molecules"; both directions are wrong in different ways.
WORDS2 = frozenset({"结合", "合成", "成分", "分子"})


def test_forward_and_backward_differ_on_the_classic_string():
    assert mm.forward_max_match("研究生命起源", WORDS, 3) == ["研究生", "命", "起源"]
    assert mm.backward_max_match("研究生命起源", WORDS, 3) == ["研究", "生命", "起源"]
    # equal word counts (3), forward has one single character, backward none: backward wins
    assert mm.bidirectional_max_match("研究生命起源", WORDS, 3) == ["研究", "生命", "起源"]


def test_max_matching_by_hand_second_string():
    assert mm.forward_max_match("结合成分子", WORDS2, 2) == ["结合", "成分", "子"]
    assert mm.backward_max_match("结合成分子", WORDS2, 2) == ["结", "合成", "分子"]
    # both 3 words with one single character each: the tie goes to backward
    assert mm.bidirectional_max_match("结合成分子", WORDS2, 2) == ["结", "合成", "分子"]


def test_bidirectional_prefers_fewer_words():
    words = frozenset({"ab", "abc", "cd", "de", "bcde"})
    # forward: abc / de (2 words); backward: a / bcde (2 words, one single) -> forward has no single
    assert mm.forward_max_match("abcde", words, 4) == ["abc", "de"]
    assert mm.backward_max_match("abcde", words, 4) == ["a", "bcde"]
    assert mm.bidirectional_max_match("abcde", words, 4) == ["abc", "de"]
    words = frozenset({"ab", "cdef", "abc"})
    # forward: abc / d / e / f (4); backward: ab / cdef (2): fewer words wins
    assert mm.forward_max_match("abcdef", words, 4) == ["abc", "d", "e", "f"]
    assert mm.bidirectional_max_match("abcdef", words, 4) == ["ab", "cdef"]


def test_max_len_limits_the_match_and_unknown_characters_stand_alone():
    assert mm.forward_max_match("研究生命起源", WORDS, 2) == ["研究", "生命", "起源"]
    assert mm.forward_max_match("我研究", WORDS, 3) == ["我", "研究"]
    assert mm.backward_max_match("我们", frozenset(), 4) == ["我", "们"]


def test_build_dictionary():
    words, n = mm.build_dictionary([["迈向", "充满", "希望"], ["的", "新世纪"]])
    assert words == {"迈向", "充满", "希望", "的", "新世纪"} and n == 3


@pytest.mark.parametrize("call, err, match", [
    (lambda: mm.forward_max_match("", WORDS, 3), TypeError, "text"),
    (lambda: mm.backward_max_match(["研究"], WORDS, 3), TypeError, "text"),
    (lambda: mm.forward_max_match("研究", list(WORDS), 3), TypeError, "dictionary"),
    (lambda: mm.bidirectional_max_match("研究", WORDS, 0), ValueError, "max_len"),
    (lambda: mm.build_dictionary("研究"), TypeError, "clauses"),
    (lambda: mm.build_dictionary([["研究", ""]]), ValueError, r"clauses\[0\]"),
    (lambda: mm.build_dictionary([]), ValueError, "clauses"),
    (lambda: sg.argmax_tags(torch.zeros(3, 5)), ValueError, "scores"),
    (lambda: sg.constrained_tags(torch.zeros(0, 4)), ValueError, "scores"),
    (lambda: sg.viterbi(torch.zeros(3, 4), allowed=np.ones((3, 3), bool)), ValueError, "allowed"),
    (lambda: sg.BertTagger(torch.nn.Linear(2, 2)), TypeError, "bert"),
    (lambda: sg.make_tagger(0), ValueError, "vocab_size"),
    (lambda: sg.make_batch("迈向", None), TypeError, "batch_clauses"),
    (lambda: sg.train_batches(10, 0), ValueError, "steps"),
    (lambda: se.word_scores([["迈向"]], []), ValueError, "predicted_words"),
    (lambda: se.word_scores([["迈", "去"]], [["迈向"]]), ValueError, r"predicted_words\[0\]"),
    (lambda: se.segmentation_metrics([["迈向"]], [["迈向"]], ["迈向"]), TypeError, "known_words"),
])
def test_bad_input_is_named(call, err, match):
    with pytest.raises(err, match=match):
        call()


def _well_formed(tags):
    return tags[0] in "BS" and tags[-1] in "ES" and all(
        (b in "ME") == (a in "BM") for a, b in zip(tags, tags[1:]))


def _brute_force(scores):
    n = scores.shape[0]
    best, best_tags = -np.inf, None
    for seq in itertools.product(range(4), repeat=n):        # in the order of TAGS: ties to the earlier
        tags = "".join(TAGS[i] for i in seq)
        if _well_formed(tags):
            total = sum(scores[i, j] for i, j in enumerate(seq))
            if total > best:
                best, best_tags = total, list(tags)
    return best_tags


def test_well_formed_matches_the_allowed_table():
    # the brute force's own rule, checked against the transitions written out by hand
    assert _well_formed("BES") and _well_formed("BMMES") and _well_formed("S")
    for bad in ("B", "M", "E", "SM", "SE", "BB", "BS", "EM", "MB", "BMS"):
        assert not _well_formed(bad), bad


def test_constrained_decoder_equals_brute_force_on_random_inputs():
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = 1 + trial % 6
        scores = torch.from_numpy(rng.normal(size=(n, 4)) * (1 + trial % 3)).log_softmax(-1)
        assert sg.constrained_tags(scores) == _brute_force(scores.numpy()), (trial, scores)


def test_constrained_decoding_repairs_what_argmax_breaks():
    # argmax says B B S (ill-formed); the best well-formed sequence is B E S
    logp = torch.tensor([[0.0, -5, -5, -1], [-0.5, -3, -1, -4], [-3, -3, -2, 0.0]])
    assert sg.argmax_tags(logp) == ["B", "B", "S"]
    assert sg.constrained_tags(logp) == ["B", "E", "S"]


def test_word_scores_by_hand():
    gold = [["迈向", "充满", "希望"]]
    got = se.word_scores([["迈向", "充", "满", "希望"]], gold)        # 2 of 4 predicted right, 2 of 3 gold found
    assert got["word_precision"] == 0.5 and got["word_recall"] == pytest.approx(2 / 3)
    assert got["word_f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


def test_tagger_output_has_one_row_per_character():
    vocab = build_vocabs([["迈向", "充满", "希望"], ["的", "新世纪"]], min_freq=1)[0]
    model = sg.make_tagger(len(vocab)).double()
    clauses = [["迈向", "充满"], ["的", "新", "世纪", "希望"]]
    logps = sg.tag_log_probs(model, clauses, vocab)
    assert [tuple(lp.shape) for lp in logps] == [(4, 4), (6, 4)]
    ids, mask, tags = sg.make_batch(clauses, vocab)
    assert tags[0].tolist() == [0, 2, 0, 2, -100, -100] and mask.sum().item() == 10


@pytest.fixture(scope="module")
def stored():
    from course_lib.labs.tagging import eval_clauses

    train_c, held, _ = load_split()
    vocab = build_vocabs(train_c, sg.CONFIG["min_freq"])[0]
    model = sg.make_tagger(len(vocab))
    meta = repro.load_checkpoint(sg.NAME, model, dtype=torch.float64)
    known = {w for c in train_c for w in c}
    return meta, sg.evaluate(model, eval_clauses(held), vocab, known), train_c, eval_clauses(held)


def test_stored_metrics_recompute_from_the_weights(stored):
    meta, metrics, _, _ = stored
    assert meta["config"]["d_model"] == sg.CONFIG["d_model"] and meta["config"]["steps"] == sg.CONFIG["steps"]
    assert set(metrics) == set(meta["metrics"])
    for k, v in meta["metrics"].items():
        assert metrics[k] == pytest.approx(v, rel=0, abs=1e-9), k
    assert metrics["wrong_length"] == 0 and metrics["constrained_wrong_length"] == 0


def test_word_f1_is_tagging_evals_and_maxmatch_runs_on_the_same_clauses(stored):
    from course_lib.labs.tagging_eval import score

    _, _, train_c, ev = stored
    words, n = mm.build_dictionary(train_c)
    pred = [mm.bidirectional_max_match("".join(c), words, n) for c in ev]
    assert ["".join(p) for p in pred] == ["".join(c) for c in ev]
    ours = se.segmentation_metrics(pred, ev, words)
    assert ours["word_f1"] == pytest.approx(score([word_tags(p) for p in pred], ev)["word_f1"], abs=1e-12)


def test_the_encoder_decoders_printed_metrics_recompute(stored):
    _, _, train_c, ev = stored
    got = se.encoder_decoder_metrics(ev, frozenset(w for c in train_c for w in c))
    assert got == pytest.approx(se.ENCODER_DECODER, rel=0, abs=1e-12)
    stored_ch05 = repro.checkpoint_meta("ch05-segment-smooth")["metrics"]
    assert got["word_f1"] == pytest.approx(stored_ch05["word_f1"], abs=1e-12)
    assert got["tag_accuracy"] == pytest.approx(stored_ch05["tag_accuracy"], abs=1e-12)
    assert got["wrong_length"] == 90           # 4.3 % of the 2101 clauses, as chapter 5 printed


def test_the_recipe_is_registered():
    assert repro.RECIPES[sg.NAME].chapter == "ch07"
