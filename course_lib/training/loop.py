"""The book's one training loop.

Every model the book trains, in a notebook or in ``make train``, goes
through :func:`train`: chapters 1, 3, 4, 5, 6, 7 and 8 call it with their own
batches and loss. It is Adam, AdamW or Muon (:mod:`course_lib.training.muon`, for
chapter 9's long Chinese run) with optional warm-up or any learning-rate
schedule, gradient-norm clipping, and a progress line every ``log_every`` steps.

A live run in a notebook is not bit-identical on every CPU (see
``course_lib.repro``). So in a notebook the progress lines are printed as
*bands* around the curve that ``make train`` recorded in the checkpoint's
provenance (``reference=``): the cell fails if the loss strays, and nbval
compares everything except the banded number.
"""

from __future__ import annotations

import contextlib
from typing import Callable

import torch

from .._validate import check_choice, check_positive_int, check_positive_number
from ..repro import LIVE_REL_MIN, band_for
from .muon import Muon, split_for_muon

__all__ = ["train", "OPTIMIZERS", "checking", "PrefixReached"]

OPTIMIZERS = ("adam", "adamw", "muon")


def train(model, batches_fn: Callable[[int], object], loss_fn: Callable, steps: int, lr, *,
          optimizer: str = "adam", weight_decay: float = 0.0, betas: tuple = (0.9, 0.999),
          eps: float = 1e-8, scheduler: Callable | None = None, seed: int | None = 0,
          clip: float | None = 1.0, warmup: int = 0, log_every: int | None = None,
          log_decimals: int = 3, name: str = "", reference: dict | None = None, rel: float = 0.25,
          on_step: Callable | None = None, muon_ratio: float = 1.0) -> list[float]:
    """Train ``model``: the book's one training loop.

    Step ``s`` (``0 … steps-1``) computes ``loss_fn(model, batches_fn(s))``,
    back-propagates, clips the gradient norm to ``clip`` and updates.

    Args:
        model: a ``torch.nn.Module``; left in ``eval()`` mode at the end.
        batches_fn: ``step -> batch``; it must depend only on the step (seeded).
        loss_fn: ``(model, batch) -> scalar tensor``.
        steps: number of updates.
        lr: the peak learning rate (a positive number), or a schedule
            ``step -> learning rate`` (e.g. chapter 5's ``noam_lr``).
        optimizer: ``"adam"``, ``"adamw"``, or ``"muon"``: :class:`course_lib.training.muon.Muon` for the
            matrices inside the blocks and AdamW for the rest (:func:`course_lib.training.muon.split_for_muon`),
            both with the same weight decay; Muon's learning rate is ``muon_ratio`` times ``lr``
            (chapter 9).
        weight_decay: the optimizer's weight decay (decoupled for AdamW;
            note that ``torch.optim.AdamW``'s own default is 0.01, this one's 0).
        betas, eps: Adam's moment coefficients and epsilon (chapter 5 uses
            the paper's ``(0.9, 0.98)`` and ``1e-9``).
        scheduler: ``optimizer -> torch.optim.lr_scheduler`` object (e.g.
            chapter 6's one-cycle schedule), stepped after every update; it then
            owns the learning rate (``lr`` must be a number, ``warmup`` 0).
        seed: seeds PyTorch's global generator (dropout, …) before training;
            None leaves it as it is (the run then continues the caller's stream).
        clip: maximal gradient norm, or None for no clipping.
        warmup: steps of linear warm-up to a constant ``lr`` (number ``lr`` only).
        log_every: one progress line every this many steps (and at the last
            step) with the mean loss since the previous line; None: silent.
        log_decimals: decimals of the logged loss.
        name: prefix of the progress lines.
        reference: the curve ``make train`` recorded, ``{step: mean loss}``
            (``checkpoint_meta(name)["curve"]``; keys may be strings). When
            given, each progress line is a :func:`course_lib.repro.band` of
            relative width ``rel`` around it, and a loss outside fails.
        rel: relative half-width of those bands, at least
            :data:`course_lib.repro.LIVE_REL_MIN` (a band must hold on every CPU model).
        on_step: called as ``on_step(step, loss)`` after each update.
        muon_ratio: with ``optimizer="muon"``, Muon's learning rate over AdamW's at every step.

    Returns:
        The loss of every step, ``steps`` floats.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for fn_name, fn in (("batches_fn", batches_fn), ("loss_fn", loss_fn)):
        if not callable(fn):
            raise TypeError(f"{fn_name} must be callable, got {type(fn).__name__}")
    if on_step is not None and not callable(on_step):
        raise TypeError(f"on_step must be callable or None, got {type(on_step).__name__}")
    steps = check_positive_int(steps, "steps")
    schedule = lr if callable(lr) else None
    if schedule is None:
        lr = check_positive_number(lr, "lr")
    check_choice(optimizer, "optimizer", OPTIMIZERS)
    muon_ratio = check_positive_number(muon_ratio, "muon_ratio")
    if muon_ratio != 1.0 and optimizer != "muon":
        raise ValueError(f"muon_ratio is for optimizer='muon', got it with optimizer={optimizer!r}")
    if scheduler is not None and optimizer == "muon":
        raise ValueError("scheduler drives one optimizer; with optimizer='muon' give lr as a schedule instead")
    if scheduler is not None and (not callable(scheduler) or schedule is not None or warmup):
        raise ValueError("scheduler must be a function optimizer -> LR scheduler, used with a number lr "
                         "and no warmup")
    eps = check_positive_number(eps, "eps")
    if not (isinstance(betas, tuple) and len(betas) == 2 and all(0 <= b < 1 for b in betas)):
        raise ValueError(f"betas must be a pair of numbers in [0, 1), got {betas!r}")
    if isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) or weight_decay < 0:
        raise ValueError(f"weight_decay must be a number >= 0, got {weight_decay!r}")
    if clip is not None:
        clip = check_positive_number(clip, "clip")
    warmup = check_positive_int(warmup, "warmup", minimum=0)
    if log_every is not None:
        log_every = check_positive_int(log_every, "log_every")
    log_decimals = check_positive_int(log_decimals, "log_decimals", minimum=0)
    if reference is not None:
        if not isinstance(reference, dict):
            raise TypeError(f"reference must be a dict step -> loss, got {type(reference).__name__}")
        reference = {int(k): float(v) for k, v in reference.items()}
        if log_every is None:
            raise ValueError("reference needs log_every: the bands are checked on the progress lines")
        if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not rel >= LIVE_REL_MIN:
            raise ValueError(f"rel must be a number >= {LIVE_REL_MIN} (repro.LIVE_REL_MIN): a live band narrower "
                             f"than the spread between CPU models fails on a learner's machine; got {rel!r}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")

    stand_in = _checked_call(steps)
    if stand_in is not None:                  # tools/train.py --check: the stored weights stand in
        model.load_state_dict(stand_in["state"], strict=True)
        model.eval()
        return list(stand_in["losses"])
    stop = _CHECK["stop_after"] if _CHECK and _CHECK["active"] else None
    if seed is not None:
        torch.manual_seed(check_positive_int(seed, "seed", minimum=0))
    opts = build_optimizers(model, optimizer, schedule(0) if schedule else lr, weight_decay=weight_decay,
                            betas=betas, eps=eps, muon_ratio=muon_ratio)
    sched = scheduler(opts[0]) if scheduler is not None else None
    model.train()
    losses, since = [], 0
    prefix = f"{name} · " if name else ""
    width = len(str(steps))
    for step in range(steps):
        for opt in opts if sched is None else ():
            ratio = muon_ratio if isinstance(opt, Muon) else 1.0
            for group in opt.param_groups:
                if schedule is not None:
                    group["lr"] = ratio * float(schedule(step))
                else:
                    group["lr"] = ratio * (lr * min(1.0, (step + 1) / warmup) if warmup else lr)
        loss = loss_fn(model, batches_fn(step))
        if not isinstance(loss, torch.Tensor) or loss.ndim != 0:
            raise TypeError("loss_fn must return a scalar tensor")
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        for opt in opts:
            opt.step()
        if sched is not None:
            sched.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, losses[-1])
        if stop is not None and step + 1 == stop:
            raise PrefixReached(losses)
        if log_every is not None and ((step + 1) % log_every == 0 or step + 1 == steps):
            window = losses[since:]
            mean = sum(window) / len(window)
            label = f"{prefix}step {step + 1:>{width}}/{steps} · loss"
            if reference is not None:
                if step + 1 not in reference:
                    raise ValueError(f"reference has no loss for step {step + 1}: it must come from a run "
                                     f"with the same steps and log_every")
                band_for(label, mean, reference[step + 1], rel=rel, digits=log_decimals)
            else:
                print(f"{label} {mean:.{log_decimals}f}", flush=True)
            since = len(losses)
    model.eval()
    return losses


def build_optimizers(model, optimizer: str, lr: float, *, weight_decay: float = 0.0, betas: tuple = (0.9, 0.999),
                     eps: float = 1e-8, muon_ratio: float = 1.0) -> list:
    """The optimizers :func:`train` steps, at learning rate ``lr``: one Adam or AdamW over every trainable
    parameter, or for ``"muon"`` a :class:`~course_lib.training.muon.Muon` over the block matrices at
    ``muon_ratio · lr`` followed by an AdamW over the rest (none if there is no rest)."""
    check_choice(optimizer, "optimizer", OPTIMIZERS)
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer != "muon":
        opt_cls = torch.optim.AdamW if optimizer == "adamw" else torch.optim.Adam
        return [opt_cls(params, lr=lr, betas=betas, eps=eps, weight_decay=float(weight_decay))]
    matrices, rest = split_for_muon(model)
    if not matrices:
        raise ValueError("optimizer='muon' needs a weight matrix outside the embeddings; model has none")
    opts = [Muon(matrices, lr=muon_ratio * lr, weight_decay=float(weight_decay))]
    if rest:
        opts.append(torch.optim.AdamW(rest, lr=lr, betas=betas, eps=eps, weight_decay=float(weight_decay)))
    return opts


__all__.append("build_optimizers")


def logged_curve(losses, log_every: int) -> dict[int, float]:
    """The mean losses :func:`train` prints, ``{step: mean}``: what a checkpoint records as its curve."""
    log_every = check_positive_int(log_every, "log_every")
    out, since = {}, 0
    for step in range(1, len(losses) + 1):
        if step % log_every == 0 or step == len(losses):
            window = losses[since:step]
            out[step] = sum(window) / len(window)
            since = step
    return out


__all__.append("logged_curve")


# ---- tools/train.py --check of a long recipe (course_lib.repro.recipe's check_prefix) ----------------
_CHECK: dict | None = None


class PrefixReached(Exception):
    """Raised by :func:`train` inside ``checking(stop_after=N)`` once the checked call has run
    ``N`` steps; ``losses`` holds their losses."""

    def __init__(self, losses):
        super().__init__(f"the first {len(losses)} steps are done")
        self.losses = list(losses)


@contextlib.contextmanager
def checking(*, call: int = 1, stop_after: int | None = None, state: dict | None = None,
             losses=None):
    """Check a recipe without training it whole: inside this context the ``call``-th call of
    :func:`train` (counted from 1) is the recipe's main training run, and it either

    - ``stop_after=N``: runs its first ``N`` steps exactly as the full run would (same seed,
      batches and learning rates: the schedule belongs to the caller and knows the full length)
      and raises :class:`PrefixReached` with their losses; or
    - ``state=…, losses=…``: does not train: it loads ``state`` (the stored weights, strict)
      into the model and returns ``losses`` (the stored per-step losses) as if it had trained,
      so that the recipe's own evaluation code scores the stored weights.

    Other calls of :func:`train` (baselines, helper models) run as usual. A recipe whose
    ``call``-th call does not happen, or has fewer than ``N`` steps, raises ``ValueError``.
    """
    global _CHECK
    call = check_positive_int(call, "call")
    if (stop_after is None) == (state is None):
        raise ValueError("give exactly one of stop_after (retrain a prefix) and state (score stored weights)")
    if stop_after is not None:
        stop_after = check_positive_int(stop_after, "stop_after")
    elif losses is None:
        raise ValueError("state needs losses: the per-step losses train() returns in its place")
    if _CHECK is not None:
        raise RuntimeError("checking() contexts do not nest")
    _CHECK = {"call": call, "stop_after": stop_after, "state": state, "losses": losses, "seen": 0,
              "active": False}
    try:
        yield
        if _CHECK["seen"] < call:
            raise ValueError(f"the recipe called train() {_CHECK['seen']} time(s); call={call} never happened")
    finally:
        _CHECK = None


def _checked_call(steps: int):
    """Inside :func:`checking`: count this call of :func:`train`; return the stand-in (stored
    weights and losses) if this is the checked call in ``state`` mode, else None."""
    if _CHECK is None:
        return None
    _CHECK["seen"] += 1
    _CHECK["active"] = _CHECK["seen"] == _CHECK["call"]
    if not _CHECK["active"]:
        return None
    if _CHECK["stop_after"] is not None:
        if steps < _CHECK["stop_after"]:
            raise ValueError(f"check_prefix {_CHECK['stop_after']} exceeds the checked train() call's "
                             f"{steps} steps")
        return None
    if len(_CHECK["losses"]) != steps:
        raise ValueError(f"the stored curve covers {len(_CHECK['losses'])} steps, the checked train() call "
                         f"has {steps}: the recipe changed since its checkpoint was made")
    return {"state": _CHECK["state"], "losses": _CHECK["losses"]}
