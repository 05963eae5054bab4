"""Chapter 9's longer run (``ch09_training_lm``): a larger character GPT on Shakespeare.

The recipes of :mod:`course_lib.labs.language_model` train the small GPT
(:data:`~course_lib.labs.language_model.GPT_SIZE`) for two and a half minutes.
Recipe ``ch07-gpt-shakespeare-char-long`` trains a larger one (:data:`LONG_SIZE`,
a context of :data:`LONG_CTX` characters) on the same split for some ten minutes
(``make train``; its JSON records the time). It is a *long* recipe
(:func:`course_lib.repro.recipe`'s ``check_prefix``): ``tools/train.py --check``
re-scores the stored checkpoint exactly and retrains only the first
:data:`CHECK_PREFIX` steps, comparing them with the stored curve.

The run records, besides the training curve, the learning rate at every logged
step and the held-out loss every :data:`HELD_OUT_EVERY` steps, for chapter 9's
plot of loss against training compute (:func:`training_flops`). The loop itself, :func:`run_long`, also
trains the longer Chinese run of :mod:`course_lib.labs.language_model_long_zh`.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from .. import repro
from .._validate import check_positive_int
from ..training.averaging import ExponentialAverage
from ..models import GPT, GPTConfig
from ..training import logged_curve, train
from .language_model_data import TokenCorpus, make_corpus, shakespeare_split, windows
from .language_model_eval import evaluate

__all__ = ["LONG_NAME", "LONG_CTX", "LONG_SIZE", "LONG_TRAIN", "LONG_BATCH", "LONG_LOG_EVERY", "HELD_OUT_EVERY",
           "CHECK_PREFIX", "CURVE_TOLERANCE", "long_corpus", "cosine_learning_rate", "long_learning_rate",
           "build_long_gpt", "run_long", "train_long", "training_flops", "rescore_long"]

LONG_NAME = "ch07-gpt-shakespeare-char-long"
"""The recipe and checkpoint name."""
LONG_CTX = 128
"""Characters per training window, and the model's context length (the small GPT reads 64)."""
LONG_SIZE = dict(d_model=128, num_heads=4, num_layers=3, d_ff=512, max_len=LONG_CTX, dropout=0.0)
"""The larger GPT (the vocabulary size comes from the characters of the training text)."""
LONG_TRAIN = dict(steps=1200, lr=3e-3, warmup=50, optimizer="adamw", weight_decay=0.01, clip=1.0, seed=0)
"""Training: AdamW, linear warm-up, then cosine decay to a tenth of ``lr`` over all ``steps``."""
LONG_BATCH = 32
"""Windows per step."""
LONG_LOG_EVERY = 10
"""One point of the training curve (mean loss) every this many steps."""
HELD_OUT_EVERY = 100
"""The run scores the held-out text (float32) every this many steps, and at its last step."""
CHECK_PREFIX = 60
"""``tools/train.py --check`` retrains this many steps (about two minutes on one thread)."""
CURVE_TOLERANCE = 1e-4
"""How far a retrained prefix's curve point may land from the stored one (absolute, nats). Measured
over the first 60 steps against the stored run (AVX2, 1 thread): retrained under
``ATEN_CPU_CAPABILITY=default`` (1 thread) the training curve differs by at most 1.2e-7; a trial run
on AVX2 with 2 threads differed from a 1-thread retraining by at most 2.0e-7 (a held-out point).
The tolerance is :data:`course_lib.repro.CURVE_TOLERANCE_MIN`, some five hundred times the largest,
for other kernels, thread counts and CPU models."""


def long_corpus() -> TokenCorpus:
    """The character corpus of the Shakespeare split (the same as ``ch07-gpt-shakespeare-char``'s)."""
    return make_corpus(shakespeare_split(), "char")


def cosine_learning_rate(step: int, lr: float, warmup: int, steps: int) -> float:
    """Linear warm-up over ``warmup`` steps to ``lr``, then cosine decay to ``lr / 10`` at ``steps``
    (``step`` counted from 0): the schedule of both long runs."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def long_learning_rate(step: int) -> float:
    """The full run's schedule at ``step``: linear warm-up, then cosine decay from ``lr`` to ``lr / 10``
    over ``LONG_TRAIN["steps"]``; a prefix of the run uses the same values."""
    return cosine_learning_rate(step, LONG_TRAIN["lr"], LONG_TRAIN["warmup"], LONG_TRAIN["steps"])


def build_long_gpt(vocab_size: int, seed: int = 0) -> GPT:
    """The larger GPT (:data:`LONG_SIZE`, float32), weights drawn after ``torch.manual_seed(seed)``."""
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    return GPT(GPTConfig(vocab_size=vocab_size, **LONG_SIZE))


def run_long(model, corpus: TokenCorpus, *, ctx: int, batch: int, train_cfg: dict, steps: int, log_every,
             held_out_every: int, curve_every: int, loss_fn=None) -> dict:
    """The first ``steps`` steps of a long run (both long recipes): the full run's seeded batches of
    ``batch`` windows of ``ctx`` tokens and its schedule (:func:`cosine_learning_rate` over
    ``train_cfg["steps"]``); the held-out text scored every ``held_out_every`` steps and at the last.

    ``train_cfg["average"]``, when present, is ``{"decay": β, "start": s}``: from step ``s`` (counted
    from 1) on, the run keeps an exponential moving average of the weights
    (:class:`course_lib.training.averaging.ExponentialAverage`, started at the weights after step ``s``),
    scores it at the held-out points too, and the returned model holds the average at the end.

    ``loss_fn(logits, y)``, logits ``(B, ctx, V)`` and targets ``(B, ctx)``: the mean next-token
    cross-entropy (None: ``F.cross_entropy(logits.transpose(1, 2), y)``).

    Returns:
        ``{"model", "losses", "curve": mean loss every curve_every steps, "lr": {step: learning rate}
        at the curve's steps, "held_out": {step: held-out nats per token}}``, steps counted from 1;
        with an average also ``"held_out_average"``, the average's points from step ``s`` on.
    """
    total = train_cfg["steps"]
    steps = check_positive_int(steps, "steps")
    for name, value in (("ctx", ctx), ("batch", batch), ("held_out_every", held_out_every),
                        ("curve_every", curve_every)):
        check_positive_int(value, name)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if steps > total:
        raise ValueError(f"steps must be at most the recipe's {total}, got {steps}")
    if not isinstance(corpus, TokenCorpus):
        raise TypeError(f"corpus must be a TokenCorpus, got {type(corpus).__name__}")
    g = torch.Generator().manual_seed(train_cfg["seed"])
    starts = [torch.randint(len(corpus.train_ids) - ctx - 1, (batch,), generator=g)
              for _ in range(steps)]                       # the first `steps` of the full run's batches
    if loss_fn is None:
        def loss_fn(logits, y):
            return F.cross_entropy(logits.transpose(1, 2), y)

    def next_token_loss(m, s):
        x, y = windows(corpus.train_ids, s, ctx)           # (B, ctx) each
        return loss_fn(m(x), y)                            # logits (B, ctx, V)

    avg_cfg = train_cfg.get("average")
    if avg_cfg is not None and (not isinstance(avg_cfg, dict) or sorted(avg_cfg) != ["decay", "start"]):
        raise ValueError(f"train_cfg['average'] must be {{'decay': beta, 'start': step}}, got {avg_cfg!r}")
    if avg_cfg is not None:
        check_positive_int(avg_cfg["start"], "train_cfg['average']['start']")
        if avg_cfg["start"] > total or isinstance(avg_cfg["decay"], bool) or \
                not isinstance(avg_cfg["decay"], (int, float)) or not 0 < avg_cfg["decay"] < 1:
            raise ValueError(f"train_cfg['average'] needs a start within the run's {total} steps and a decay in "
                             f"(0, 1), got {avg_cfg!r}")
    rates, held_out, held_out_average, average = {}, {}, {}, None

    def lr(step):
        rates[step + 1] = cosine_learning_rate(step, train_cfg["lr"], train_cfg["warmup"], total)
        return rates[step + 1]

    def on_step(step, _loss):
        nonlocal average
        if avg_cfg is not None and step + 1 == avg_cfg["start"]:
            average = ExponentialAverage(model, avg_cfg["decay"])
        elif average is not None:
            average.update(model)
        if (step + 1) % held_out_every == 0 or step + 1 == total:
            held_out[step + 1] = evaluate(model, corpus, ctx=ctx)["val_loss"]
            line = f"  step {step + 1} · held-out {held_out[step + 1]:.4f}"
            if average is not None:
                held_out_average[step + 1] = evaluate(average.averaged_copy(model), corpus, ctx=ctx)["val_loss"]
                line += f" · averaged {held_out_average[step + 1]:.4f}"
            if log_every:
                print(line, flush=True)

    kw = {k: v for k, v in train_cfg.items() if k not in ("steps", "lr", "warmup", "average")}
    losses = train(model, starts.__getitem__, next_token_loss, steps=steps, lr=lr, on_step=on_step,
                   log_every=log_every, **kw)
    logged = logged_curve(losses, curve_every)
    out = {"model": model, "losses": losses, "curve": logged, "lr": {s: rates[s] for s in logged},
           "held_out": held_out}
    if avg_cfg is not None:
        if average is not None:
            average.copy_to(model)                         # the run's result is the average
        out["held_out_average"] = held_out_average
    return out


def train_long(corpus: TokenCorpus, steps: int | None = None, log_every: int | None = None) -> dict:
    """Run the first ``steps`` steps (None: all) of the long recipe, with the full run's batches and schedule.

    Returns:
        ``{"model", "losses", "lr": {step: learning rate} at the logged steps,
        "held_out": {step: held-out nats per character}}``, steps counted from 1.
    """
    total = LONG_TRAIN["steps"]
    steps = total if steps is None else check_positive_int(steps, "steps")
    if steps > total:
        raise ValueError(f"steps must be at most the recipe's {total}, got {steps}")
    if not isinstance(corpus, TokenCorpus):
        raise TypeError(f"corpus must be a TokenCorpus, got {type(corpus).__name__}")
    return run_long(build_long_gpt(corpus.vocab_size), corpus, ctx=LONG_CTX, batch=LONG_BATCH,
                    train_cfg=LONG_TRAIN, steps=steps, log_every=log_every, held_out_every=HELD_OUT_EVERY,
                    curve_every=LONG_LOG_EVERY)


def training_flops(parameters: int, tokens: int) -> float:
    """The usual estimate of training compute: ``6 · parameters · tokens`` floating-point operations."""
    return 6.0 * check_positive_int(parameters, "parameters") * check_positive_int(tokens, "tokens")


def rescore_long(directory=None) -> dict:
    """Load the stored checkpoint in float64 and score the held-out text again: its metrics."""
    corpus = long_corpus()
    model = GPT(GPTConfig(vocab_size=corpus.vocab_size, **LONG_SIZE))
    repro.load_checkpoint(LONG_NAME, model, directory=directory, dtype=torch.float64)
    scores = evaluate(model, corpus, ctx=LONG_CTX)
    return {k: scores[k] for k in ("val_loss", "bits_per_char")}


@repro.recipe(LONG_NAME, chapter="ch07", tolerance={"val_loss": 0.02, "bits_per_char": 0.03},
              check_prefix=CHECK_PREFIX, curve_tolerance=CURVE_TOLERANCE, rescore=rescore_long,
              data="a larger character-level GPT (context 128) on the same Shakespeare split as "
                   "ch07-gpt-shakespeare-char; evaluated on the same held-out text")
def shakespeare_char_long_recipe(steps: int | None = None) -> dict:
    """Chapter 9: the larger character GPT, trained for some ten minutes (``steps``: a prefix)."""
    corpus = long_corpus()
    run = train_long(corpus, steps, log_every=50)
    out = {"curve": run["curve"], "lr": run["lr"], "held_out": run["held_out"], "model": run["model"]}
    if steps is None or steps == LONG_TRAIN["steps"]:
        model = run["model"]
        scores = evaluate(model.double(), corpus, ctx=LONG_CTX)
        out["model"] = model.float()
        out["metrics"] = {k: scores[k] for k in ("val_loss", "bits_per_char")}
        out["config"] = {"language": "en", "tokens": "char", "vocab_size": corpus.vocab_size, "ctx": LONG_CTX,
                         "batch_size": LONG_BATCH, "log_every": LONG_LOG_EVERY, "held_out_every": HELD_OUT_EVERY,
                         "dtype": "float32", "split": corpus.split.description, **LONG_SIZE,
                         "train": dict(LONG_TRAIN), "tokens_seen": LONG_TRAIN["steps"] * LONG_BATCH * LONG_CTX}
    return out
