"""Who may call the reward service without a bearer token: an allow-list of
client networks (``verifleet serve --allow-net CIDR``).

NeMo Gym's agents call a resources server at ``http://host:port`` with no
``Authorization`` header and no way to add one, so a token-protected service
answers them 401. An allow-list of the networks its agents run on lets them in
by their address instead: a request from an allowed network needs no token; any
other needs the token when the service has one, and is refused (403) when it
has none. The address is the TCP peer's: behind a reverse proxy every request
comes from the proxy, so list the proxy's address only if the proxy itself
admits nobody else.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Sequence
from typing import Literal

from verifleet.errors import ConfigError
from verifleet.web import ASGIApp, Receive, Scope, Send, presented_token, send_json_error

__all__ = ["FAIR_BY", "CallerIdentity", "ClientNetworks", "FairBy", "Network", "parse_networks"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(specs: Sequence[str]) -> list[Network]:
    """``--allow-net`` values as networks (``10.0.0.0/8``, ``192.168.1.7``, ``fd00::/8``).

    Raises:
        ConfigError: a value is not an address or network, or allows every
            address (``/0``: that is no allow-list; ``--insecure-no-auth`` says so).
    """
    networks: list[Network] = []
    for spec in specs:
        try:
            network = ipaddress.ip_network(spec.strip(), strict=False)
        except ValueError:
            raise ConfigError(
                f"--allow-net {spec!r}: not an IP address or network (e.g. 10.0.0.0/8)"
            ) from None
        if network.prefixlen == 0:
            raise ConfigError(
                f"--allow-net {spec!r} admits every address: that is no allow-list "
                "(use --insecure-no-auth to serve without authentication)"
            )
        networks.append(network)
    return networks


def _mapped(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> object:
    """An IPv4-mapped IPv6 peer (``::ffff:10.0.0.1``, on a dual-stack socket) as IPv4."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class ClientNetworks:
    """ASGI middleware: requests from ``networks`` go straight to ``app``; the
    rest to ``otherwise`` (the token check), or 403 when that is None.

    Args:
        app: The service behind the token check.
        otherwise: ``app`` behind the bearer-token check, for other peers; None:
            other peers are refused.
        networks: The allowed client networks.
        open_paths: Paths anyone reaches (``/health``, ``/ready``).
    """

    def __init__(
        self,
        app: ASGIApp,
        otherwise: ASGIApp | None,
        networks: Sequence[Network],
        open_paths: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.otherwise = otherwise
        self.networks = list(networks)
        self.open_paths = frozenset(open_paths)
        self._verdicts: dict[str, bool] = {}

    def allows(self, host: str | None) -> bool:
        """Whether a peer at ``host`` is in an allowed network."""
        if not host:
            return False
        verdict = self._verdicts.get(host)
        if verdict is None:
            try:
                address = _mapped(ipaddress.ip_address(host))
            except ValueError:
                verdict = False  # a Unix socket path, or no address at all
            else:
                verdict = any(address in net for net in self.networks)
            if len(self._verdicts) < 4096:
                self._verdicts[host] = verdict
        return verdict

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        if self.allows(client[0] if client else None):
            await self.app(scope, receive, send)
        elif self.otherwise is not None:
            await self.otherwise(scope, receive, send)
        elif scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
        else:
            await send_json_error(
                send,
                403,
                "this client's address is not in the server's allowed networks (--allow-net)",
            )


#: How ``/verify`` tells its callers apart for their fair shares
#: (``verifleet serve --fair-share``).
FairBy = Literal["address", "connection", "forwarded-for", "off"]

FAIR_BY: tuple[FairBy, ...] = ("address", "connection", "forwarded-for", "off")


def _forwarded_for(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """The address the nearest proxy put last in ``X-Forwarded-For`` (what the
    client itself wrote before it can be anything), None without one."""
    last: bytes | None = None
    for name, value in headers:
        if name.lower() == b"x-forwarded-for":
            last = value  # several headers: the last is the nearest proxy's
    if last is None:
        return None
    entry = last.rsplit(b",", 1)[-1].strip()
    return entry.decode("latin-1") if entry else None


class CallerIdentity:
    """Who sent a request, as the fair shares of ``/verify`` count it.

    With several bearer tokens (``--tokens-file``: one per tenant), a request
    that carries one of them is that token's caller, whatever its address: a
    keyed hash of the token (the key made at random per process), never the
    token. Otherwise, by ``by``: ``address``: the TCP peer's IP address (every
    connection from one host is one caller, however many it opens);
    ``connection``: the peer's address and port (each connection a caller: a
    batch is what one connection can hold many places with);
    ``forwarded-for``: the last address of ``X-Forwarded-For`` (the one the
    reverse proxy in front appended), else the peer's; only behind a proxy
    that sets it, since a client that reaches the server directly writes what
    it likes there. ``off``: everyone is one caller (first come, first served),
    tokens or not.

    Args:
        by: One of :data:`FAIR_BY`.
        tokens: The server's bearer tokens; with two or more, each is a caller.

    Raises:
        ConfigError: ``by`` is not one of them.
    """

    def __init__(self, by: FairBy, tokens: Sequence[str] = ()) -> None:
        if by not in FAIR_BY:
            raise ConfigError(f"fair share by {by!r}: expected one of {', '.join(FAIR_BY)}")
        self.by = by
        self._key = secrets.token_bytes(32)
        self._callers = (
            {self._digest(t.encode()) for t in tokens} if len(set(tokens)) > 1 else set()
        )

    def _digest(self, token: bytes) -> str:
        return "token:" + hmac.new(self._key, token, hashlib.sha256).hexdigest()[:24]

    @property
    def fair(self) -> bool:
        """Whether callers get shares of their own."""
        return self.by != "off"

    def __call__(self, scope: Scope) -> str | None:
        """The caller of ``scope`` (a keyed hash of its token or an address,
        never a credential); None when off."""
        if self.by == "off":
            return None
        if self._callers:
            given = presented_token(scope.get("headers") or [])
            if given is not None:
                caller = self._digest(given)
                if caller in self._callers:
                    return caller
        client = scope.get("client")
        host = str(client[0]) if client else ""
        if self.by == "connection":
            return f"{host}:{client[1]}" if client else host
        if self.by == "forwarded-for":
            forwarded = _forwarded_for(scope.get("headers") or [])
            if forwarded:
                return forwarded
        return host
