"""Wall-clock time of GPT generation with and without the KV cache (chapter 8).

Chapter 8 proves that the cache changes nothing in the tokens and counts the
work it saves (token positions processed, a number that is the same on every
machine). This script measures what that saving is worth in seconds on this
machine, for two models:

- the book's stored English character GPT (``ch07-gpt-shakespeare-char``,
  2 blocks, d_model 64, context 64), float32;
- a wider GPT with random weights (4 blocks, d_model 256, 8 heads, context
  256), float32, where longer generations make the quadratic cost visible.

For each number of new tokens (a prompt of 8, batch 1, greedy ``top_k = 1``
so both runs must give the same tokens, which is checked), the time is the
fastest of ``REPEATS`` runs, and the ratio divides the two times of this
run. torch uses ``OMP_NUM_THREADS`` threads (2 by default).

Run:  .venv/bin/python tools/bench_kv_cache.py
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from course_lib import repro  # noqa: E402
from course_lib.labs import language_model as lm  # noqa: E402
from course_lib.labs import language_model_eval as lm_eval  # noqa: E402
from course_lib.models import GPT, GPTConfig  # noqa: E402

REPEATS, PROMPT = 2, 8


def best_time(model, prompt, n, use_cache):
    """Fastest of REPEATS generations; also returns the tokens."""
    best, out = float("inf"), None
    for _ in range(REPEATS):
        start = time.perf_counter()
        out = model.generate(prompt, n, top_k=1, use_cache=use_cache)
        best = min(best, time.perf_counter() - start)
    return best, out


def bench(label, model, lengths):
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(model.vocab_size, (1, PROMPT), generator=g)
    model.generate(prompt, 4)                                   # warm-up
    print(f"\n{label}")
    print(f"{'new tokens':>10}  {'cached s':>9}  {'uncached s':>10}  {'speed-up':>8}  {'positions ratio':>15}  same tokens")
    for n in lengths:
        t_cache, a = best_time(model, prompt, n, True)
        t_full, b = best_time(model, prompt, n, False)
        ratio = lm_eval.positions_processed(PROMPT, n, False) / lm_eval.positions_processed(PROMPT, n, True)
        print(f"{n:>10}  {t_cache:9.4f}  {t_full:10.4f}  {t_full / t_cache:7.2f}×  {ratio:14.1f}×  {torch.equal(a, b)}")
        if not torch.equal(a, b):
            return 1
    return 0


def main() -> int:
    repro.setup(0)
    print(f"KV cache: generation time with and without it (torch threads: {torch.get_num_threads()}, "
          f"best of {REPEATS})")
    small = lm.build_gpt(repro.checkpoint_meta("ch07-gpt-shakespeare-char")["config"]["vocab_size"])
    repro.load_checkpoint("ch07-gpt-shakespeare-char", small)
    failures = bench("ch07-gpt-shakespeare-char (2 blocks, d_model 64, context 64)", small, (16, 32, 56))
    torch.manual_seed(0)
    wide = GPT(GPTConfig(vocab_size=512, d_model=256, num_heads=8, num_layers=4, d_ff=1024, max_len=256,
                         dropout=0.0)).eval()
    failures += bench("random GPT (4 blocks, d_model 256, context 256)", wide, (64, 128, 248))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
