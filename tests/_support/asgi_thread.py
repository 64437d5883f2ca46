"""Serve an ASGI app from a daemon thread on a free loopback port (tests and demo)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

__all__ = ["ServedApp", "serve_in_thread"]


class ServedApp:
    """An app served from a thread; a context manager that stops it."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, port: int) -> None:
        self.port = port
        self._server = server
        self._thread = thread

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop serving and wait for the thread (at most ~10 s); safe to call twice."""
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> ServedApp:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def serve_in_thread(
    app: Any, *, port: int = 0, lifespan: str = "on", http: Any = "auto"
) -> ServedApp:
    """Start ``app`` with uvicorn on 127.0.0.1 and return once it accepts connections
    (``http``: uvicorn's protocol option, e.g. the class ``verifleet serve`` uses).

    Raises:
        OSError: the port cannot be bound.
        RuntimeError: the server did not start within 15 s.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(
        app,
        lifespan=lifespan,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        http=http,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="asgi-thread", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("the ASGI app did not start")
        time.sleep(0.01)
    return ServedApp(server, thread, sock.getsockname()[1])
