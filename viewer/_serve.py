"""Serving the viewer: the binding rule (loopback, or a token) and uvicorn."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from ._app import create_app
from ._errors import ViewerError
from ._runs import Run

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "check_binding", "is_loopback", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8600


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine (``localhost``, 127.x, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


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


def serve(
    runs: Sequence[Run],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    title: str = "",
) -> None:
    """Serve the viewer over ``runs`` until interrupted (blocks).

    Raises:
        ViewerError: as for :func:`check_binding`.
        OSError: the port is taken (uvicorn reports it and exits).
    """
    import uvicorn

    check_binding(host, token)
    app = create_app(runs, token=token, title=title)
    uvicorn.run(app, host=host, port=port, log_level="warning")
