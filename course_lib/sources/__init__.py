"""The source documents' worked examples, as data.

The course grew out of four source documents. Their hand-computed examples
are stored here once, so that chapters, exercises and tests all use the same
inputs. Next to each input sits what the source *printed* for every step
(as strings, exactly as printed, so the number of decimals is kept). The
book never shows these printed values as results: it recomputes every step
with code and compares (see ``course_lib.errata``).

Source documents:

- ``"attention"``: *Attention Mechanisms and Transformers: Deep Learning's
  "Focus" Revolution / 注意力机制与Transformer* (English and Chinese).
- ``"ch24"``: *第24章：Transformer架构详解* (Chinese), with the text-processing
  project used by the capstone.
- ``"multirep"``: *Attention Mechanism Multi-Representation Example /
  注意力机制多表征示例* (Chinese/English).
- ``"pe_tests"``: the translation test and positional-encoding test logs
  (Chinese).
"""

from ._claim import SOURCES, Claim
from .ch02 import SINGLE_QUERY, TWO_HEAD
from .ch04 import PE_D4, PE_DEMO, PE_REF10, PE_TEST
from .ch05 import TRANSLATION
from .ch06 import VIT_PATCHES, VIT_TABLE

__all__ = ["SOURCES", "Claim", "SINGLE_QUERY", "TWO_HEAD", "PE_TEST", "PE_DEMO", "PE_REF10", "PE_D4", "TRANSLATION",
           "VIT_PATCHES", "VIT_TABLE"]
