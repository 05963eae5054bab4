"""The source documents' worked examples, recomputed step by step.

Each chapter's module returns, for each example, a dict whose keys match the
``claims`` of that example in ``course_lib.sources``, so every number a
source printed can be compared with the computed one
(``course_lib.errata.compare``). ``EXAMPLES`` gathers them all:
name -> (steps function, source data).
"""

from .ch02 import EXAMPLES as _CH02
from .ch02 import single_query_steps, two_head_steps
from .ch04 import PE_EXAMPLES as _CH04
from .ch05 import CH05_EXAMPLES as _CH05
from .ch06 import VIT_EXAMPLES as _CH06

EXAMPLES = {**_CH02, **_CH04, **_CH05, **_CH06}

__all__ = ["EXAMPLES", "single_query_steps", "two_head_steps"]
