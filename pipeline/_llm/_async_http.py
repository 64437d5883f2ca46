"""The direct caller's HTTP when it runs bridged on an event loop (the reward
server): one ``aiohttp`` session per loop, shared by every request it serves.

Why aiohttp and not httpx's async transport: httpcore's pool walks every
connection for each request it assigns, which at thousands of concurrent judge
calls costs more CPU than the calls themselves; aiohttp keeps idle connections
per host in a queue. The reply becomes an ``httpx.Response`` and aiohttp's
errors become httpx's and the reply offers what is read of an ``httpx.Response``
(:class:`AsyncReply`), so everything after the request (reply parsing, error
classification and ``Retry-After``, retries) is the synchronous path's.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from typing import cast

import aiohttp
import httpx

from verifleet.limits import DEFAULT_MAX_CONCURRENCY

from .._bridge import wait_for
from ._proxy import proxied

__all__ = [
    "MAX_CONNECTIONS_PER_ENDPOINT",
    "AsyncReply",
    "AsyncSender",
    "async_sender",
    "close_async_senders",
]

#: Connections one event loop keeps to one endpoint at most (the calls in flight
#: are capped lower, per model: :class:`AsyncSender`).
MAX_CONNECTIONS_PER_ENDPOINT = 4096

_SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, AsyncSender]] = (
    weakref.WeakKeyDictionary()
)


class AsyncReply:
    """What the reply parsing and error classification read of an
    ``httpx.Response`` (status, headers, body, the request's URL), without
    building one: for a judge call that was a tenth of the server's CPU."""

    __slots__ = ("content", "headers", "request", "status_code")

    def __init__(
        self, status: int, headers: Mapping[str, str], content: bytes, request: httpx.Request
    ) -> None:
        self.status_code = status
        self.headers = headers
        self.content = content
        self.request = request

    @property
    def is_success(self) -> bool:
        """A 2xx status."""
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        """The body as text (replacing what does not decode)."""
        return self.content.decode("utf-8", errors="replace")


class AsyncSender:
    """Posts to one endpoint from bridged code, through a session of the running loop.

    At most ``max_concurrency`` calls are in flight; the others wait here, on the
    loop, before their request (and its timeout) starts. Without that cap, a
    server handed thousands of rollouts at once sends thousands of calls to a
    judge that serves dozens: they queue there past their timeout, are retried,
    and no request finishes.

    Args:
        max_concurrency: Calls in flight at most (the model's
            ``max_concurrency``; :data:`~verifleet.limits.DEFAULT_MAX_CONCURRENCY`
            when None).
    """

    def __init__(self, max_concurrency: int | None = None) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._requests: dict[str, httpx.Request] = {}
        self.max_concurrency = max_concurrency or DEFAULT_MAX_CONCURRENCY
        self._slots = asyncio.Semaphore(self.max_concurrency)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=MAX_CONNECTIONS_PER_ENDPOINT, limit_per_host=0, ttl_dns_cache=300
            )
            # Proxy variables are honoured, as on the synchronous path; without
            # them trust_env stays off: it reads ~/.netrc in a thread per request.
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=proxied(), auto_decompress=True
            )
        return self._session

    async def _post(
        self, url: str, content: bytes, headers: dict[str, str], timeout: float
    ) -> httpx.Response:
        request = self._requests.get(url)
        if request is None:  # only names the URL in errors: one per URL will do
            request = self._requests[url] = httpx.Request("POST", url)
        limits = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
        try:
            async with (
                self._slots,
                self._open().post(url, data=content, headers=headers, timeout=limits) as reply,
            ):
                body = await reply.read()
                status = reply.status
                head = reply.headers
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"no reply within {timeout:g}s", request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.RemoteProtocolError(
                f"{type(exc).__name__}: {exc}", request=request
            ) from exc
        return cast(httpx.Response, AsyncReply(status, head, body, request))

    def post(
        self, url: str, *, content: bytes, headers: dict[str, str], timeout: float
    ) -> httpx.Response:
        """POST ``content`` and read the whole response (bridged: the loop runs meanwhile).

        Raises:
            httpx.HTTPError: timeouts, refused or broken connections, as httpx names them.
        """
        return wait_for(self._post(url, content, headers, timeout))

    async def aclose(self) -> None:
        """Close the session's connections."""
        if self._session is not None:
            await self._session.close()


def async_sender(
    base_url: str, api_key: str | None, *, max_concurrency: int | None = None
) -> AsyncSender:
    """The running loop's sender for ``(base_url, api_key)``, built on first use
    with ``max_concurrency`` (the first caller's)."""
    loop = asyncio.get_running_loop()
    senders = _SESSIONS.get(loop)
    if senders is None:
        senders = _SESSIONS[loop] = {}
    key = f"{base_url}\0{api_key or ''}"
    sender = senders.get(key)
    if sender is None:
        sender = senders[key] = AsyncSender(max_concurrency)
    return sender


async def close_async_senders() -> None:
    """Close the running loop's sessions (at server shutdown)."""
    senders = _SESSIONS.pop(asyncio.get_running_loop(), {})
    for sender in senders.values():
        await sender.aclose()
