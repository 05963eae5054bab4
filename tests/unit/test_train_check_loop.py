"""``tools/train.py --check`` of a long recipe through the one training loop
(``@repro.recipe(..., check_prefix=N)`` without ``rescore``; ``course_lib.training.checking``).

A fake recipe trains a helper model first (call 1 of ``train``) and the stored model second
(call 2). The check must (a) let the stored weights stand in for call 2, so that the recipe's
own evaluation re-scores them, and fail on a stored metric nudged just past the tolerance, on
a damaged file and on weights that no longer fit; (b) stop call 2 after N steps, with the
full run's seed, batches and schedule, and fail on a stored curve point moved just past
``curve_tolerance``, or on a recipe whose first steps changed.
"""

import importlib.util
import json
import math
import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest
import torch

from course_lib import repro, training
from course_lib.training import logged_curve, train

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("train_tool_loop", ROOT / "tools" / "train.py")
train_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_tool)

STEPS, PREFIX, LOG_EVERY, PEAK, CURVE_TOL = 40, 20, 5, 0.05, 1e-6
NAME = "test-loop-fake"
CALLS = []                                    # (call number, steps run) of the fake's own train() calls


def _data():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 4, generator=g)
    return x, x @ torch.tensor([1.0, -2.0, 0.5, 3.0])                       # (64, 4), (64,)


def _mse(m, idx, x, y):
    return torch.nn.functional.mse_loss(m(x[idx]).squeeze(-1), y[idx])


def _fake(peak=PEAK):
    """Call 1 trains a helper (5 steps), call 2 the stored model; evaluated in float64."""
    x, y = _data()
    g = torch.Generator().manual_seed(0)
    batches = [torch.randint(64, (8,), generator=g) for _ in range(STEPS)]
    helper = torch.nn.Linear(4, 1)
    CALLS.append(("helper", len(train(helper, batches.__getitem__, lambda m, i: _mse(m, i, x, y), 5, 0.01))))
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    sched = lambda s: peak * (s + 1) / 5 if s < 5 else peak * 0.5 * (1 + math.cos(math.pi * (s - 5) / (STEPS - 5)))
    losses = train(model, batches.__getitem__, lambda m, i: _mse(m, i, x, y), STEPS, sched, seed=0)
    CALLS.append(("model", len(losses)))
    with torch.no_grad():
        m64 = model.double()
        val = float(torch.nn.functional.mse_loss(m64(x.double()).squeeze(-1), y.double()))
        model.float()
    return {"model": model, "metrics": {"val_loss": val}, "curve": logged_curve(losses, LOG_EVERY)}


@pytest.fixture()
def stored(tmp_path, monkeypatch):
    monkeypatch.setattr(train_tool, "discover", lambda: repro.RECIPES)
    repro.recipe(NAME, chapter="ch00", tolerance={"val_loss": 0.1}, data="fake", check_prefix=PREFIX,
                 curve_tolerance=CURVE_TOL, check_call=2)(_fake)
    try:
        train_tool.run([NAME], directory=tmp_path)
        CALLS.clear()
        yield repro.RECIPES[NAME], tmp_path
    finally:
        repro.RECIPES.pop(NAME, None)


def _edit(folder, fn):
    path = folder / f"{NAME}.json"
    meta = json.loads(path.read_text())
    fn(meta)
    path.write_text(json.dumps(meta))


def test_the_check_passes_on_the_stored_run_and_runs_only_the_prefix(stored, capsys):
    rec, folder = stored
    assert train_tool.check_long(NAME, rec, directory=folder) == 0
    out = capsys.readouterr().out
    val = repro.checkpoint_meta(NAME, folder)["metrics"]["val_loss"]
    assert "PREFIX mode" in out and "FAIL" not in out and f"re-scored {val!r}" in out
    # re-score: the helper trains, the model's training is replaced; prefix: the helper trains, then 20 steps
    assert CALLS == [("helper", 5), ("model", STEPS), ("helper", 5)]


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
    assert "does not match its provenance" in capsys.readouterr().out


def test_weights_for_another_call_do_not_stand_in(stored, capsys):
    """check_call=1 would load the stored model into the helper: same shapes here, so the
    re-scored metric (of an untrained model) differs; the curve has 40 steps, the helper 5."""
    rec, folder = stored
    wrong = repro.Recipe(NAME, rec.chapter, rec.fn, rec.tolerance, rec.data, PREFIX, CURVE_TOL, None, 1)
    assert train_tool.check_long(NAME, wrong, directory=folder) >= 1
    assert "recipe changed since its checkpoint was made" in capsys.readouterr().out


@pytest.mark.parametrize("step, shift, failures", [(10, 1.5 * CURVE_TOL, 1), (PREFIX, -1.5 * CURVE_TOL, 1),
                                                   (10, 0.5 * CURVE_TOL, 0), (PREFIX + LOG_EVERY, 1.0, 0)])
def test_a_curve_point_beyond_the_tolerance_fails(stored, step, shift, failures):
    rec, folder = stored
    _edit(folder, lambda m: m["curve"].__setitem__(str(step), m["curve"][str(step)] + shift))
    assert train_tool.check_long(NAME, rec, directory=folder) == failures


def test_a_recipe_whose_first_steps_changed_fails(stored, capsys):
    """A learning rate 1% higher: the stored weights still re-score exactly, the prefix does not match."""
    rec, folder = stored
    changed = repro.Recipe(NAME, rec.chapter, lambda: _fake(PEAK * 1.01), rec.tolerance, rec.data,
                           PREFIX, CURVE_TOL, None, 2)
    assert train_tool.check_long(NAME, changed, directory=folder) == 1
    out = capsys.readouterr().out
    assert "ok   test-loop-fake val_loss" in out and "FAIL test-loop-fake curve" in out


def test_checking_stops_the_named_call_after_n_steps_exactly():
    x, y = _data()
    full = train(torch.nn.Linear(4, 1), lambda s: torch.arange(8) + s, lambda m, i: _mse(m, i, x, y), 12, 0.02)
    with training.checking(call=1, stop_after=7), pytest.raises(training.PrefixReached) as reached:
        train(torch.nn.Linear(4, 1), lambda s: torch.arange(8) + s, lambda m, i: _mse(m, i, x, y), 12, 0.02)
    assert reached.value.losses == full[:7]


def test_checking_state_mode_loads_and_returns_the_given_losses():
    x, y = _data()
    target = torch.nn.Linear(4, 1)
    state = {k: torch.full_like(v, 0.5) for k, v in target.state_dict().items()}
    with training.checking(call=1, state=state, losses=[1.0, 2.0, 3.0]):
        got = train(target, lambda s: torch.arange(8), lambda m, i: _mse(m, i, x, y), 3, 0.02)
    assert got == [1.0, 2.0, 3.0] and torch.equal(target.weight, torch.full((1, 4), 0.5))
    assert not target.training


def test_checking_rejects_bad_arguments_and_unused_or_short_calls():
    x, y = _data()
    run = lambda steps: train(torch.nn.Linear(4, 1), lambda s: torch.arange(8), lambda m, i: _mse(m, i, x, y),
                              steps, 0.02)
    with pytest.raises(ValueError, match="exactly one"):
        with training.checking(call=1):
            pass
    with pytest.raises(ValueError, match="exactly one"):
        with training.checking(call=1, stop_after=3, state={}, losses=[1.0]):
            pass
    with pytest.raises(ValueError, match="state needs losses"):
        with training.checking(call=1, state={}):
            pass
    with pytest.raises(ValueError, match="call"):
        with training.checking(call=0, stop_after=3):
            pass
    with pytest.raises(ValueError, match="call=2 never happened"):
        with training.checking(call=2, stop_after=3):
            run(4)
    with pytest.raises(ValueError, match="exceeds"):
        with training.checking(call=1, stop_after=5):
            run(4)
    with pytest.raises(ValueError, match="covers 2 steps"):
        with training.checking(call=1, state={}, losses=[1.0, 2.0]):
            run(4)
    with pytest.raises(RuntimeError, match="nest"):
        with training.checking(call=1, stop_after=3), training.checking(call=1, stop_after=3):
            pass
    assert training._CHECK is None                       # nothing left behind after a failure
    assert len(run(3)) == 3


def test_expand_curve_and_window_means_by_hand():
    assert train_tool.expand_curve({"2": 1.5, "5": 4.0}) == [1.5, 1.5, 4.0, 4.0, 4.0]
    assert train_tool.window_means([1.0, 2.0, 3.0, 4.0, 8.0], [2, 5]) == {2: 1.5, 5: 5.0}
    assert logged_curve(train_tool.expand_curve({"5": 2.0, "10": 3.0}), 5) == {5: 2.0, 10: 3.0}


def test_check_order_puts_whole_retrainings_first():
    recs = {n: repro.Recipe(n, "ch00", None, {"m": 1}, "", p, 1e-5 if p else None)
            for n, p in (("a", 20), ("b", None), ("c", 10), ("d", None))}
    assert train_tool.check_order(["a", "b", "c", "d"], recs) == ["b", "d", "a", "c"]
    assert train_tool.check_order(["a", "b", "c", "d"], recs, full=True) == ["a", "b", "c", "d"]


def test_the_pool_reports_a_failing_recipe_and_fails(tmp_path):
    """Two real one-second recipes on two worker processes, one stored metric moved past its
    tolerance (0.002): the run fails and names it; untouched, the same run passes."""
    import shutil
    import subprocess
    import sys

    from course_lib.data import DATA_ENV

    (tmp_path / "checkpoints").mkdir()
    for name in ("ch04-probe-learned", "ch09-probe-learned"):
        for ext in (".json", ".safetensors"):
            shutil.copy(ROOT / "data" / "checkpoints" / f"{name}{ext}", tmp_path / "checkpoints")
    env = {**os.environ, DATA_ENV: str(tmp_path), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(ROOT / "tools" / "train.py"), "--check", "--jobs", "2",
           "ch04-probe-learned", "ch09-probe-learned"]
    ok = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0 and "2 recipes on 2 processes; all within tolerance" in ok.stdout, ok.stdout
    path = tmp_path / "checkpoints" / "ch04-probe-learned.json"
    meta = json.loads(path.read_text())
    meta["metrics"]["acc_1_15"] -= 0.0025
    path.write_text(json.dumps(meta))
    bad = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 1, bad.stdout
    assert "FAILED: ch04-probe-learned" in bad.stdout and "FAILED ch04-probe-learned" in bad.stdout
    assert "FAIL ch04-probe-learned acc_1_15" in bad.stdout and "FAIL ch09" not in bad.stdout
