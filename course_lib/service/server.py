"""Start the service in a subprocess on a free loopback port, wait for it, stop it (chapter 8).

Used by the tests, chapter 8 and the load test::

    with running_server(precision="float64") as server:    # python -m course_lib.service
        httpx.post(server.url + "/v1/sentiment", json={"text": "很好"})
        server.rss_kib()                                    # VmRSS of uvicorn and its workers

The server's log (uvicorn, level ``info``, no access log) goes to a
temporary file, shown in the error if the server dies or never gets ready.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["free_port", "rss_kib", "descendants", "running_server", "Server"]

READY = "Application startup complete."


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """``pid``'s children, grandchildren, ... (from ``/proc/<pid>/task/*/children``, Linux)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def rss_kib(pid: int, children: bool = True) -> int:
    """Resident memory (``VmRSS``, KiB) of ``pid``, plus all its descendants if ``children``."""
    total = 0
    for p in [pid] + (descendants(pid) if children else []):
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:                          # the process ended meanwhile
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total


@dataclasses.dataclass
class Server:
    """A running service: ``url`` (``http://127.0.0.1:<port>``), the uvicorn ``pid``, its settings."""

    url: str
    pid: int
    precision: str
    workers: int

    def rss_kib(self) -> int:
        return rss_kib(self.pid, children=True)


@contextlib.contextmanager
def running_server(precision: str = "float64", workers: int = 1, threads: int = 1, env: dict | None = None,
                   timeout_s: float = 120.0):
    """uvicorn serving ``course_lib.service.app:app`` on a free port; yields a :class:`Server`.

    Args:
        precision: ``float64``, ``float32`` or ``int8`` (``COURSE_SERVICE_PRECISION``).
        workers: uvicorn worker processes.
        threads: torch threads per worker.
        env: extra environment variables (e.g. ``COURSE_SERVICE_BUDGET_S``).
        timeout_s: how long to wait for every worker to finish start-up.

    The process group is terminated on leaving, however the block ends.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    port = free_port()
    full_env = {**os.environ, "COURSE_SERVICE_PRECISION": precision, "COURSE_SERVICE_THREADS": str(threads),
                "OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE", **(env or {})}
    cmd = [sys.executable, "-m", "course_lib.service", "--port", str(port), "--workers", str(workers)]
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, env=full_env, stdout=log, stderr=log, start_new_session=True)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                log.seek(0)
                text = log.read()
                if text.count(READY) >= workers:
                    break
                if proc.poll() is not None or time.monotonic() > deadline:
                    why = "exited" if proc.poll() is not None else f"was not ready after {timeout_s} s"
                    raise RuntimeError(f"the service {why}; its log:\n{text[-3000:]}")
                time.sleep(0.1)
            yield Server(f"http://127.0.0.1:{port}", proc.pid, precision, workers)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)          # the group we started: uvicorn and its workers
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
