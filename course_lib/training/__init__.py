"""Training: the book's one loop and what it steps with.

    loop.py       train(...), the one training loop; build_optimizers, logged_curve, and checking()
                  (tools/train.py --check of a long recipe)
    muon.py       Muon, the optimizer of chapter 9's long Chinese run (train(optimizer="muon"))
    averaging.py  ExponentialAverage, a moving average of a model's weights (chapter 9's averaged run)

``from course_lib import training; training.train(...)`` reads as before: this package re-exports
the loop's public names. The optimizer and the average live in their own modules
(``from course_lib.training import muon``, ``from course_lib.training.averaging import
ExponentialAverage``).
"""

from . import averaging, loop, muon
from .loop import OPTIMIZERS, PrefixReached, build_optimizers, checking, logged_curve, train

__all__ = ["train", "OPTIMIZERS", "checking", "PrefixReached", "build_optimizers", "logged_curve",
           "loop", "muon", "averaging"]


def __getattr__(name):
    # The loop's private state (``_CHECK``, set inside ``checking()``) is read where it lives.
    if name.startswith("_") and not name.startswith("__") and hasattr(loop, name):
        return getattr(loop, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
