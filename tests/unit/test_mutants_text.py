"""Tests that kill mutants of course_lib.analysis.edit and .maxmatch (make mutate, tools/mutate.py).

Every expected value is worked out by hand in the comment beside it.
"""

import pytest

from course_lib.analysis import maxmatch as mm
from course_lib.analysis.edit import alignment, levenshtein


def test_empty_against_empty():
    assert alignment("", "") == []
    assert levenshtein("", "") == 0


def test_dictionary_length_is_the_longest_word():
    words, longest = mm.build_dictionary([["研究", "生命"], ["起源", "研究生", "命"]])
    assert words == frozenset({"研究", "生命", "起源", "研究生", "命"})
    assert longest == 3


def test_bidirectional_keeps_fewer_words():
    # {"ab", "bcd"}, "abcd": forward takes "ab", then "c", "d" (3 words); backward "bcd", then "a" (2)
    assert mm.forward_max_match("abcd", {"ab", "bcd"}, 3) == ["ab", "c", "d"]
    assert mm.backward_max_match("abcd", {"ab", "bcd"}, 3) == ["a", "bcd"]
    assert mm.bidirectional_max_match("abcd", {"ab", "bcd"}, 3) == ["a", "bcd"]
    # the mirror: {"abc", "cd"}: forward "abc", "d" (2); backward "cd", then "b", "a" (3)
    assert mm.bidirectional_max_match("abcd", {"abc", "cd"}, 3) == ["abc", "d"]


def test_bidirectional_then_fewer_single_characters_then_backward():
    # {"ab", "cd", "bcd"}: forward "ab", "cd" (no single); backward "bcd", "a" (one single)
    assert mm.bidirectional_max_match("abcd", {"ab", "cd", "bcd"}, 3) == ["ab", "cd"]
    # {"ab", "cd", "abc"}: forward "abc", "d" (one single); backward "cd", "ab" (none)
    assert mm.bidirectional_max_match("abcd", {"ab", "cd", "abc"}, 3) == ["ab", "cd"]
    # {"ab", "bc"}, "abc": forward "ab", "c"; backward "a", "bc": a tie in both, so backward
    assert mm.bidirectional_max_match("abc", {"ab", "bc"}, 2) == ["a", "bc"]


def test_a_longest_word_past_the_end_of_the_text():
    # max_len 5 on a text of 2 characters: the whole text is tried first
    assert mm.forward_max_match("ab", {"ab"}, 5) == ["ab"]
    assert mm.backward_max_match("ab", {"ab"}, 5) == ["ab"]


def test_dictionary_refuses_a_clause_given_as_a_string_and_says_so_first():
    with pytest.raises(ValueError, match=r"^clauses\[1\] must be a non-empty list"):
        mm.build_dictionary([["研究"], "生命"])
    with pytest.raises(TypeError, match="^clauses must be an iterable of clauses"):
        mm.build_dictionary("研究 生命")
    with pytest.raises(ValueError, match="^clauses must hold at least one clause"):
        mm.build_dictionary([])


def test_matchers_name_their_bad_argument_and_what_came():
    with pytest.raises(ValueError, match="^max_len must be"):
        mm.forward_max_match("ab", {"ab"}, 0)
    with pytest.raises(TypeError, match="^dictionary must be a set of words, got list$"):
        mm.backward_max_match("ab", ["ab"], 2)
