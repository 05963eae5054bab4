"""Chapter 5's grapheme-to-phoneme lab (course_lib.labs.g2p*) on the CMU Pronouncing Dictionary."""

import pytest
import torch

from course_lib import repro
from course_lib.labs import g2p as G
from course_lib.labs import g2p_data as GD
from course_lib.labs import g2p_eval as GE

TOY = """\
'bout B AW1 T
a AH0
a(2) EY1
abc EY1 B IY1 S IY1
read R IY1 D
read(2) R EH1 D
read(3) R IY1 D
co-op K OW0 AA1 P
d'artagnan D AH0 R T AE1 NG Y AH0 N # foreign french
ms. M IH1 Z
mp3 EH1 M P IY1 TH R IY1
porthos P AO0 R T AO1 S # foreign french
"""


def test_parse_keeps_letters_only_strips_stress_and_merges_alternates():
    lex = GD.parse(TOY)
    assert sorted(lex) == ["a", "abc", "porthos", "read"]          # 'bout, co-op, d'artagnan, ms., mp3 dropped
    assert lex["read"] == [("R", "IY", "D"), ("R", "EH", "D")]       # read(3) repeats read once stress is gone
    assert lex["a"] == [("AH",), ("EY",)]                            # the main entry first
    assert lex["porthos"] == [("P", "AO", "R", "T", "AO", "S")]      # the comment is not a phone


def test_parse_drops_overlong_entries_and_names_a_line_without_phones():
    long_word = "a" * (GD.MAX_LETTERS + 1)
    assert GD.parse(f"{long_word} AH0\nab AE1 B\n") == {"ab": [("AE", "B")]}
    assert GD.parse("ab " + " ".join(["B"] * (GD.MAX_PHONEMES + 1)) + "\n") == {}
    with pytest.raises(ValueError, match="line 2 has a word but no phones"):
        GD.parse("ab AE1 B\ncd\n")
    with pytest.raises(ValueError, match="line 1 has a phone outside the 39 ARPAbet phonemes"):
        GD.parse("ab AE1 QQ\n")


def test_the_real_dictionary_uses_the_39_phonemes():
    lex, train, test = GD.load_split()
    phones = {p for prons in lex.values() for pr in prons for p in pr}
    assert phones == set(GD.PHONEMES) and len(GD.PHONEMES) == 39
    assert lex["read"][:2] == [("R", "EH", "D"), ("R", "IY", "D")]


def test_split_is_by_word_disjoint_complete_and_deterministic():
    lex, train, test = GD.load_split()
    assert len(test) == GD.N_TEST
    assert not set(train) & set(test)
    assert set(train) | set(test) == set(lex)
    GD._split.cache_clear()
    lex2, train2, test2 = GD.load_split()
    assert (train2, test2) == (train, test)


def test_make_batch_teacher_forcing_layout():
    letters, phonemes = GD.build_vocabs()
    lex = {"ab": [("AE", "B")], "a": [("AH",), ("EY",)]}
    src, tgt_in, tgt_out = GD.make_batch(["ab", "a"], lex, letters, phonemes)
    assert src.tolist() == [[3, 4], [3, 0]]                          # a = 3, b = 4 after <pad> <sos> <eos>
    ae, b, ah = (phonemes.stoi[p] for p in ("AE", "B", "AH"))
    assert tgt_in.tolist() == [[1, ae, b], [1, ah, 0]]
    assert tgt_out.tolist() == [[ae, b, 2], [ah, 2, 0]]


def test_edit_distance_by_hand():
    assert GE.edit_distance(("K", "AE", "T"), ("K", "AE", "T")) == 0
    assert GE.edit_distance(("K", "AE", "T"), ("K", "AH", "T")) == 1          # one substitution
    assert GE.edit_distance(("K", "AE", "T"), ("K", "AE", "T", "S")) == 1     # one insertion
    assert GE.edit_distance(("K", "AE", "T"), ()) == 3
    assert GE.edit_distance(("S", "IH", "T", "IH", "NG"), ("K", "IH", "T", "AH", "N")) == 3   # three substitutions


def test_per_and_wer_by_hand_with_several_references():
    refs = [[("R", "IY", "D"), ("R", "EH", "D")],        # read: either is right
            [("K", "AE", "T")],                           # cat
            [("D", "AO", "G"), ("D", "AA", "G")]]         # dog
    # read -> the second reference exactly; cat -> one substitution (a near miss is still a word error);
    # dog -> one deletion from either reference (both of length 3).
    preds = [("R", "EH", "D"), ("K", "AH", "T"), ("D", "G")]
    got = GE.score(preds, refs)
    assert got["wer"] == pytest.approx(2 / 3)
    assert got["per"] == pytest.approx((0 + 1 + 1) / (3 + 3 + 3))
    # the closest reference decides the length: 'D AO G Z' is 1 from D AO G (length 3), not 2 from D AA G
    assert GE.closest(("D", "AO", "G", "Z"), refs[2]) == (1, 3)
    assert GE.score([("D", "AO", "G")], [refs[2]]) == {"per": 0.0, "wer": 0.0}
    # references of different lengths: the denominator is the length of the closest one (3), not the first (4)
    uneven = [("D", "AA", "G", "Z"), ("D", "AO", "G")]
    assert GE.closest(("D", "AO", "K"), uneven) == (1, 3)
    assert GE.score([("D", "AO", "K")], [uneven]) == {"per": 1 / 3, "wer": 1.0}


def test_word_groups_follow_the_stated_rule():
    common = {"cat", "read"}
    assert GE.word_group("read", 2, common) == "homograph"
    assert GE.word_group("cat", 1, common) == "common word"
    assert GE.word_group("kowalski", 1, common) == "foreign spelling"
    assert GE.word_group("schmidt", 1, common) == "foreign spelling"
    assert GE.word_group("smith", 1, common) == "other"


@pytest.mark.parametrize("call,err,match", [
    (lambda: GD.strip_stress("ah0"), ValueError, "phone must be an ARPAbet phone"),
    (lambda: GD.parse(None), TypeError, "text must be the dictionary as a string"),
    (lambda: GD.encode_words("cat", GD.build_vocabs()[0]), TypeError, "words must be a non-empty list"),
    (lambda: GD.encode_words(["Cat"], GD.build_vocabs()[0]), ValueError, "words must hold words of letters a-z"),
    (lambda: GD.make_batch(["cat"], {}, *GD.build_vocabs()), KeyError, "words must be in lexicon"),
    (lambda: GE.edit_distance("KAT", ("K",)), TypeError, "a must be a sequence of phonemes"),
    (lambda: GE.closest(("K",), []), TypeError, "references must be a non-empty list"),
    (lambda: GE.score([("K",)], []), ValueError, "references must hold one list of pronunciations per prediction"),
    (lambda: GE.word_group("cat", 0, set()), ValueError, "n_pronunciations must be an int >= 1"),
    (lambda: GE.word_group("cat", 1, ["cat"]), TypeError, "common must be a set"),
    (lambda: G.make_model("lstm"), ValueError, "kind must be one of"),
    (lambda: G.g2p_loss(None, None, label_smoothing=1.5), ValueError, r"label_smoothing must be in \[0, 1\)"),
    (lambda: G.predict(None, ["cat"], beam_width=0), ValueError, "beam_width must be an integer >= 1"),
])
def test_bad_input_is_named(call, err, match):
    with pytest.raises(err, match=match):
        call()


@pytest.mark.parametrize("kind", ["transformer", "rnn"])
def test_stored_checkpoint_metrics_recompute_from_the_weights(kind):
    name = G.RECIPES[kind]
    model = G.make_model(kind)
    meta = repro.load_checkpoint(name, model, dtype=torch.float64)
    lex, _, test = GD.load_split()
    got = G.evaluate(model, test, lex)
    for metric in ("per", "wer"):
        assert got[metric] == pytest.approx(meta["metrics"][metric], abs=1e-12)
    assert meta["config"]["test_words"] == len(test)


def test_levenshtein_is_the_one_edit_distance_of_chapters_5_and_10():
    from course_lib.analysis.edit import levenshtein
    from course_lib.labs import speech
    # worked by hand: kitten -> sitting is 3 (k->s, e->i, +g); flaw -> lawn is 2 (-f, +n)
    assert levenshtein("kitten", "sitting") == 3 and levenshtein("flaw", "lawn") == 2
    assert levenshtein((), ("AH",)) == 1 and levenshtein(("AH",), ()) == 1
    assert GE.edit_distance(("F", "L", "AO"), ("L", "AO", "N")) == 2
    assert speech.edit_distance("flaw", "lawn") == 2
