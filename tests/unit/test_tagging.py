"""Chapter 5's segmentation lab (course_lib.labs.tagging) on People's Daily 1998."""

import pytest
import torch

from course_lib import repro
from course_lib.labs import tagging as G
from course_lib.labs import tagging_data as GD
from course_lib.labs import tagging_eval as GE


def test_word_tags_and_back():
    words = ["迈向", "充满", "希望", "的", "新世纪"]
    tags = GD.word_tags(words)
    assert tags == ["B", "E", "B", "E", "B", "E", "S", "B", "M", "E"]
    assert GD.tags_to_words("".join(words), tags) == words


@pytest.mark.parametrize("tags,words", [
    ("BBES", ["甲", "乙丙", "丁"]),          # B B: a word that never ended is cut before the next B
    ("MMMM", ["甲乙丙丁"]),                 # no boundary at all
    ("SSSS", ["甲", "乙", "丙", "丁"]),
    ("EBEM", ["甲", "乙丙", "丁"]),          # E then B: a cut; M after E: a new word starts
    ("SMEB", ["甲", "乙丙", "丁"]),          # M after S: a new word starts too
])
def test_ill_formed_tags_still_segment(tags, words):
    assert GD.tags_to_words("甲乙丙丁", list(tags)) == words


@pytest.mark.parametrize("call,err,match", [
    (lambda: GD.word_tags("迈向"), TypeError, "words must be a non-empty list"),
    (lambda: GD.word_tags([]), TypeError, "words must be a non-empty list"),
    (lambda: GD.word_tags(["迈向", ""]), ValueError, "words must hold non-empty strings"),
    (lambda: GD.tags_to_words("", []), TypeError, "chars must be a non-empty string"),
    (lambda: GD.tags_to_words("甲乙", ["B"]), ValueError, r"one tag per character \(2\), got 1"),
    (lambda: GD.tags_to_words("甲乙", ["B", "X"]), ValueError, "tags must be among"),
    (lambda: GD.clauses([], min_chars=0), ValueError, "min_chars must be an integer >= 1"),
    (lambda: GD.clauses([], min_chars=5, max_chars=4), ValueError, "max_chars must be an integer >= 5"),
    (lambda: GD.make_batch([], None, None), TypeError, "batch_clauses must be a non-empty list"),
    (lambda: GE.fit_baseline([]), ValueError, "at least one clause"),
    (lambda: GE.baseline_tags({}, ""), TypeError, "chars must be a non-empty string"),
    (lambda: G.make_segmenter(3), ValueError, "src_vocab_size must be an integer >= 5"),
    (lambda: G.segment_loss(None, None, label_smoothing=1.0), ValueError, r"label_smoothing must be in \[0, 1\)"),
    (lambda: GE.score([["S"]], []), ValueError, "equally long and non-empty"),
    (lambda: G.predict_tags(None, [["甲"]], None, None, beam_width=0), ValueError, "beam_width must be an integer >= 1"),
])
def test_bad_input_is_named(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_clauses_split_at_punctuation_and_keep_lengths():
    para = [("迈向", "v"), ("充满", "v"), ("，", "w"), ("希望", "n"), ("的", "u"), ("新", "a"),
            ("世纪", "n"), ("。", "w"), ("好", "a")]
    assert GD.clauses([para], min_chars=1, max_chars=12) == [["迈向", "充满"], ["希望", "的", "新", "世纪"], ["好"]]
    assert GD.clauses([para], min_chars=4, max_chars=4) == [["迈向", "充满"]]


def test_the_split_holds_out_the_last_tenth_of_the_paragraphs():
    from course_lib.corpora import peoples_daily_tagged

    train, held, info = GD.load_split()
    paragraphs = peoples_daily_tagged()
    assert info == {"paragraphs": len(paragraphs), "first_held_out_paragraph": len(paragraphs) - len(paragraphs) // 10}
    assert held == GD.clauses(paragraphs[info["first_held_out_paragraph"]:])
    assert train == GD.clauses(paragraphs[:info["first_held_out_paragraph"]])
    assert all(GD.MIN_CHARS <= len("".join(c)) <= GD.MAX_CHARS for c in train[:500] + held[:500])


def test_batches_shift_the_tags():
    train = [["迈向", "的"], ["新", "世纪", "好"]]
    src_vocab, tgt_vocab = GD.build_vocabs(train, min_freq=1)
    assert tgt_vocab.itos == ["<pad>", "<sos>", "<eos>", "B", "M", "E", "S"] and src_vocab.unk_id == 3
    src, tgt_in, tgt_out = GD.make_batch(train + [["未", "知"]], src_vocab, tgt_vocab)
    B_, M_, E_, S_ = 3, 4, 5, 6
    assert src[0].tolist() == [src_vocab.stoi[c] for c in "迈向的"] + [0]
    assert src[2].tolist() == [3, 3, 0, 0]                              # unknown characters -> <unk>
    assert tgt_in[1].tolist() == [1, S_, B_, E_, S_]
    assert tgt_out[1].tolist() == [S_, B_, E_, S_, 2]
    assert tgt_in[0].tolist() == [1, B_, E_, S_, 0] and tgt_out[0].tolist() == [B_, E_, S_, 2, 0]
    assert M_ not in tgt_out.tolist()


def test_baseline_takes_each_characters_most_frequent_tag():
    # 中国人 = B E S, 中/国人 = S B E, 中国 = B E.  中: B B S -> B; 国: E B E -> E;
    # 人: S E, a tie, broken by the order B M E S -> E. Overall B 3, E 3, S 2: the tie -> B.
    train = [["中国", "人"], ["中", "国人"], ["中国"]]
    base = GE.fit_baseline(train)
    assert base == {"per_char": {"中": "B", "国": "E", "人": "E"}, "default": "B"}
    assert GE.baseline_tags(base, "中人猫") == ["B", "E", "B"]


def test_score_by_hand():
    gold = [["迈向", "的"], ["新", "世纪"]]                  # tags B E S | S B E
    pred = [["B", "E", "S"], ["B", "E", "S"]]
    s = GE.score(pred, gold)
    # clause 1 all right; clause 2: 新世 / 纪 against 新 / 世纪, no tag and no word right
    assert s == {"tag_accuracy": 3 / 6, "word_f1": 0.5, "exact_clauses": 0.5}
    short = GE.score([["B", "E"], ["S", "B", "E", "S"]], gold)   # one tag missing, one extra
    assert short["tag_accuracy"] == 5 / 6 and short["exact_clauses"] == 0.0


def test_training_steps_and_decoding_run():
    torch.set_num_threads(1)
    train = [["迈向", "的"], ["新", "世纪"], ["中国", "人民"]]
    src_vocab, tgt_vocab = GD.build_vocabs(train, min_freq=1)
    model = G.make_segmenter(len(src_vocab), seed=0)
    assert torch.all(model.src_embed.weight[0] == 0)
    losses = G.train_segmenter(model, train, src_vocab, tgt_vocab, 3, label_smoothing=0.1, batch_size=2)
    assert len(losses) == 3 and not model.training
    greedy = G.predict_tags(model, train, src_vocab, tgt_vocab)
    beam1 = G.predict_tags(model, train, src_vocab, tgt_vocab, beam_width=1)
    assert greedy == beam1 and len(greedy) == 3
    beam = G.predict_tags(model, train, src_vocab, tgt_vocab, beam_width=3)
    assert all(set(p) <= set(GD.TAGS) | {"?"} for p in beam)
    assert G.held_out_loss(model, train, src_vocab, tgt_vocab) > 0


def test_the_recipes_are_registered():
    for ls, name in G.RECIPES.items():
        assert name in repro.RECIPES and repro.RECIPES[name].chapter == "ch05"


def test_word_recall_splits_known_and_unknown_words():
    gold = [["迈向", "的"], ["新", "世纪"]]                  # tags B E S | S B E
    pred = [["B", "E", "S"], ["B", "E", "S"]]               # clause 2 cut 新世 / 纪: both its words missed
    known = {"迈向", "新"}
    assert GE.word_recall(pred, gold, known) == {"in_vocabulary": (1, 2), "out_of_vocabulary": (1, 2)}
    # a missing last tag is padded with S, so 的 is still found
    assert GE.word_recall([["B", "E"], ["S", "B", "E"]], gold, set()) == \
        {"in_vocabulary": (0, 0), "out_of_vocabulary": (4, 4)}
    with pytest.raises(TypeError, match="known_words must be a set"):
        GE.word_recall(pred, gold, ["迈向"])
    with pytest.raises(ValueError, match="equally long and non-empty"):
        GE.word_recall(pred, gold[:1], known)


def test_eval_clauses_take_every_fourth():
    held = [[str(i)] for i in range(10)]
    assert G.eval_clauses(held) == [["0"], ["4"], ["8"]]
    with pytest.raises(TypeError, match="held must be a non-empty list"):
        G.eval_clauses([])


def test_vocab_and_training_name_bad_input():
    with pytest.raises(TypeError, match="a clause must be a non-empty list of words"):
        GD.build_vocabs(["迈向的"])
    train = [["迈向", "的"]]
    src_vocab, tgt_vocab = GD.build_vocabs(train, min_freq=1)
    model = G.make_segmenter(len(src_vocab), seed=0)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        G.train_segmenter(model, train, src_vocab, tgt_vocab, 0, label_smoothing=0.1)
    with pytest.raises(TypeError, match="train_clauses must be a non-empty list"):
        G.train_segmenter(model, [], src_vocab, tgt_vocab, 1, label_smoothing=0.1)


def test_evaluate_is_greedy_beam_and_loss():
    torch.set_num_threads(1)
    train = [["迈向", "的"], ["新", "世纪"], ["中国", "人民"]]
    src_vocab, tgt_vocab = GD.build_vocabs(train, min_freq=1)
    model = G.make_segmenter(len(src_vocab), seed=1).double().eval()
    m = G.evaluate(model, train, src_vocab, tgt_vocab, beam_width=2)
    greedy = GE.score(G.predict_tags(model, train, src_vocab, tgt_vocab), train)
    beam = GE.score(G.predict_tags(model, train, src_vocab, tgt_vocab, 2), train)
    assert m == {**greedy, **{f"beam_{k}": v for k, v in beam.items()},
                 "held_out_loss": G.held_out_loss(model, train, src_vocab, tgt_vocab)}
