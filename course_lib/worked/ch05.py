"""Chapter 5's worked example: the source's translation test, recounted.

``translation_steps`` returns a dict whose keys match the ``claims`` of
``course_lib.sources.TRANSLATION``, so ``course_lib.errata.compare`` can set
the source's printed sample count beside the book's reconstruction.
"""

from __future__ import annotations

from .. import sources
from ..translation import SOURCE_RULE, training_sequences

__all__ = ["translation_steps", "CH05_EXAMPLES"]


def translation_steps(rule: str = SOURCE_RULE) -> dict:
    """``test.py`` of the source: ``n_samples``, the size of the training set.

    Args:
        rule: a key of :data:`course_lib.translation.SAMPLE_RULES` (default:
            the rule the book adopts, singles + distinct pairs + runs of 3).

    Returns:
        ``{"n_samples": int}``. Chapter 5.
    """
    return {"n_samples": len(training_sequences(rule))}


CH05_EXAMPLES = {"translation": (translation_steps, sources.TRANSLATION)}
