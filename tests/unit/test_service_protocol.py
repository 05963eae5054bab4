"""TCP_NODELAY on every connection, one worker or several (course_lib.service.protocol), and the launcher's arguments."""

import asyncio
import socket

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from course_lib.service import __main__ as launcher
from course_lib.service.protocol import NoDelayH11Protocol


class _Transport:
    """The little of an asyncio transport that connection_made reads."""

    def __init__(self, sock):
        self.sock = sock

    def get_extra_info(self, name, default=None):
        return {"socket": self.sock, "sockname": self.sock.getsockname(),
                "peername": self.sock.getpeername()}.get(name, default)

    def is_closing(self):
        return False


def _accepted(protocol_cls) -> int:
    """TCP_NODELAY of an accepted connection after ``protocol_cls.connection_made``."""
    async def app(scope, receive, send):  # never called
        raise AssertionError
    config = Config(app=app)
    config.load()
    # As uvicorn binds with --workers: protocol number 0, so asyncio would not set TCP_NODELAY itself.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, 0) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname()) as client:
            conn, _ = listener.accept()
            with conn:
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
                loop = asyncio.new_event_loop()   # its own loop: never depend on what other tests left current
                try:
                    protocol = protocol_cls(config=config, server_state=ServerState(), app_state={}, _loop=loop)
                    protocol.connection_made(_Transport(conn))
                finally:
                    loop.close()
                return conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_no_delay_protocol_turns_nagle_off_where_uvicorn_does_not():
    assert _accepted(H11Protocol) == 0          # the trap: uvicorn's own protocol leaves Nagle on
    assert _accepted(NoDelayH11Protocol) != 0   # ours turns it off


@pytest.mark.parametrize("argv, message", [
    (["--port", "0"], "--port must be between 1 and 65535, got 0"),
    (["--port", "70000"], "--port must be between 1 and 65535, got 70000"),
    (["--port", "http"], "--port must be an integer, got 'http'"),
    (["--workers", "0"], "--workers must be between 1 and 64, got 0"),
    (["--workers", "1.5"], "--workers must be an integer, got '1.5'"),
])
def test_launcher_refuses_bad_arguments_by_name(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        launcher.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
