"""uvicorn's HTTP/1.1 protocol with ``TCP_NODELAY`` on every connection (chapter 8, "Serving over HTTP").

asyncio turns Nagle's algorithm off only on sockets whose protocol number is
``IPPROTO_TCP``. With ``--workers 2`` uvicorn (0.54) binds the listening socket
itself with protocol number 0, so without this class each small response waits
for the client's delayed ACK, about 40 ms on Linux. Setting the option on every
accepted connection makes one worker and several behave alike, so the load
test compares them on their work, not on a socket flag.
"""

from __future__ import annotations

import asyncio
import socket

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["NoDelayH11Protocol"]


class NoDelayH11Protocol(H11Protocol):
    """:class:`uvicorn.protocols.http.h11_impl.H11Protocol`, plus ``TCP_NODELAY`` on TCP connections."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
