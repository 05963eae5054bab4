"""Tests that kill mutants of course_lib.scratch, course_lib.models and course_lib.repro (make mutate).

Expected values are worked out by hand or by an independent formula, never copied from the code.
"""

import numpy as np

from course_lib.scratch.attention import softmax


def test_softmax_of_equal_scores_is_uniform_and_of_a_large_gap_is_one_hot():
    np.testing.assert_allclose(softmax(np.zeros((2, 4))), np.full((2, 4), 0.25), rtol=0, atol=1e-15)
    # exp(0) / (exp(0) + exp(-1000)) = 1 to double precision; no overflow from the large score
    np.testing.assert_allclose(softmax(np.array([1000.0, 0.0])), [1.0, 0.0], rtol=0, atol=1e-300)
