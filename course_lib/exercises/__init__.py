"""Exercise checkers: call one on your function and read the verdict.

Example (chapter 2)::

    from course_lib.exercises import check_softmax

    def my_softmax(x):
        ...

    check_softmax(my_softmax)   # ✓, or what is wrong and a hint, in English and 中文

A checker runs your function on several cases, including edge cases, stops
it if it runs too long, and never raises, whatever your code does.
"""

from ._check import Verdict
from .ch02 import HAND_K, HAND_Q, check_attention, check_hand_weights, check_masked_softmax, check_softmax

__all__ = ["Verdict", "HAND_Q", "HAND_K", "check_hand_weights", "check_softmax",
           "check_masked_softmax", "check_attention"]
