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

import ipaddress
from collections.abc import Sequence

from verifleet.errors import ConfigError
from verifleet.web import ASGIApp, Receive, Scope, Send, send_json_error

__all__ = ["ClientNetworks", "Network", "parse_networks"]

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
