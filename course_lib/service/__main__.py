"""Run the service on 127.0.0.1: ``python -m course_lib.service [--port 8001] [--workers 1]`` (``make api``).

The same as ``uvicorn course_lib.service.app:app --host 127.0.0.1``, with
:class:`~course_lib.service.protocol.NoDelayH11Protocol` as the HTTP protocol
(see that module for why) and no access log. Chapter 8, "Serving over HTTP".
"""

from __future__ import annotations

import argparse

import uvicorn

from .protocol import NoDelayH11Protocol


def _positive(name: str, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if not 1 <= value <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be between 1 and {hi}, got {value}")
        return value
    return parse


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_lib.service",
                                     description="The capstone's HTTP service on 127.0.0.1 (chapter 8).")
    parser.add_argument("--port", type=_positive("--port", 65535), default=8001, help="TCP port (default 8001)")
    parser.add_argument("--workers", type=_positive("--workers", 64), default=1, help="worker processes (default 1)")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    args = parser.parse_args(argv)
    uvicorn.run("course_lib.service.app:app", host="127.0.0.1", port=args.port, workers=args.workers,
                http=NoDelayH11Protocol, log_level=args.log_level, access_log=False)


if __name__ == "__main__":
    main()
