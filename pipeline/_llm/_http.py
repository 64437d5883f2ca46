"""The direct caller's HTTP connections: one sender per thread and endpoint.

A sender posts through an ``httpx.HTTPTransport`` (httpx's own connection pool
over httpcore, its exceptions mapped to httpx's) and skips ``httpx.Client``'s
per-request work that an API call does not need: merging URLs, headers and
cookies, auth and redirect hooks (much of the HTTP time of a call). What the client did that matters is
kept: the timeout on connect, write, read and pool; the response read inside
the caller's gate; a redirect is followed (by a client, for that request only);
and when the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY``, any case), every request goes through an ``httpx.Client``, which
honours it.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from typing import TYPE_CHECKING

import httpx

from .._bridge import in_bridge
from ._proxy import PROXY_VARIABLES, proxied

if TYPE_CHECKING:
    from ._async_http import AsyncSender

__all__ = ["PROXY_VARIABLES", "Sender", "Transports"]


_USER_AGENT = f"python-httpx/{httpx.__version__}"


class Sender:
    """One thread's connections to one endpoint (not thread-safe: one request at
    a time, which is how a thread uses it)."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl = ssl_context
        self._transport: httpx.HTTPTransport | None = None
        self._client: httpx.Client | None = None
        if proxied():
            self._client = self._new_client()
        else:
            self._transport = httpx.HTTPTransport(verify=ssl_context)

    def _new_client(self) -> httpx.Client:
        return httpx.Client(verify=self._ssl, follow_redirects=True)

    def post(
        self, url: str, *, content: bytes, headers: dict[str, str], timeout: float
    ) -> httpx.Response:
        """POST ``content`` and read the whole response.

        Raises:
            httpx.HTTPError: connection, timeout or protocol errors (httpx's
                classes, as a client raises them).
        """
        if self._transport is None:
            assert self._client is not None
            return self._client.post(url, content=content, headers=headers, timeout=timeout)
        request = httpx.Request(
            "POST",
            url,
            headers={"User-Agent": _USER_AGENT, "Accept-Encoding": "gzip, deflate", **headers},
            content=content,
            extensions={"timeout": httpx.Timeout(timeout).as_dict()},
        )
        response = self._transport.handle_request(request)
        response.request = request
        try:
            response.read()
        finally:
            response.close()
        if response.is_redirect:
            # Rare for an API: a client takes it from there (and any further hop).
            if self._client is None:
                self._client = self._new_client()
            moved = request.url.join(response.headers["Location"])
            return self._client.post(moved, content=content, headers=headers, timeout=timeout)
        return response

    def close(self) -> None:
        """Close the connections."""
        if self._transport is not None:
            self._transport.close()
        if self._client is not None:
            self._client.close()


class _ThreadSenders(dict[tuple[str, str | None], Sender]):
    """One thread's senders; closed when the thread ends and drops them, so the
    connections of a finished thread pool do not linger until garbage collection."""

    def __del__(self) -> None:
        for sender in self.values():
            with contextlib.suppress(Exception):
                sender.close()


class Transports:
    """The :class:`Sender` of each (base URL, API key), one per thread.

    Not one per process: on every request httpcore checks each connection of its
    pool (a ``poll`` syscall per idle one). A thread makes one request at a time,
    so its own sender keeps one warm connection per endpoint. The senders share
    one SSL context: building one is costly, reusing it is not.

    A forked child starts with none: it must not share the parent's sockets.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None

    def _ssl_context(self) -> ssl.SSLContext:
        with self._lock:
            if self._ssl is None:
                # As httpx builds its own: certifi's CAs, SSL_CERT_FILE/DIR honoured.
                self._ssl = httpx.create_ssl_context()
            return self._ssl

    def get(
        self, base_url: str, api_key: str | None, *, max_concurrency: int | None = None
    ) -> Sender | AsyncSender:
        """This thread's sender for ``base_url`` with ``api_key``, built on first use;
        in bridged code (:func:`~verifleet.pipeline.run_bridged`), the event loop's
        asynchronous one, which keeps at most ``max_concurrency`` calls in flight."""
        if in_bridge():
            # aiohttp is loaded by the first bridged call, not by every caller.
            from ._async_http import async_sender

            return async_sender(base_url, api_key, max_concurrency=max_concurrency)
        senders: _ThreadSenders | None = getattr(self._local, "senders", None)
        if senders is None:
            senders = self._local.senders = _ThreadSenders()
        sender = senders.get((base_url, api_key))
        if sender is None:
            sender = senders[(base_url, api_key)] = Sender(self._ssl_context())
        return sender

    def forget(self) -> None:
        """Drop every sender (in a forked child, where they hold the parent's sockets)."""
        self._local = threading.local()
        self._lock = threading.Lock()
