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
from .ch01 import (ACC_PRED, ACC_TARGET, GRAD_W, GRAD_X, check_accuracy_by_length, check_additive_scores,
                   check_gradient_factor)
from .ch02 import HAND_K, HAND_Q, check_attention, check_hand_weights, check_masked_softmax, check_softmax
from .ch03 import (PARAMS_D_MODEL, PARAMS_NUM_HEADS, SCORE_D_K, SCORE_K_STD, SCORE_Q_STD, check_head_scores,
                   check_merge_heads, check_mha_params, check_score_variance, check_split_heads)
from .ch04 import PE_D_MODEL, PE_POS, check_pe_by_hand, check_positional_encoding, check_shift_matrix

__all__ = ["Verdict",
           # chapter 1
           "GRAD_W", "GRAD_X", "ACC_PRED", "ACC_TARGET", "check_gradient_factor", "check_additive_scores",
           "check_accuracy_by_length",
           # chapter 2
           "HAND_Q", "HAND_K", "check_hand_weights", "check_softmax", "check_masked_softmax",
           "check_attention",
           # chapter 3
           "PARAMS_D_MODEL", "PARAMS_NUM_HEADS", "SCORE_D_K", "SCORE_Q_STD", "SCORE_K_STD",
           "check_mha_params", "check_score_variance", "check_split_heads", "check_merge_heads",
           "check_head_scores",
           # chapter 4
           "PE_POS", "PE_D_MODEL", "check_pe_by_hand", "check_positional_encoding",
           "check_shift_matrix"]
