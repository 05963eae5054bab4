"""Shared pieces of the exercise-checker tests.

Typical wrong learners (a stub, a function that raises, one that forgets to
return), a hypothesis strategy for "anything a learner's function might
return or raise", and the assertion that a verdict names the right mistake.
"""

import re

import numpy as np
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
