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
                                             # the stored ones (their tolerance)
    python tools/train.py --check --jobs 2   # the same, recipes shared among 2
                                             # processes (one per core)

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
        start = time.perf_counter()
        repro.setup(0)
        out = rec.fn()
        path = repro.save_checkpoint(name, out["model"], metrics=out["metrics"], config=out.get("config"),
                                     curve=out.get("curve"), recipe=rec, directory=directory)
        seconds = time.perf_counter() - start
        metrics = ", ".join(f"{k} {v:.4f}" for k, v in out["metrics"].items())
        print(f"     {seconds:.1f} s · {metrics} · {path.name}", flush=True)
        results[name] = out["metrics"]
    return results


def check(names) -> int:
    """Retrain into a temporary folder; compare each metric with the stored one within its tolerance."""
    recipes = discover()
    names = names or sorted(recipes)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = run(names, directory=tmp)
    for name in names:
        stored = repro.checkpoint_meta(name)
        for metric, tol in recipes[name].tolerance.items():
            old, new = stored["metrics"][metric], fresh[name][metric]
            ok = abs(new - old) <= tol
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} {metric}: stored {old:.4f}, retrained {new:.4f}, "
                  f"tolerance ±{tol}")
    return 1 if failures else 0


def check_in_parallel(names, jobs: int) -> int:
    """:func:`check` with the recipes dealt round-robin to ``jobs`` processes (each
    single-threaded as the environment says); fails if any of them fails."""
    import subprocess

    names = names or sorted(discover())
    groups = [names[i::jobs] for i in range(jobs) if names[i::jobs]]
    procs = [subprocess.Popen([sys.executable, __file__, "--check", *g]) for g in groups]
    codes = [p.wait() for p in procs]
    print(f"train --check: {len(names)} recipes in {len(groups)} processes; "
          f"{'all within tolerance' if not any(codes) else 'FAILED'}", flush=True)
    return 1 if any(codes) else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="recipes to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the recipes")
    parser.add_argument("--check", action="store_true", help="retrain and compare with the stored metrics")
    parser.add_argument("--jobs", type=int, default=1, help="with --check: processes that share the recipes")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be an integer >= 1, got {args.jobs}")
    if args.list:
        for name, rec in sorted(discover().items()):
            print(f"{name:28s} {rec.chapter}  {rec.data}")
        return 0
    if args.check and args.jobs > 1:
        return check_in_parallel(args.names, args.jobs)
    if args.check:
        return check(args.names)
    run(args.names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
