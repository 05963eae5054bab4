"""Outputs that hold on every learner's CPU: seeds, bands and checkpoints.

The rule of the book (CONTRIBUTING.md, *Reproducible on every CPU*):

1. **Exact where the arithmetic is exact.** Forward computations on fixed
   inputs, evaluated in float64, print the same digits on every CPU; nbval
   compares them character for character.
2. **Checkpoints for trained models.** Training amplifies the last-bit
   differences between kernel paths (AVX-512, AVX2, plain C, ARM NEON,
   1 or many threads) into different weights. So every result the book
   prints about a trained model comes from weights that ``make train``
   wrote once (:func:`save_checkpoint`) and the notebook loads
   (:func:`load_checkpoint`), with their provenance beside them.
3. **Bands for numbers that depend on the machine.** The notebook still runs
   its training loop, live. What that run prints (a loss, a held-out
   accuracy) is printed by :func:`band`, which asserts the value lies in a
   stated interval and prints ``label: ⟨value⟩ ✓ band [lo, hi]``. The test
   suite's nbval sanitizer masks the number between ``⟨ ⟩`` and nothing
   else, and ``tests/book`` checks that every masked number sits in a cell
   that calls :func:`band`.

Used from chapter 1 on; chapter 1 explains it to the reader.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import numbers
import os
import platform
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .data import checkpoint_dir

__all__ = ["BAND_OPEN", "BAND_CLOSE", "BAND_MARK", "LIVE_REL_MIN", "CURVE_TOLERANCE_MIN", "RESCORE_TOLERANCE",
           "setup", "band", "band_for", "threads", "Recipe", "recipe", "RECIPES", "save_checkpoint",
           "load_checkpoint", "checkpoint_meta", "sha256"]

BAND_OPEN, BAND_CLOSE = "⟨", "⟩"
#: The text that follows a banded number; the nbval sanitizer keys on it.
BAND_MARK = "✓ band"

DEFAULT_THREADS = 2

#: The narrowest relative half-width a live training run's loss band may have
#: (``train(..., reference=..., rel=...)``; CONTRIBUTING, "Reproducible on every CPU").
#: A band must cover kernel paths, thread counts *and* CPU models, and one host cannot
#: show the spread between CPU models: chapter 5's 100-step run, whose losses agreed to
#: 1.7e-6 relative across the kernel paths of one host, differed by 3.2e-5 on an Intel
#: Xeon (AVX-512 hardware, plain-C kernels, SSE4.2 MKL, 1 thread), about 20 times more.
#: 1e-3 is 30 times that miss; a band set from the spread of one host is widened to it.
LIVE_REL_MIN = 1e-3

#: The smallest ``curve_tolerance`` of a recipe's prefix check (``tools/train.py --check``), by the
#: same rule: at least 100 times the largest difference of the prefix measured across this host's
#: kernel paths (recorded beside each recipe), and never below 1e-4, seven times the difference
#: chapter 5's 100-step run showed between two CPU models (1.4e-5 on a loss of 0.435).
CURVE_TOLERANCE_MIN = 1e-4


def threads() -> int:
    """torch's intra-op threads for this run: ``OMP_NUM_THREADS`` if set, else 2."""
    raw = os.environ.get("OMP_NUM_THREADS", "")
    try:
        n = int(raw)
    except ValueError:
        return DEFAULT_THREADS
    return n if n > 0 else DEFAULT_THREADS


def setup(seed: int = 0) -> int:
    """Seed Python, NumPy and PyTorch, and set torch's thread count.

    Call it once at the top of a notebook that uses torch. The thread count
    follows ``OMP_NUM_THREADS`` (2 by default), so ``make test-portable``
    can run the same notebook on 1 and on several threads.

    Args:
        seed: a non-negative integer.

    Returns:
        The number of threads torch will use.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise TypeError(f"seed must be a non-negative integer, got {seed!r}")
    import torch

    random.seed(int(seed))
    np.random.seed(int(seed))
    torch.manual_seed(int(seed))
    n = threads()
    torch.set_num_threads(n)
    return n


def _number(value, name: str) -> float:
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def band(label: str, value, lo, hi, *, digits: int = 3, unit: str = "", bounds=None) -> float:
    """Print a machine-dependent number with its checked band; fail outside it.

    Prints ``label: ⟨value⟩ ✓ band [lo, hi]`` and returns ``value``. If the
    value lies outside ``[lo, hi]`` it raises ``AssertionError`` in both
    languages, so the notebook cell, and therefore ``make test``, fails.

    Args:
        label: what the number is, in both languages.
        value: a finite real number (a Python float, a NumPy or 0-d torch scalar).
        lo, hi: the band's ends, ``lo <= hi``.
        digits: decimals printed for the value and the band.
        unit: printed after the value and each end (e.g. ``"%"``).
        bounds: ``(least, greatest)``, the values the quantity can take at all (``(0, 100)`` for a
            percentage), or None. The band is printed and checked cut to them (an accuracy's band
            ends at 100 %), while the band log (``COURSE_BAND_LOG``) keeps ``[lo, hi]`` whole:
            ``tools/band_spread.py`` measures a band's width against the spread of the kernel paths,
            and a cut end that no value can cross would make the band look narrower than it is.
    """
    if not isinstance(label, str) or not label.strip():
        raise TypeError("label must be a non-empty string")
    value = _number(value, "value")
    lo, hi = _number(lo, "lo"), _number(hi, "hi")
    if lo > hi:
        raise ValueError(f"lo must be <= hi, got lo={lo}, hi={hi}")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or not 0 <= digits <= 12:
        raise TypeError(f"digits must be an integer from 0 to 12, got {digits!r}")
    if not isinstance(unit, str):
        raise TypeError(f"unit must be a string, got {type(unit).__name__}")
    f = f"{{:.{int(digits)}f}}{unit}"
    _log_band(label, value, lo, hi)
    if bounds is not None:
        least, greatest = _bounds(bounds)
        if not least <= value <= greatest:
            raise ValueError(f"value must lie within bounds [{least}, {greatest}], got {value}")
        lo, hi = max(lo, least), min(hi, greatest)
        if lo > hi:
            raise ValueError(f"the band [lo, hi] must overlap bounds [{least}, {greatest}]")
    if not lo <= value <= hi:
        raise AssertionError(
            f"{label}: {f.format(value)} is outside its band [{f.format(lo)}, {f.format(hi)}]; "
            f"this run is not what the book describes · 超出了预期区间，本次运行与书中描述不符")
    print(f"{label}: {BAND_OPEN}{f.format(value)}{BAND_CLOSE} {BAND_MARK} "
          f"[{f.format(lo)}, {f.format(hi)}]", flush=True)
    return value


#: When set, every :func:`band` appends ``{label, value, lo, hi, path, host}`` as one JSON line to
#: this file: ``.ci/run`` collects the bands of every kernel path it runs, and
#: ``tools/band_spread.py`` sets each band's width beside the spread measured on this host.
BAND_LOG_ENV = "COURSE_BAND_LOG"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (a notebook's band), False in a test or a script."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def _bounds(bounds) -> tuple[float, float]:
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise TypeError(f"bounds must be None or a pair (least, greatest), got {bounds!r}")
    least, greatest = _number(bounds[0], "bounds[0]"), _number(bounds[1], "bounds[1]")
    if least >= greatest:
        raise ValueError(f"bounds must be (least, greatest) with least < greatest, got {bounds!r}")
    return least, greatest


def _log_band(label: str, value: float, lo: float, hi: float) -> None:
    path = os.environ.get(BAND_LOG_ENV)
    if not path or not _in_notebook():         # the unit tests' own bands (some fail on purpose) stay out
        return
    torch = sys.modules.get("torch")
    kernels = torch.backends.cpu.get_cpu_capability() if torch is not None else "no torch"
    threads_ = torch.get_num_threads() if torch is not None else os.environ.get("OMP_NUM_THREADS", "")
    mkl = os.environ.get("MKL_ENABLE_INSTRUCTIONS", "native")
    line = json.dumps({"label": label, "value": value, "lo": lo, "hi": hi,
                       "path": f"aten {kernels}, MKL {mkl}, {threads_} threads", "host": _cpu_model()},
                      ensure_ascii=False)
    with open(path, "a", encoding="utf-8") as fh:      # one short write per line: safe across processes
        fh.write(line + "\n")


def band_for(label: str, value, reference, *, rel: float = 0.0, abs: float = 0.0,
             digits: int = 3, unit: str = "") -> float:
    """:func:`band` around a reference value: ``[ref - tol, ref + tol]``, ``tol = abs + rel·|ref|``."""
    reference = _number(reference, "reference")
    rel, abs_ = _number(rel, "rel"), _number(abs, "abs")
    if rel < 0 or abs_ < 0 or rel == abs_ == 0:
        raise ValueError("rel and abs must be >= 0, and not both 0")
    tol = abs_ + rel * math.fabs(reference)
    return band(label, value, reference - tol, reference + tol, digits=digits, unit=unit)


# --------------------------------------------------------------------------- checkpoints

def sha256(path) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check_name(name) -> str:
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_" for c in name):
        raise ValueError(f"name must be a non-empty string of letters, digits, '-' and '_', got {name!r}")
    return name


@dataclass
class Recipe:
    """How ``make train`` makes one checkpoint.

    Attributes:
        name: the checkpoint's file name (``data/checkpoints/<name>.*``).
        chapter: the chapter that loads it, e.g. ``"ch01"``.
        fn: ``() -> dict`` with keys ``model`` (trained from a fixed seed),
            ``metrics`` (held-out metrics, name -> float) and optionally
            ``curve`` (the logged training loss, step -> float, which the
            notebook's live run is banded against) and ``config``.
        tolerance: per metric, how far a retraining on another CPU may land
            from the stored value (absolute); ``tests`` retrain and check it.
        data: one line saying what the model was trained and evaluated on.
        check_prefix: None for a recipe that retrains in about a minute on one
            thread. For a longer one, the number of its first steps that
            ``tools/train.py --check`` retrains (see :func:`recipe`).
        curve_tolerance: with ``check_prefix``: how far (absolute) a retrained
            curve point may land from the stored one.
        rescore: with ``check_prefix``: ``directory -> metrics``, the held-out
            metrics of the checkpoint stored in ``directory`` (None: data/checkpoints),
            evaluated in float64; None: the recipe's own evaluation scores the
            stored weights (see :func:`recipe`).
        check_call: with ``check_prefix`` and no ``rescore``: which call of
            :func:`course_lib.training.train` (from 1) trains the stored model.
        rescore_tolerance: how far a re-scored metric may land from the stored one.
    """

    name: str
    chapter: str
    fn: Callable
    tolerance: dict = field(default_factory=dict)
    data: str = ""
    check_prefix: int | None = None
    curve_tolerance: float | None = None
    rescore: Callable | None = None
    check_call: int = 1
    rescore_tolerance: float = 1e-9


#: Every recipe, by name; filled by :func:`recipe` when a lab module is imported.
RECIPES: dict[str, Recipe] = {}


#: A stored metric must be re-scored from its checkpoint to within this (float64 evaluation).
RESCORE_TOLERANCE = 1e-9


def recipe(name: str, *, chapter: str, tolerance: dict, data: str, check_prefix: int | None = None,
           curve_tolerance: float | None = None, rescore: Callable | None = None, check_call: int = 1,
           rescore_tolerance: float | None = None):
    """Decorator: register a training function as the recipe of checkpoint ``name``.

    A recipe that retrains in about a minute on one thread is a function
    ``() -> dict`` (see :class:`Recipe`); ``tools/train.py --check`` retrains it whole.

    A longer one declares ``check_prefix=N`` and is a function
    ``(steps=None) -> dict``: ``steps=None`` is the full run; ``steps=N`` runs
    only its first ``N`` steps, with the full run's seed, batches and
    learning-rate schedule (the full schedule cut short, not a shorter one), and
    returns at least ``curve`` (the logged training loss, step -> float) and
    ``lr`` (the learning rate at those steps). The full run also returns ``lr``.
    ``tools/train.py --check`` then (a) re-scores the stored checkpoint with
    ``rescore`` and requires every stored metric to within
    :data:`RESCORE_TOLERANCE`, and (b) retrains the prefix and requires each of
    its curve points within ``curve_tolerance`` of the stored one and each
    learning rate equal to the stored one.

    A recipe of ``() -> dict`` may declare ``check_prefix=N`` without ``rescore``: its
    check then goes through the one training loop (:func:`course_lib.training.checking`),
    with ``check_call`` naming the call of ``train`` that trains the stored model.
    ``tools/train.py --check`` (a) runs the recipe with the stored weights standing in for
    that training (checked against their SHA-256, loaded strictly), so the recipe's own
    evaluation re-scores them and every stored metric must come back within
    ``rescore_tolerance`` (default :data:`RESCORE_TOLERANCE`: the recipes evaluate in
    float64; a looser one states why), and (b) runs the recipe again, stops that call after
    its first ``N`` steps, and requires each stored curve point up to ``N`` within
    ``curve_tolerance``.
    """
    _check_name(name)
    if not isinstance(chapter, str) or len(chapter) != 4 or not chapter.startswith("ch") or not chapter[2:].isdigit():
        raise ValueError(f"chapter must be a chapter's short name such as 'ch07', got {chapter!r}")
    if not isinstance(data, str) or not data.strip():
        raise ValueError(f"data must be a non-empty string saying what the model is trained and scored on, "
                         f"got {data!r}")
    if not isinstance(tolerance, dict) or not tolerance:
        raise ValueError("tolerance must be a non-empty dict: metric -> absolute tolerance")
    for metric, tol in tolerance.items():
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"tolerance's keys must be metric names (non-empty strings), got {metric!r}")
        if _number(tol, f"tolerance[{metric!r}]") < 0:
            raise ValueError(f"tolerance[{metric!r}] must be >= 0, got {tol!r}")
    if check_prefix is not None:
        if isinstance(check_prefix, bool) or not isinstance(check_prefix, numbers.Integral) or check_prefix < 1:
            raise ValueError(f"check_prefix must be a positive integer (steps) or None, got {check_prefix!r}")
        if curve_tolerance is None or _number(curve_tolerance, "curve_tolerance") <= 0:
            raise ValueError("curve_tolerance must be a positive number when check_prefix is given")
        if rescore is not None and not callable(rescore):
            raise ValueError("rescore must be None or a function directory -> metrics")
        if isinstance(check_call, bool) or not isinstance(check_call, numbers.Integral) or check_call < 1:
            raise ValueError(f"check_call must be a positive integer (which call of train), got {check_call!r}")
        if rescore_tolerance is not None and _number(rescore_tolerance, "rescore_tolerance") <= 0:
            raise ValueError("rescore_tolerance must be a positive number")
    elif curve_tolerance is not None or rescore is not None or check_call != 1 or rescore_tolerance is not None:
        raise ValueError("curve_tolerance, rescore, check_call and rescore_tolerance belong to a recipe "
                         "with check_prefix")

    def wrap(fn):
        if not callable(fn):
            raise TypeError(f"recipe must decorate a function, got {type(fn).__name__}")
        RECIPES[name] = Recipe(name, chapter, fn, dict(tolerance), data,
                               None if check_prefix is None else int(check_prefix),
                               None if curve_tolerance is None else float(curve_tolerance), rescore,
                               int(check_call), RESCORE_TOLERANCE if rescore_tolerance is None
                               else float(rescore_tolerance))
        return fn
    return wrap


PROVENANCE_KEYS = ("name", "chapter", "data", "tolerance", "remake", "metrics", "config", "curve", "parameters",
                   "trained_with", "date", "sha256")
"""The keys :func:`save_checkpoint` writes into every ``<name>.json``; ``extra`` may not reuse them."""


def save_checkpoint(name: str, model, *, metrics: dict, config: dict | None = None, curve: dict | None = None,
                    recipe: Recipe | None = None, directory=None, extra: dict | None = None) -> Path:
    """Write ``model``'s weights to ``<name>.safetensors`` and its provenance to ``<name>.json``.

    The JSON records the metrics, the configuration, the recipe, the
    versions and CPU path that trained it, the date and the weights' SHA-256;
    ``extra`` adds more JSON-serialisable entries (e.g. ``train_seconds``, a long
    recipe's ``check_prefix``, ``lr`` and ``held_out`` curves).
    Returns the path of the ``.safetensors`` file.
    """
    import torch
    from safetensors.torch import save_file

    _check_name(name)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(metrics, dict):
        raise TypeError(f"metrics must be a dict of metric name -> number, got {type(metrics).__name__}")
    metrics = {k: _number(v, f"metrics[{k!r}]") for k, v in metrics.items()}
    if curve is not None and not isinstance(curve, dict):
        raise TypeError(f"curve must be None or a dict of step -> loss, got {type(curve).__name__}")
    steps = {}
    for k, v in (curve or {}).items():
        whole = k.isdigit() if isinstance(k, str) else (not isinstance(k, bool) and isinstance(k, numbers.Real)
                                                         and math.isfinite(k) and k >= 0 and float(k).is_integer())
        if not whole:
            raise ValueError(f"curve's keys must be steps (whole numbers >= 0), got {k!r}")
        steps[str(int(k))] = _number(v, f"curve[{k!r}]")
    if config is not None and not isinstance(config, dict):
        raise TypeError(f"config must be None or a dict, got {type(config).__name__}")
    if extra is not None and not isinstance(extra, dict):
        raise TypeError(f"extra must be None or a dict, got {type(extra).__name__}")
    clash = sorted(set(extra or {}) & set(PROVENANCE_KEYS))
    if clash:
        raise ValueError(f"extra must not overwrite the provenance's own keys, got {clash}")
    folder = Path(directory) if directory is not None else checkpoint_dir()
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    path = folder / f"{name}.safetensors"
    save_file(state, str(path), metadata={"name": name})
    meta = {
        "name": name,
        "chapter": recipe.chapter if recipe else None,
        "data": recipe.data if recipe else None,
        "tolerance": recipe.tolerance if recipe else None,
        "remake": f"make train NAMES={name}",
        "metrics": metrics,
        "config": config or {},
        "curve": steps,
        "parameters": int(sum(v.numel() for v in state.values())),
        "trained_with": {
            "torch": torch.__version__,
            "python": platform.python_version(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "machine": platform.machine(),
            "threads": torch.get_num_threads(),
        },
        "date": _dt.date.today().isoformat(),
        "sha256": sha256(path),
    }
    meta.update(extra or {})
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def checkpoint_meta(name: str, directory=None) -> dict:
    """The provenance JSON of checkpoint ``name``."""
    _check_name(name)
    folder = Path(directory) if directory is not None else checkpoint_dir()
    path = folder / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint named {name!r} in {folder}; run `make train NAMES={name}`")
    return json.loads(path.read_text(encoding="utf-8"))


def load_checkpoint(name: str, model, *, directory=None, dtype=None):
    """Load checkpoint ``name`` into ``model`` (strict: every key and shape) and return its provenance.

    The file's SHA-256 is checked against the JSON first, so a stale or
    damaged file fails loudly. ``dtype`` (e.g. ``torch.float64``) converts
    the model after loading: evaluation in float64 prints the same digits on
    every CPU. The model is left in ``eval()`` mode.
    """
    import torch
    from safetensors.torch import load_file

    meta = checkpoint_meta(name, directory)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    folder = Path(directory) if directory is not None else checkpoint_dir()
    path = folder / f"{name}.safetensors"
    digest = sha256(path)
    if digest != meta["sha256"]:
        raise ValueError(f"{path.name} does not match its provenance (sha256 {digest[:12]}… "
                         f"!= {meta['sha256'][:12]}…); run `make train NAMES={name}`")
    state = load_file(str(path))
    own = model.state_dict()
    missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or extra:
        raise ValueError(f"checkpoint {name!r} does not fit this model: missing {missing[:3]}, unexpected {extra[:3]}")
    for k, v in state.items():
        if tuple(v.shape) != tuple(own[k].shape):
            raise ValueError(f"checkpoint {name!r}: {k} has shape {tuple(v.shape)}, the model wants {tuple(own[k].shape)}")
    model.load_state_dict(state, strict=True)
    if dtype is not None:
        model.to(dtype)
    model.eval()
    return meta
