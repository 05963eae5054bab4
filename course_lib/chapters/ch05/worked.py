"""Chapter 5's worked example: the source's translation test, recounted.

``translation_steps`` returns a dict whose keys match the ``claims`` of
``source.TRANSLATION``, so ``course_lib.chapters.compare`` can set
the source's printed sample count beside the book's reconstruction.
"""

from __future__ import annotations

from . import source
from ...labs.translation_data import SOURCE_RULE, training_sequences

__all__ = ["translation_steps", "EXAMPLES"]


def translation_steps(rule: str = SOURCE_RULE) -> dict:
    """``test.py`` of the source: ``n_samples``, the size of the training set.

    Args:
        rule: a key of :data:`course_lib.labs.translation_data.SAMPLE_RULES` (default:
            the rule the book adopts, singles + distinct pairs + runs of 3).

    Returns:
        ``{"n_samples": int}``. Chapter 5.
    """
    return {"n_samples": len(training_sequences(rule))}


EXAMPLES = {"translation": (translation_steps, source.TRANSLATION)}
