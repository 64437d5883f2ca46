"""Serving the viewer: the binding rule (loopback, or a token) and uvicorn."""

from __future__ import annotations

import socket
from collections.abc import Sequence

from verifleet.web import is_loopback

from ._app import create_app
from ._errors import ViewerError
from ._runs import Run

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "allowed_hosts",
    "bind_socket",
    "check_binding",
    "serve",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8600


def check_binding(host: str, token: str | None) -> None:
    """Refuse to serve results beyond this machine without a token.

    Raises:
        ViewerError: ``host`` is not a loopback address and ``token`` is empty.
    """
    if not is_loopback(host) and not token:
        raise ViewerError(
            f"binding to {host} makes the results reachable from other machines; "
            "give a token (--token) or bind to 127.0.0.1"
        )


def allowed_hosts(host: str) -> frozenset[str] | None:
    """The ``Host`` names a viewer bound to ``host`` answers to besides localhost and
    IP addresses (:func:`verifleet.web.host_allowed`): ``host`` itself; None (any)
    when bound to every address (a token guards it)."""
    if host in ("0.0.0.0", "::", ""):
        return None
    return frozenset({host})


def bind_socket(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A listening socket on ``host:port``, taken before anything is loaded or a
    URL is printed: a URL printed for a port another viewer holds would show that
    viewer's data.

    Raises:
        ViewerError: the port is taken or the address cannot be bound (the
            message suggests ``--port``).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ViewerError(f"cannot bind to {host}: {exc.strerror}") from None
    family, _type, _proto, _name, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    # No SO_REUSEADDR on purpose beyond TIME_WAIT reuse: Linux still refuses a port
    # another socket listens on, which is the point.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        taken = exc.errno == 98  # EADDRINUSE
        raise ViewerError(
            f"cannot listen on {host}:{port}: "
            + (
                "the port is in use (another viewer?); choose another with --port"
                if taken
                else str(exc.strerror)
            )
        ) from None
    sock.set_inheritable(True)
    return sock


def serve(
    runs: Sequence[Run],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    title: str = "",
    sock: socket.socket | None = None,
) -> None:
    """Serve the viewer over ``runs`` until interrupted (blocks).

    Args:
        sock: A socket from :func:`bind_socket` (else one is bound to ``host:port``).

    Raises:
        ViewerError: as for :func:`check_binding` and :func:`bind_socket`.
    """
    import uvicorn

    check_binding(host, token)
    sock = sock or bind_socket(host, port)
    app = create_app(runs, token=token, title=title, allowed_hosts=allowed_hosts(host))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
