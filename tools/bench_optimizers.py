"""Wall-clock cost of a training step with AdamW and with Muon (chapter 9's long Chinese run).

Chapter 9 compares ``ch07-gpt-peoples-daily-long`` (Muon for the block matrices, AdamW for the
rest) with ``ch07-gpt-peoples-daily-long-adamw`` (AdamW alone) at the same number of steps, and
prints the CPU time each run took on a shared machine. This script measures the cost of one step
of each in the same run, on the recipes' GPT (``ZH_LONG_SIZE``) and batch (32 windows of 128
characters of People's Daily), float32: the whole step (forward, backward, clipping, update) and
the update alone. Each time is the median of ``STEPS`` steps after ``WARMUP``; the ratios divide
two times of this run. torch uses ``OMP_NUM_THREADS`` threads (2 by default).

Run:  .venv/bin/python tools/bench_optimizers.py
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from course_lib.labs import language_model_long_zh as zh_long  # noqa: E402
from course_lib.labs.language_model_data import windows  # noqa: E402
from course_lib.training import build_optimizers  # noqa: E402

WARMUP, STEPS = 3, 15


def measure(corpus, name):
    """(median seconds of a whole step, median seconds of the update alone) for optimizer ``name``."""
    model = zh_long.build_zh_long_gpt(corpus.vocab_size)
    cfg = zh_long.ZH_LONG_TRAIN if name == "muon" else zh_long.ZH_ADAMW_TRAIN    # the two recipes' settings
    opts = build_optimizers(model, cfg["optimizer"], cfg["lr"], weight_decay=cfg["weight_decay"],
                            muon_ratio=cfg.get("muon_ratio", 1.0))
    g = torch.Generator().manual_seed(0)
    whole, update = [], []
    for step in range(WARMUP + STEPS):
        starts = torch.randint(len(corpus.train_ids) - zh_long.ZH_LONG_CTX - 1, (zh_long.ZH_LONG_BATCH,), generator=g)
        x, y = windows(corpus.train_ids, starts, zh_long.ZH_LONG_CTX)          # (B, T) each
        t0 = time.perf_counter()
        loss = zh_long.flat_cross_entropy(model(x), y)
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
        t1 = time.perf_counter()
        for opt in opts:
            opt.step()
        t2 = time.perf_counter()
        if step >= WARMUP:
            whole.append(t2 - t0)
            update.append(t2 - t1)
    return statistics.median(whole), statistics.median(update)


def main() -> int:
    corpus = zh_long.zh_long_corpus()
    print(f"one training step of the long Chinese GPT (batch {zh_long.ZH_LONG_BATCH} × {zh_long.ZH_LONG_CTX}), "
          f"{torch.get_num_threads()} thread(s), median of {STEPS}")
    times = {name: measure(corpus, name) for name in ("adamw", "muon")}
    print(f"{'optimizer':>10}  {'step s':>8}  {'update s':>9}")
    for name, (step, update) in times.items():
        print(f"{name:>10}  {step:8.4f}  {update:9.4f}")
    print(f"Muon / AdamW: whole step {times['muon'][0] / times['adamw'][0]:.2f}×, "
          f"update alone {times['muon'][1] / times['adamw'][1]:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
