"""``tools/train.py --check`` on a long recipe (``@repro.recipe(..., check_prefix=N)``), with a tiny fake one.

The check must (a) re-score the stored checkpoint to within ``repro.RESCORE_TOLERANCE``,
so a near-miss nudge of one stored metric fails, and (b) retrain the first N steps
with the full run's schedule and match the stored curve point by point within the
recipe's ``curve_tolerance``. A recipe whose prefix uses a shorter schedule must fail.
"""

import importlib.util
import json
import math
import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch

from course_lib import repro
from course_lib.training import logged_curve, train

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("train_tool", ROOT / "tools" / "train.py")
train_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_tool)

STEPS, PREFIX, LOG_EVERY, PEAK = 40, 20, 5, 0.05
NAME, SHORT = "test-prefix-fake", "test-prefix-fake-short"
CURVE_TOL = 1e-6


def _data():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 4, generator=g)
    return x, x @ torch.tensor([1.0, -2.0, 0.5, 3.0])                       # (64, 4), (64,)


def _schedule(total):
    """Warm-up over 5 steps, then cosine to zero over ``total`` steps."""
    return lambda s: PEAK * (s + 1) / 5 if s < 5 else PEAK * 0.5 * (1 + math.cos(math.pi * (s - 5) / (total - 5)))


def _fake(steps=None, *, shorter=False):
    x, y = _data()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    run = STEPS if steps is None else steps
    sched = _schedule(run if shorter else STEPS)                           # the planted bug: a shorter schedule
    rates = {}

    def lr(s):
        rates[s + 1] = sched(s)
        return rates[s + 1]

    g = torch.Generator().manual_seed(0)
    batches = [torch.randint(64, (8,), generator=g) for _ in range(run)]
    losses = train(model, batches.__getitem__,
                   lambda m, idx: torch.nn.functional.mse_loss(m(x[idx]).squeeze(-1), y[idx]),
                   steps=run, lr=lr, optimizer="adam", seed=0)
    curve = logged_curve(losses, LOG_EVERY)
    out = {"model": model, "curve": curve, "lr": {s: rates[s] for s in curve}}
    if steps is None:
        with torch.no_grad():
            m64 = model.double()
            out["metrics"] = {"val_loss": float(torch.nn.functional.mse_loss(m64(x.double()).squeeze(-1),
                                                                          y.double()))}
            model.float()
    return out


def _rescore(directory=None):
    x, y = _data()
    model = torch.nn.Linear(4, 1)
    repro.load_checkpoint(NAME, model, directory=directory, dtype=torch.float64)
    with torch.no_grad():
        return {"val_loss": float(torch.nn.functional.mse_loss(model(x.double()).squeeze(-1), y.double()))}


@pytest.fixture()
def stored(tmp_path, monkeypatch):
    """The fake recipe registered and fully trained into ``tmp_path``; yields (recipe, folder)."""
    monkeypatch.setattr(train_tool, "discover", lambda: repro.RECIPES)
    repro.recipe(NAME, chapter="ch00", tolerance={"val_loss": 0.1}, data="fake", check_prefix=PREFIX,
                 curve_tolerance=CURVE_TOL, rescore=_rescore)(_fake)
    try:
        train_tool.run([NAME], directory=tmp_path)
        yield repro.RECIPES[NAME], tmp_path
    finally:
        repro.RECIPES.pop(NAME, None)
        repro.RECIPES.pop(SHORT, None)


def _edit(folder, fn):
    path = folder / f"{NAME}.json"
    meta = json.loads(path.read_text())
    fn(meta)
    path.write_text(json.dumps(meta))


def test_the_stored_provenance_records_the_prefix_and_the_full_run(stored):
    rec, folder = stored
    meta = repro.checkpoint_meta(NAME, folder)
    assert meta["check_prefix"] == {"steps": PREFIX, "curve_tolerance": CURVE_TOL}
    assert meta["train_seconds"] >= 0 and "train_cpu_seconds" in meta
    assert sorted(int(k) for k in meta["curve"]) == list(range(LOG_EVERY, STEPS + 1, LOG_EVERY))
    assert sorted(int(k) for k in meta["lr"]) == list(range(LOG_EVERY, STEPS + 1, LOG_EVERY))


def test_the_check_passes_when_everything_equals_the_stored_run(stored, capsys):
    rec, folder = stored
    assert train_tool.check_long(NAME, rec, directory=folder) == 0
    out = capsys.readouterr().out
    assert "PREFIX mode" in out and f"retrain the first {PREFIX} steps" in out and "FAIL" not in out


@pytest.mark.parametrize("nudge, failures", [(3e-9, 1), (-3e-9, 1), (4e-10, 0)])
def test_a_stored_metric_nudged_past_the_rescore_tolerance_fails(stored, nudge, failures):
    rec, folder = stored
    _edit(folder, lambda m: m["metrics"].__setitem__("val_loss", m["metrics"]["val_loss"] + nudge))
    assert train_tool.check_long(NAME, rec, directory=folder) == failures


def test_a_damaged_checkpoint_fails(stored, capsys):
    rec, folder = stored
    path = folder / f"{NAME}.safetensors"
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert train_tool.check_long(NAME, rec, directory=folder) >= 1
    assert "cannot be re-scored" in capsys.readouterr().out


@pytest.mark.parametrize("step, shift, failures", [(10, 1.5 * CURVE_TOL, 1), (PREFIX, -1.5 * CURVE_TOL, 1),
                                                   (10, 0.5 * CURVE_TOL, 0), (PREFIX + LOG_EVERY, 1.0, 0)])
def test_a_curve_point_beyond_the_tolerance_fails(stored, step, shift, failures):
    """Points within the prefix are compared; one just past the tolerance fails, one within passes,
    and a point after the prefix is not retrained, so it is not compared."""
    rec, folder = stored
    _edit(folder, lambda m: m["curve"].__setitem__(str(step), m["curve"][str(step)] + shift))
    assert train_tool.check_long(NAME, rec, directory=folder) == failures


def test_the_prefix_uses_the_full_runs_schedule(stored):
    rec, folder = stored
    meta = repro.checkpoint_meta(NAME, folder)
    prefix = _fake(PREFIX)
    for k in range(LOG_EVERY, PREFIX + 1, LOG_EVERY):
        assert prefix["lr"][k] == meta["lr"][str(k)] == _schedule(STEPS)(k - 1)
    # at step 10 of 40 the cosine has run 4 of 35 steps: 0.05 · (1 + cos(4π/35)) / 2
    assert meta["lr"]["10"] == pytest.approx(0.05 * 0.5 * (1 + math.cos(4 * math.pi / 35)), rel=1e-15)


def test_a_prefix_with_a_shorter_schedule_fails(stored, capsys):
    rec, folder = stored
    short = repro.Recipe(NAME, rec.chapter, lambda steps=None: _fake(steps, shorter=True), rec.tolerance,
                         rec.data, rec.check_prefix, rec.curve_tolerance, rec.rescore)
    assert train_tool.check_long(NAME, short, directory=folder) >= 1
    out = capsys.readouterr().out
    assert "FAIL" in out and " lr:" in out


def test_a_recipe_without_a_prefix_is_unchanged_and_arguments_are_checked():
    repro.recipe(SHORT, chapter="ch00", tolerance={"val_loss": 0.1}, data="fake")(lambda: None)
    try:
        rec = repro.RECIPES[SHORT]
        assert rec.check_prefix is None and rec.curve_tolerance is None and rec.rescore is None
    finally:
        repro.RECIPES.pop(SHORT, None)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="check_prefix"):
            repro.recipe(SHORT, chapter="ch00", tolerance={"v": 1}, data="test data", check_prefix=bad,
                         curve_tolerance=1e-3, rescore=_rescore)
    with pytest.raises(ValueError, match="curve_tolerance"):
        repro.recipe(SHORT, chapter="ch00", tolerance={"v": 1}, data="test data", check_prefix=5, rescore=_rescore)
    with pytest.raises(ValueError, match="rescore"):
        repro.recipe(SHORT, chapter="ch00", tolerance={"v": 1}, data="test data", check_prefix=5, curve_tolerance=1e-3,
                     rescore="not a function")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="check_call"):
            repro.recipe(SHORT, chapter="ch00", tolerance={"v": 1}, data="test data", check_prefix=5,
                         curve_tolerance=1e-3, check_call=bad)
    with pytest.raises(ValueError, match="rescore_tolerance"):
        repro.recipe(SHORT, chapter="ch00", tolerance={"v": 1}, data="test data", check_prefix=5,
                     curve_tolerance=1e-3, rescore_tolerance=0)
    with pytest.raises(ValueError, match="check_prefix"):
        repro.recipe(SHORT, chapter="ch00", tolerance={"v": 1}, data="test data", check_call=2)
    with pytest.raises(ValueError, match="check_prefix"):
        repro.recipe(SHORT, chapter="ch00", tolerance={"v": 1}, data="test data", curve_tolerance=1e-3)
    assert SHORT not in repro.RECIPES
