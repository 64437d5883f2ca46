"""uvicorn's httptools protocol, writing each reply in one system call.

uvicorn writes a reply's status line and headers to the socket as soon as the
app sends ``http.response.start``, then the body as a second write: two
``send()`` calls per reply, and on loopback each one does the receiver's TCP
work and wake-up too: a large share of the server's CPU per request, most of a
refused one's (the 503s of a burst). :class:`CoalescingHttpToolsProtocol` hands uvicorn a
transport whose writes made in one turn of the event loop are joined and written
once at the end of it (or before the connection closes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "DISCONNECT_EXTENSION",
    "CoalescingHttpToolsProtocol",
    "CoalescingTransport",
    "OnDisconnect",
]


class CoalescingTransport:
    """A transport whose writes in one loop turn reach the wrapped one as one write.

    Everything but :meth:`write` and :meth:`close` is the wrapped transport's
    (flow control included: at most one turn's writes are held here).

    Args:
        inner: The connection's transport.
        loop: The loop it runs on.
    """

    __slots__ = ("_inner", "_loop", "_pending")

    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._inner = inner
        self._loop = loop
        self._pending: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        """Queue ``data``; it is written at the end of this loop turn."""
        if self._pending is None:
            self._pending = [bytes(data)]
            self._loop.call_soon(self.flush)
        else:
            self._pending.append(bytes(data))

    def flush(self) -> None:
        """Write what is queued now (nothing once the connection is closing)."""
        pending, self._pending = self._pending, None
        if pending and not self._inner.is_closing():
            self._inner.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        """Write what is queued, then close (the wrapped transport sends it first)."""
        self.flush()
        self._inner.close()

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


#: The scope extension a route calls with a callback to be told, once, that the
#: client went away mid-request; it returns a function that takes the callback
#: back (instead of a task per request reading ``receive`` until
#: ``http.disconnect``).
DISCONNECT_EXTENSION = "verifleet.on_disconnect"

OnDisconnect = Callable[[Callable[[], None]], Callable[[], None]]


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's ``httptools`` protocol over a :class:`CoalescingTransport`
    (pass the class as uvicorn's ``http`` option), offering each request's
    route the :data:`DISCONNECT_EXTENSION`."""

    _on_lost: Callable[[], None] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Wrap ``transport`` before uvicorn sees it."""
        wrapped = CoalescingTransport(transport, self.loop)
        super().connection_made(wrapped)  # type: ignore[arg-type]

    def on_message_begin(self) -> None:
        """Start a request's scope, with the disconnect extension in it."""
        super().on_message_begin()
        self._on_lost = None
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
        extensions[DISCONNECT_EXTENSION] = self._watch

    def _watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._on_lost = callback

        def stop() -> None:
            if self._on_lost is callback:
                self._on_lost = None

        return stop

    def connection_lost(self, exc: Exception | None) -> None:
        """uvicorn's bookkeeping, then the watching route's callback."""
        on_lost, self._on_lost = self._on_lost, None
        super().connection_lost(exc)
        if on_lost is not None:
            on_lost()
