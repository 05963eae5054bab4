"""The shared kit of the test suite (``tests/unit``, ``tests/chapters``, ``tests/book``).

For the exercise-checker tests (``tests/chapters/test_exercises*.py``, which
import it as ``from conftest import ...``): typical wrong learners (a stub, a
function that raises, one that forgets to return), a hypothesis strategy for
"anything a learner's function might return or raise", the assertion that a
verdict names the right mistake, and the two tests every chapter's checkers
get (:func:`wrong_submissions_test`, :func:`never_raises_test`).
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def stub(*args):
    raise NotImplementedError


def raises(*args):
    raise ValueError("boom")


def returns_none(*args):
    return None


def anything():
    """Any value a learner's function might return."""
    arrays = st.integers(0, 3).flatmap(
        lambda n: st.lists(st.integers(1, 3), min_size=n, max_size=n)).map(lambda shape: np.full(shape, 0.5))
    return st.one_of(st.none(), st.text(max_size=5), st.integers(), st.floats(), arrays,
                     st.just(np.array([np.nan, np.inf])), st.just(object()),
                     st.lists(st.floats(), max_size=4), st.tuples(arrays, arrays),
                     st.just({"a": 1}), st.just(...), st.complex_numbers(max_magnitude=10))


#: Exceptions a learner's function might raise (None: it returns instead).
ERRORS = st.sampled_from([None, ValueError, ZeroDivisionError, KeyError, NotImplementedError,
                          MemoryError, RecursionError, SystemExit])


def learner(result, error):
    """A learner's function that returns ``result``, or raises ``error`` if given."""
    def fn(*args):
        if error is not None:
            raise error("learner code failed")
        return result
    return fn


def wrong_cases(table: dict) -> list:
    """Flatten ``{name: (checker, [(learner, pattern), ...])}`` into test parameters."""
    return [(name, check, fn, match) for name, (check, subs) in table.items() for fn, match in subs]


def assert_says(verdict, match: str, name: str = "") -> None:
    """The verdict fails, lists a problem, and its text matches ``match``."""
    assert not verdict.ok
    assert verdict.problems
    assert re.search(match, repr(verdict), re.M), f"{name}: {verdict!r} does not say {match!r}"


def wrong_submissions_test(table: dict):
    """The test that every typical wrong answer in ``table`` gets the right message.

    ``table`` is ``{name: (checker, [(learner, pattern), ...])}``; use as
    ``test_wrong_submissions_get_the_right_message = wrong_submissions_test(WRONG)``.
    """
    cases = wrong_cases(table)

    @pytest.mark.parametrize("name,check,fn,match", cases, ids=[f"{c[0]}-{i}" for i, c in enumerate(cases)])
    def test_wrong_submissions_get_the_right_message(name, check, fn, match):
        assert_says(check(fn), match, name)
    return test_wrong_submissions_get_the_right_message


def never_raises_test(coding=(), by_hand=(), results=None):
    """The hypothesis test that no checker ever raises, whatever the learner does.

    Args:
        coding: checkers of a learner's *function* (it returns anything or raises).
        by_hand: checkers of a learner's *value* (anything at all).
        results: the hypothesis strategy of returned values; :func:`anything` by default.
    """
    from course_lib.chapters._check import Verdict

    @settings(max_examples=40, deadline=None)
    @given(result=anything() if results is None else results, error=ERRORS)
    def test_no_checker_ever_raises(result, error):
        fn = learner(result, error)
        verdicts = [check(fn) for check in coding] + [check(result) for check in by_hand]
        for verdict in verdicts:
            assert isinstance(verdict, Verdict) and isinstance(repr(verdict), str)
            assert isinstance(verdict._repr_markdown_(), str)
    return test_no_checker_ever_raises


def right_answers_test(table: dict):
    """The test that every right answer in ``table`` (``{name: (checker, answer)}``) gets ✓."""
    @pytest.mark.parametrize("name", table)
    def test_right_answers_pass(name):
        check, answer = table[name]
        verdict = check(answer)
        assert verdict.ok, f"{name}: {verdict!r}"
        assert repr(verdict).startswith("✓")
    return test_right_answers_pass
