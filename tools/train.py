"""Train the book's models and write their checkpoints (``make train``).

Every trained result the book prints comes from weights stored under
``data/checkpoints/`` (see ``course_lib.repro`` and CONTRIBUTING.md). This
script re-makes them from the recipes the labs register with
``@course_lib.repro.recipe``:

    python tools/train.py                    # every recipe
    python tools/train.py ch01-copy-plain    # some of them
    python tools/train.py --list             # the recipes and their chapters
    python tools/train.py --check [NAMES]    # retrain into a temporary folder and
                                             # compare the held-out metrics with
                                             # the stored ones (their tolerance);
                                             # a long recipe (check_prefix=N):
                                             # re-score the stored checkpoint in
                                             # float64 and retrain its first N
                                             # steps against the stored curve
    python tools/train.py --check --jobs 2   # the same, recipes shared among 2
                                             # processes (one per core)
    python tools/train.py --check --full     # every recipe retrained whole, the
                                             # long ones too (an hour or more)

After re-making a checkpoint, re-sync the chapter that loads it
(``make sync FILES=book/<chapter>.md``).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import tempfile
import time

from course_lib import repro


def discover() -> dict:
    """Import every lab module so that its recipes register themselves."""
    import course_lib.labs as labs

    for info in pkgutil.iter_modules(labs.__path__):
        importlib.import_module(f"course_lib.labs.{info.name}")
    return repro.RECIPES


def _points(curve: dict) -> dict:
    return {int(k): float(v) for k, v in (curve or {}).items()}


def run(names, directory=None) -> dict:
    """Run the recipes ``names``; write checkpoints into ``directory`` (default data/checkpoints)."""
    recipes = discover()
    unknown = [n for n in names if n not in recipes]
    if unknown:
        raise SystemExit(f"unknown recipe(s) {unknown}; known: {sorted(recipes)}")
    results = {}
    for name in names or sorted(recipes):
        rec = recipes[name]
        print(f"train {name} ({rec.chapter}) ...", flush=True)
        start, cpu = time.perf_counter(), time.process_time()
        repro.setup(0)
        out = rec.fn()
        seconds = time.perf_counter() - start
        extra = {"train_seconds": round(seconds, 1), "train_cpu_seconds": round(time.process_time() - cpu, 1)}
        if rec.check_prefix is not None:
            extra["check_prefix"] = {"steps": rec.check_prefix, "curve_tolerance": rec.curve_tolerance}
            if out.get("lr"):
                extra["lr"] = {str(k): float(v) for k, v in _points(out["lr"]).items()}
            if out.get("held_out"):
                extra["held_out"] = {str(k): float(v) for k, v in _points(out["held_out"]).items()}
            if out.get("held_out_average"):
                extra["held_out_average"] = {str(k): float(v) for k, v in _points(out["held_out_average"]).items()}
        path = repro.save_checkpoint(name, out["model"], metrics=out["metrics"], config=out.get("config"),
                                     curve=out.get("curve"), recipe=rec, directory=directory, extra=extra)
        metrics = ", ".join(f"{k} {v:.4f}" for k, v in out["metrics"].items())
        print(f"     {seconds:.1f} s · {metrics} · {path.name}", flush=True)
        results[name] = out["metrics"]
    return results


def compare_prefix(stored: dict, fresh: dict, steps: int, curve_tolerance: float, name: str = "") -> int:
    """Compare a retrained prefix (``fresh``: ``curve``, ``lr``, optional ``held_out``) with the stored
    provenance ``stored``, point by point up to step ``steps``; print one line per series; return the
    number of failures. Learning rates must be equal (to 1e-12 relative), losses within ``curve_tolerance``."""
    failures = 0
    for series, tol in (("curve", curve_tolerance), ("held_out", curve_tolerance), ("lr", None)):
        old = {k: v for k, v in _points(stored.get(series)).items() if k <= steps}
        new = {k: v for k, v in _points(fresh.get(series)).items() if k <= steps}
        if series == "curve" and not old:
            print(f"FAIL {name} curve: the stored curve has no point up to step {steps}")
            failures += 1
            continue
        new = {k: v for k, v in new.items() if k in old or k != steps}   # a prefix's own last mean is not stored
        if set(old) != set(new):
            print(f"FAIL {name} {series}: stored steps {sorted(old)[:5]}…, retrained {sorted(new)[:5]}…")
            failures += 1
            continue
        if not old:
            continue
        worst = max(abs(new[k] - old[k]) for k in old)
        step = max(old, key=lambda k: abs(new[k] - old[k]))
        limit = 1e-12 * max(abs(v) for v in old.values()) if tol is None else tol
        ok = worst <= limit
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} {series}: {len(old)} points to step {steps}, largest "
              f"difference {worst:.2e} (step {step}: stored {old[step]:.6g}, retrained {new[step]:.6g}), "
              f"tolerance {'equal' if tol is None else f'±{tol}'}")
    return failures


def compare_rescored(stored: dict, rescored: dict, tolerance: float, name: str = "") -> int:
    """Compare every stored metric with its re-scored value within ``tolerance``; print one line
    each; return the number of failures (a metric missing from ``rescored`` fails)."""
    failures = 0
    for metric, old in stored["metrics"].items():
        new = rescored.get(metric)
        ok = new is not None and abs(new - old) <= tolerance
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} {metric}: stored {old!r}, re-scored {new!r}, "
              f"tolerance ±{tolerance:g}")
    return failures


def expand_curve(curve: dict) -> list[float]:
    """Per-step losses whose logged means are the stored ``curve`` ({step: mean over the steps
    since the previous point}): each step gets its window's mean."""
    losses, since = [], 0
    for step, mean in sorted(_points(curve).items()):
        losses += [mean] * (step - since)
        since = step
    return losses


def window_means(losses, steps) -> dict:
    """The mean of ``losses`` over each window that ends at one of ``steps`` (sorted, from 1)."""
    out, since = {}, 0
    for step in sorted(steps):
        out[step] = sum(losses[since:step]) / (step - since)
        since = step
    return out


def check_through_loop(name: str, rec, directory=None) -> int:
    """A long recipe without its own ``rescore``: both halves go through the one training loop
    (:func:`course_lib.training.checking`). First the stored weights stand in for the training
    and the recipe's own evaluation re-scores them; then the recipe runs again and stops after
    ``check_prefix`` steps, whose logged means must match the stored curve."""
    from pathlib import Path

    from safetensors.torch import load_file

    from course_lib import training

    stored = repro.checkpoint_meta(name, directory)
    steps = rec.check_prefix
    print(f"check {name}: PREFIX mode — score the stored weights with the recipe's own evaluation, "
          f"then retrain the first {steps} steps of the full run", flush=True)
    failures = 0
    start = time.perf_counter()
    path = Path(directory or repro.checkpoint_dir()) / f"{name}.safetensors"
    digest = repro.sha256(path)
    rescored = {}
    if digest != stored["sha256"]:
        print(f"FAIL {name}: {path.name} does not match its provenance (sha256 {digest[:12]}…)")
        failures += 1
    else:
        try:
            with training.checking(call=rec.check_call, state=load_file(str(path)),
                                   losses=expand_curve(stored["curve"])):
                repro.setup(0)
                rescored = rec.fn()["metrics"]
        except (ValueError, RuntimeError) as err:      # the stored weights no longer fit the recipe
            print(f"FAIL {name}: the stored weights cannot stand in for its training: {err}")
            failures += 1
    failures += compare_rescored(stored, rescored, rec.rescore_tolerance, name)
    print(f"     re-scored in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    losses = None
    try:
        with training.checking(call=rec.check_call, stop_after=steps):
            repro.setup(0)
            rec.fn()
    except training.PrefixReached as reached:
        losses = reached.losses
    except ValueError as err:
        print(f"FAIL {name}: the prefix cannot be retrained: {err}")
    if losses is None:
        return failures + 1
    ends = [k for k in _points(stored["curve"]) if k <= steps]
    fresh = {"curve": window_means(losses, ends)}
    failures += compare_prefix(stored, fresh, steps, rec.curve_tolerance, name)
    print(f"     prefix of {steps} steps retrained in {time.perf_counter() - start:.1f} s "
          f"(the full run took {stored.get('train_seconds', '?')} s)", flush=True)
    return failures


def check_long(name: str, rec, directory=None) -> int:
    """A long recipe's check: re-score the stored checkpoint exactly, then retrain its prefix."""
    if rec.rescore is None:
        return check_through_loop(name, rec, directory)
    stored = repro.checkpoint_meta(name, directory)
    failures = 0
    print(f"check {name}: PREFIX mode — re-score the stored checkpoint (float64), then retrain the first "
          f"{rec.check_prefix} steps of the full run", flush=True)
    start = time.perf_counter()
    try:
        rescored = rec.rescore(directory)
    except (ValueError, FileNotFoundError) as err:       # a damaged or stale checkpoint
        print(f"FAIL {name}: the stored checkpoint cannot be re-scored: {err}")
        rescored = {}
    failures += compare_rescored(stored, rescored, repro.RESCORE_TOLERANCE, name)
    print(f"     re-scored in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    repro.setup(0)
    fresh = rec.fn(steps=rec.check_prefix)
    seconds = time.perf_counter() - start
    failures += compare_prefix(stored, fresh, rec.check_prefix, rec.curve_tolerance, name)
    print(f"     prefix of {rec.check_prefix} steps retrained in {seconds:.1f} s "
          f"(the full run took {stored.get('train_seconds', '?')} s)", flush=True)
    return failures


def check(names, full: bool = False) -> int:
    """Retrain into a temporary folder; compare each metric with the stored one within its tolerance.
    A long recipe (``check_prefix``) is checked by :func:`check_long` instead, unless ``full``."""
    recipes = discover()
    names = names or sorted(recipes)
    unknown = [n for n in names if n not in recipes]
    if unknown:
        raise SystemExit(f"unknown recipe(s) {unknown}; known: {sorted(recipes)}")
    long_ = [] if full else [n for n in names if recipes[n].check_prefix is not None]
    whole = [n for n in names if n not in long_]
    failures = 0
    if whole:
        print(f"check {', '.join(whole)}: FULL mode — retrain and compare the held-out metrics", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            fresh = run(whole, directory=tmp)
    for name in whole:
        stored = repro.checkpoint_meta(name)
        for metric, tol in recipes[name].tolerance.items():
            old, new = stored["metrics"][metric], fresh[name][metric]
            ok = abs(new - old) <= tol
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} {metric}: stored {old:.4f}, retrained {new:.4f}, "
                  f"tolerance ±{tol}")
    for name in long_:
        failures += check_long(name, recipes[name])
    return 1 if failures else 0


def _check_one(args) -> tuple[str, int, float]:
    """One recipe's :func:`check` in a pool's worker process: (name, exit code, seconds)."""
    name, full = args
    start = time.perf_counter()
    return name, check([name], full), time.perf_counter() - start


def check_order(names, recipes, full: bool = False) -> list:
    """The order a pool takes the recipes in: those retrained whole first (the longest runs are
    among them), then the prefix checks, which are short, to fill the gaps at the end."""
    whole = [n for n in names if full or recipes[n].check_prefix is None]
    return whole + [n for n in names if n not in whole]


def check_in_parallel(names, jobs: int, full: bool = False) -> int:
    """:func:`check` on ``jobs`` worker processes (each single-threaded as the environment
    says), each taking the next recipe when it finishes one (see :func:`check_order`); a
    worker keeps its caches (a corpus loaded once serves every recipe it checks). Fails if
    any recipe fails; ends with each recipe's time."""
    import multiprocessing

    recipes = discover()
    names = names or sorted(recipes)
    unknown = [n for n in names if n not in recipes]
    if unknown:
        raise SystemExit(f"unknown recipe(s) {unknown}; known: {sorted(recipes)}")
    ctx = multiprocessing.get_context("spawn")           # no fork after torch has started its threads
    with ctx.Pool(min(jobs, len(names)), maxtasksperchild=None) as pool:
        results = list(pool.imap_unordered(_check_one, [(n, full) for n in check_order(names, recipes, full)]))
    failed = sorted(n for n, code, _ in results if code)
    for name, code, seconds in sorted(results, key=lambda r: -r[2]):
        print(f"{seconds:7.1f} s  {'FAILED ' if code else ''}{name}")
    print(f"train --check: {len(names)} recipes on {min(jobs, len(names))} processes; "
          f"{'all within tolerance' if not failed else 'FAILED: ' + ', '.join(failed)}", flush=True)
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="recipes to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the recipes")
    parser.add_argument("--check", action="store_true", help="retrain and compare with the stored metrics")
    parser.add_argument("--jobs", type=int, default=1, help="with --check: processes that share the recipes")
    parser.add_argument("--full", action="store_true",
                        help="with --check: retrain every recipe whole, long ones too (make train-check-full)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be an integer >= 1, got {args.jobs}")
    if args.list:
        for name, rec in sorted(discover().items()):
            print(f"{name:28s} {rec.chapter}  {rec.data}")
        return 0
    if args.full and not args.check:
        parser.error("--full goes with --check")
    if args.check and args.jobs > 1:
        return check_in_parallel(args.names, args.jobs, args.full)
    if args.check:
        return check(args.names, args.full)
    run(args.names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
