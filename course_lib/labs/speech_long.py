"""Chapter 12's longer run (recipe ``ch10-speech-long``) and the CTC head's own transcripts.

``ch12-speech`` (:mod:`course_lib.labs.speech`) trains 700 steps, the chapter's live
illustration. ``ch10-speech-long`` is the same model, data, batches, loss and schedule shape,
trained for :data:`LONG_STEPS` steps (warm-up, then cosine decay to 0 over all of them): the
lever chosen because the short run also misses most four-digit strings *of its own training set*
(it is under-trained, not only short of data). It is a long recipe
(:func:`course_lib.repro.recipe`'s ``check_prefix``): ``tools/train.py --check`` re-scores the
stored weights in float64 and retrains only the first :data:`CHECK_PREFIX` steps.

:func:`score` reports the decoder's greedy transcripts and the CTC head's
(:mod:`course_lib.labs.speech_decode`) side by side.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import repro
from .._validate import check_positive_int
from ..training import logged_curve, train
from .speech_decode import ctc_transcribe
from .speech import (DATA_SHA256, LOG_EVERY, MODEL, TRAINING, VOCAB, SpeechData, batch, build, evaluate,
                     load_speech, loss_fn, transcribe)

__all__ = ["LONG_NAME", "LONG_STEPS", "LONG_TRAINING", "CHECK_PREFIX", "CURVE_TOLERANCE", "long_learning_rate",
           "train_long", "score", "rescore_long"]

LONG_NAME = "ch10-speech-long"
LONG_STEPS = 4000
LONG_TRAINING = {**TRAINING, "steps": LONG_STEPS}
"""``ch12-speech``'s settings (:data:`~course_lib.labs.speech.TRAINING`) but :data:`LONG_STEPS` steps."""
CHECK_PREFIX = 100
"""``tools/train.py --check`` retrains this many steps (some 10 s on one thread)."""
CURVE_TOLERANCE = 1e-3
"""How far (absolute, in loss) a retrained prefix's curve point may land from the stored one. Measured
over the first 100 steps against the stored run (AVX2, 1 thread, reproduced exactly by a 1-thread
AVX2 retraining): ``ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2`` (1 thread) differs by
at most 5.3e-5, AVX2 with 3 threads by 2.2e-4 (both at step 100; step 50 by 1e-8). The tolerance is
some four times the larger. Past step 100 the runs drift apart quickly (plain C by 1.1e-2 at step
200), which is why the prefix stops there."""


def long_learning_rate(step: int) -> float:
    """Learning rate at ``step`` (from 0): linear warm-up over ``warmup`` steps, then cosine decay to 0
    at :data:`LONG_STEPS`; a prefix of the run uses the same values."""
    step = check_positive_int(step, "step", minimum=0)
    t = LONG_TRAINING
    if step < t["warmup"]:
        return t["lr"] * (step + 1) / t["warmup"]
    return t["lr"] * 0.5 * (1 + math.cos(math.pi * (step - t["warmup"]) / (t["steps"] - t["warmup"])))


def train_long(data: SpeechData, steps: int | None = None, log_every: int | None = LOG_EVERY) -> dict:
    """Run the first ``steps`` (None: all :data:`LONG_STEPS`) of the long recipe from ``build(0)``.

    Batches: ``default_rng(seed).integers(0, len(data), size=(LONG_STEPS, batch_size))``, row ``s`` at
    step ``s``, so a prefix sees exactly the full run's first batches.

    Returns:
        ``{"model", "losses", "curve": {step: mean loss}, "lr": {step: learning rate}}`` at the logged
        steps (counted from 1).
    """
    steps = LONG_STEPS if steps is None else check_positive_int(steps, "steps")
    if steps > LONG_STEPS:
        raise ValueError(f"steps must be at most the recipe's {LONG_STEPS}, got {steps}")
    t = LONG_TRAINING
    order = np.random.default_rng(t["seed"]).integers(0, len(data), size=(t["steps"], t["batch_size"]))
    model = build(0)
    losses = train(model, lambda s: batch(data, order[s]), loss_fn, steps, long_learning_rate,
                   optimizer="adamw", weight_decay=0.01, seed=t["seed"], log_every=log_every)
    curve = logged_curve(losses, LOG_EVERY)
    return {"model": model, "losses": losses, "curve": curve, "lr": {s: long_learning_rate(s - 1) for s in curve}}


def score(model, test: SpeechData) -> dict:
    """Held-out metrics (float64 model): the decoder's greedy ``cer``, ``seq_acc``, ``lang_acc``,
    ``seq_acc_4`` (four-digit strings), and the same from the CTC head (``ctc_…``)."""
    four = np.array([len(str(d)) == 4 for d in test.digits])
    out = {}
    for prefix, hyps in (("", transcribe(model, test)), ("ctc_", ctc_transcribe(model, test))):
        m = evaluate(model, test, hyps)
        right = np.array([str(d) == h for d, (_, h) in zip(test.digits, hyps)])
        out.update({prefix + k: v for k, v in m.items()})
        out[prefix + "seq_acc_4"] = float(right[four].mean())
    return out


def rescore_long(directory=None) -> dict:
    """Load the stored ``ch10-speech-long`` in float64 and score the held-out set again: its metrics."""
    _, test, _ = load_speech()
    model = build(0)
    repro.load_checkpoint(LONG_NAME, model, directory=directory, dtype=torch.float64)
    return score(model, test)


_DATA = ("data/speech/digits.npz (as ch10-speech): 2200 training utterances, 500 held-out from unseen speakers; "
         f"{LONG_STEPS} steps instead of 700 · 与 ch10-speech 相同的数据，训练 {LONG_STEPS} 步")


@repro.recipe(LONG_NAME, chapter="ch10", tolerance={"cer": 0.04, "seq_acc": 0.08}, data=_DATA,
              check_prefix=CHECK_PREFIX, curve_tolerance=CURVE_TOLERANCE, rescore=rescore_long)
def speech_long(steps: int | None = None) -> dict:
    """Chapter 12's Speech Transformer trained for :data:`LONG_STEPS` steps (``steps``: a prefix)."""
    train_data, test, _ = load_speech()
    run = train_long(train_data, steps)
    out = {"model": run["model"], "curve": run["curve"], "lr": run["lr"]}
    if steps is None or steps == LONG_STEPS:
        model = run["model"].double()
        out["metrics"] = score(model, test)
        out["model"] = model.float()
        out["config"] = {**MODEL, **LONG_TRAINING, "log_every": LOG_EVERY, "vocab": VOCAB.itos,
                         "data_sha256": DATA_SHA256, "schedule": "linear warm-up, cosine decay, AdamW wd 0.01"}
    return out
