"""verifleet.web — the HTTP edge shared by the services verifleet serves (the
reward service and the results viewer): ASGI guards for the ``Host`` check (DNS
rebinding), token auth and the body-size limit, and the one loopback test behind
their binding rules. Each guard answers with a JSON ``{"message": ...}`` and the
same status in every service (403 for a refused ``Host``, 401 for a missing token,
413 for a large body), and acts before the app reads a byte of the body. Imports
nothing of ours, so every layer that serves HTTP may use it."""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Collection, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qs

__all__ = [
    "LOOPBACK_NAMES",
    "ASGIApp",
    "BearerAuth",
    "BodyLimit",
    "HostCheck",
    "bearer_token_ok",
    "host_allowed",
    "host_name",
    "is_loopback",
    "matching_token",
    "presented_token",
    "send_json_error",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_json_error(
    send: Send, status: int, message: str, headers: Collection[tuple[bytes, bytes]] = ()
) -> None:
    """Send a complete ``{"message": ...}`` response."""
    body = json.dumps({"message": message}).encode()
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def presented_token(headers: Collection[tuple[bytes, bytes]]) -> bytes | None:
    """The token of a request's ``Authorization: Bearer <token>``, None without one."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, given = value.partition(b" ")
            if scheme.lower() == b"bearer":
                return given.strip()
    return None


def bearer_token_ok(
    headers: Collection[tuple[bytes, bytes]], token: bytes | Collection[bytes]
) -> bool:
    """Whether ``headers`` carry ``Authorization: Bearer <token>`` (one of the
    tokens, when given several).

    Each comparison takes the same time wherever the given token first differs
    (``hmac.compare_digest``), and every token is compared, so response times
    do not leak a token or which one matched.
    """
    given = presented_token(headers)
    tokens = (token,) if isinstance(token, bytes) else token
    return given is not None and matching_token(given, tokens) is not None


def matching_token(given: bytes, tokens: Collection[bytes]) -> bytes | None:
    """The one of ``tokens`` that ``given`` equals, or None; every token is
    compared, each in constant time (``hmac.compare_digest``)."""
    matched = None
    for candidate in tokens:
        if hmac.compare_digest(given, candidate):
            matched = candidate
    return matched


def _cookie(headers: Collection[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The value of cookie ``name`` in the request's ``Cookie`` headers, if any."""
    for header, value in headers:
        if header.lower() == b"cookie":
            for part in value.split(b";"):
                key, _, given = part.strip().partition(b"=")
                if key == name:
                    return given
    return None


class BearerAuth:
    """ASGI middleware answering 401 to HTTP requests without the token, except on
    the ``open_paths`` (the health route, for load balancers).

    The token is sent as ``Authorization: Bearer <token>``. With ``cookie`` set (a
    service a browser opens), it may also come as ``?token=`` (the response then
    sets the cookie, so the page's own requests carry it) or in that cookie. Every
    comparison takes the same time wherever the given token first differs.

    Args:
        app: The wrapped app.
        token: The shared secret callers send, or several (``--tokens-file``:
            one per caller), any of which passes.
        open_paths: Paths served without the token.
        cookie: The cookie that keeps the token in a browser; None accepts the
            header only.
        option: How the server was given the token, named in the 401's message.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str | Sequence[str],
        open_paths: Collection[str] = (),
        *,
        cookie: str | None = None,
        option: str = "--token",
    ) -> None:
        self.app = app
        tokens = [token] if isinstance(token, str) else list(token)
        self.tokens = tuple(t.encode() for t in tokens)
        self.open_paths = frozenset(open_paths)
        self.cookie = cookie.encode() if cookie else None
        self.message = (
            "missing or invalid bearer token: send the header 'Authorization: Bearer <token>' "
            f"with the token the server was started with ({option})"
        )

    def _from_query(self, scope: Scope) -> bytes | None:
        query = scope.get("query_string") or b""
        if self.cookie is None or b"token=" not in query:
            return None
        given = parse_qs(query.decode("latin-1")).get("token")
        return given[0].encode("latin-1") if given else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers") or []
        queried = self._from_query(scope)
        if queried is not None:
            matched = matching_token(queried, self.tokens)
            if matched is not None:
                await self.app(scope, receive, self._setting_cookie(send, matched))
                return
        elif bearer_token_ok(headers, self.tokens) or (
            self.cookie is not None
            and matching_token(_cookie(headers, self.cookie) or b"", self.tokens) is not None
        ):
            await self.app(scope, receive, send)
            return
        await send_json_error(
            send, 401, self.message, [(b"www-authenticate", b'Bearer realm="verifleet"')]
        )

    def _setting_cookie(self, send: Send, token: bytes) -> Send:
        """``send`` with the token cookie added to the response's headers."""
        assert self.cookie is not None
        value = self.cookie + b"=" + token + b"; HttpOnly; Path=/; SameSite=strict"

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (b"set-cookie", value)]
            await send(message)

        return sending


class BodyLimit:
    """ASGI middleware answering 413 to bodies over ``max_bytes``: by the declared
    ``Content-Length`` before reading, else while reading (chunked uploads), so an
    oversized body is never held in memory whole.

    The body is read here and replayed to the app: FastAPI turns any error raised
    while it reads the body into a 400, which would hide the 413.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)

    async def _reject(self, send: Send) -> None:
        await send_json_error(
            send,
            413,
            f"request body larger than {self.max_bytes} bytes, the server's limit "
            "(--max-body-bytes)",
        )


#: Names that always reach this machine: a browser page can only make them resolve
#: elsewhere by editing the hosts file, which is out of a web page's reach.
LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def host_name(value: str) -> str:
    """The name of a ``Host`` header value: port and IPv6 brackets dropped, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value


def host_allowed(value: str, allowed: Collection[str]) -> bool:
    """Whether a request's ``Host`` header value may reach the service.

    Allowed: ``localhost``, any IP address literal, and the names in ``allowed``
    (lower case, without port; ``*`` allows every name). A DNS-rebinding page
    always sends its own host *name* (the browser addressed the attacker's domain,
    which now resolves to 127.0.0.1), so refusing unknown names stops it, while
    clients that address the server by IP or through a configured name pass.
    """
    name = host_name(value)
    if not name or name in LOOPBACK_NAMES or "*" in allowed or name in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name.endswith(".localhost")  # RFC 6761: always loopback
    return True


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps a service on this machine: ``localhost``, or an
    IPv4 or IPv6 loopback address, with or without the brackets a URL puts around
    IPv6 (``[::1]`` names the same address as ``::1``). Other host names count as
    not loopback: what they resolve to can change. Never raises."""
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


_MAX_VERDICTS = 1024


class HostCheck:
    """ASGI middleware answering 403 to requests whose ``Host`` names a server this
    service does not know (:func:`host_allowed`): DNS rebinding lets any web page a local user opens send
    requests to a loopback port under the page's own host name, so a service
    without a token on 127.0.0.1 would otherwise be open to every website.

    Requests without a ``Host`` header (HTTP/1.0 clients, no browser sends one
    without) pass.

    Args:
        app: The wrapped app.
        allowed_hosts: Extra host names to accept (a reverse proxy's public name);
            ``*`` accepts any.
        option: The command-line option that adds a name, named in the 403's message.
    """

    def __init__(
        self, app: ASGIApp, allowed_hosts: Collection[str] = (), *, option: str = "--allowed-host"
    ) -> None:
        self.app = app
        self.option = option
        self.allowed = frozenset(host_name(h) if h != "*" else h for h in allowed_hosts)
        # Verdicts by raw header value: every request of a client carries the
        # same one, parsed as an IP address once. Bounded: a client sending ever new values gets them
        # checked afresh once the table is full.
        self._verdicts: dict[bytes, bool] = {}

    def _allowed(self, value: bytes) -> bool:
        verdict = self._verdicts.get(value)
        if verdict is None:
            verdict = host_allowed(value.decode("latin-1"), self.allowed)
            if len(self._verdicts) < _MAX_VERDICTS:
                self._verdicts[value] = verdict
        return verdict

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope.get("headers") or ():
                if name == b"host":
                    if not self._allowed(value):
                        text = value.decode("latin-1")
                        await send_json_error(
                            send,
                            403,
                            f"host {host_name(text)!r} is not served here: this server answers "
                            "requests addressed to localhost, an IP address or a name given "
                            f"with {self.option} (a guard against DNS rebinding)",
                        )
                        return
                    break
        await self.app(scope, receive, send)
