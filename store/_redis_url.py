"""Redis URLs with a password and TLS, resolved once for every client verifleet makes.

A password goes in the URL (``redis://:password@host:6379/0``, percent-encoded);
TLS is the ``rediss://`` scheme. TLS options come from the URL's query string
(``ssl_cert_reqs``, ``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``,
``ssl_check_hostname``) or, for options a URL should not carry, from the
environment (``VERIFLEET_REDIS_`` and the option's name in capitals; the URL
wins). The variables are documented once: docs/fleet.md, "Settings"
(tests/unit/test_settings_documented.py checks every one read here is listed).

redis-py and kombu disagree on a bare ``rediss://`` URL: redis-py verifies the
server's certificate, kombu (the Celery broker) silently does not. Every client
here gets the same resolved options, so the broker, the store, the workers' limiter
and liveness keys, the reward cache and Flower verify the server the same way.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from verifleet.schemas import ConfigError, VerifleetError

__all__ = ["TLS_ENV", "RedisAccessError", "RedisTarget", "mask_password", "redis_client"]

#: TLS option -> the environment variable that supplies it when the URL does not.
TLS_ENV: dict[str, str] = {
    "ssl_cert_reqs": "VERIFLEET_REDIS_SSL_CERT_REQS",
    "ssl_ca_certs": "VERIFLEET_REDIS_SSL_CA_CERTS",
    "ssl_certfile": "VERIFLEET_REDIS_SSL_CERTFILE",
    "ssl_keyfile": "VERIFLEET_REDIS_SSL_KEYFILE",
    "ssl_check_hostname": "VERIFLEET_REDIS_SSL_CHECK_HOSTNAME",
}

_CERT_REQS = {"required": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")


class RedisAccessError(VerifleetError):
    """Redis cannot be used: unreachable, the password is refused, or the TLS
    handshake fails. The message names the server with its password masked."""


def _cert_reqs(raw: str) -> str:
    value = raw.strip().lower().removeprefix("cert_")
    if value not in _CERT_REQS:
        raise ConfigError(f"ssl_cert_reqs={raw!r}: use required, optional or none")
    return value


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r}: use true or false")


@dataclass(frozen=True)
class RedisTarget:
    """A Redis server as every verifleet client connects to it.

    Attributes:
        url: The URL without TLS query options (password and database kept).
        tls: The resolved TLS options (``ssl_cert_reqs`` as ``required``,
            ``optional`` or ``none``; file paths; ``ssl_check_hostname``), or None
            for a plain ``redis://`` server.
    """

    url: str
    tls: Mapping[str, object] | None = field(default=None)

    @classmethod
    def parse(cls, url: str, env: Mapping[str, str] | None = None) -> RedisTarget:
        """Resolve ``url`` and the TLS environment variables.

        Raises:
            ConfigError: not a ``redis://``, ``rediss://`` or ``unix://`` URL; TLS
                options for a plain ``redis://`` URL; an unknown ``ssl_cert_reqs``;
                a certificate file that does not exist; a key without a certificate.
        """
        env = os.environ if env is None else env
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ConfigError(
                f"Redis URL {mask_password(url)!r}: the scheme must be redis://, rediss:// "
                "(TLS) or unix://"
            )
        query = parse_qsl(parts.query, keep_blank_values=True)
        given = {k: v for k, v in query if k in TLS_ENV}
        # Options that are not about TLS (db, socket_timeout, ...) stay in the URL.
        kept = [(k, v) for k, v in query if k not in TLS_ENV]
        bare = urlunsplit(parts._replace(query=urlencode(kept)))
        if parts.scheme != "rediss":
            if given:
                raise ConfigError(
                    f"Redis URL {mask_password(url)!r} has TLS options "
                    f"({', '.join(sorted(given))}) but the scheme is not rediss://"
                )
            return cls(bare)
        for option, variable in TLS_ENV.items():
            if option not in given and env.get(variable):
                given[option] = env[variable]
        tls: dict[str, object] = {
            "ssl_cert_reqs": _cert_reqs(given.get("ssl_cert_reqs", "required"))
        }
        for option in _FILES:
            if given.get(option):
                path = Path(given[option]).expanduser()
                if not path.is_file():
                    raise ConfigError(f"{option}: no such file {str(path)!r}")
                tls[option] = str(path)
        if "ssl_keyfile" in tls and "ssl_certfile" not in tls:
            raise ConfigError("ssl_keyfile is set but ssl_certfile (the client certificate) is not")
        check = given.get("ssl_check_hostname")
        hostname = _flag("ssl_check_hostname", check) if check else True
        # Python refuses a hostname check without certificate verification.
        tls["ssl_check_hostname"] = hostname and tls["ssl_cert_reqs"] != "none"
        return cls(bare, tls)

    @property
    def safe_url(self) -> str:
        """The URL with its password masked, for messages and logs."""
        return mask_password(self.url)

    def client(self, **kwargs: object) -> redis.Redis:
        """A redis-py client (bytes replies) with the resolved TLS options.

        Raises:
            ValueError: an option redis-py rejects (a malformed query value).
        """
        return redis.Redis.from_url(self.url, **{**(self.tls or {}), **kwargs})

    def broker_use_ssl(self) -> dict[str, object] | None:
        """Celery's ``broker_use_ssl`` (kombu and Flower read it): the same options
        with ``ssl_cert_reqs`` as an ``ssl`` constant, or None without TLS."""
        if self.tls is None:
            return None
        options: dict[str, Any] = dict(self.tls)
        options["ssl_cert_reqs"] = _CERT_REQS[options["ssl_cert_reqs"]]
        return options

    def celery_settings(self) -> dict[str, object]:
        """``broker_url`` and, with TLS, ``broker_use_ssl`` for ``app.conf.update``."""
        settings: dict[str, object] = {"broker_url": self.url}
        use_ssl = self.broker_use_ssl()
        if use_ssl is not None:
            settings["broker_use_ssl"] = use_ssl
        return settings

    def check(self) -> None:
        """PING the server once.

        Raises:
            RedisAccessError: the server is unreachable, refuses the password (or
                wants one), or the TLS handshake fails; the message says which.
        """
        client = self.client(socket_connect_timeout=10, socket_timeout=10)
        try:
            client.ping()
        except redis.AuthenticationError as exc:
            raise RedisAccessError(
                f"Redis at {self.safe_url} refused the credentials or wants a password "
                f"({exc}); put the server's password in the URL: "
                "redis://:PASSWORD@host:port/db (percent-encoded)"
            ) from None
        except redis.RedisError as exc:
            hint = ""
            if "ssl" in str(exc).lower() or "certificate" in str(exc).lower():
                hint = " (TLS: check ssl_ca_certs / VERIFLEET_REDIS_SSL_CA_CERTS)"
            raise RedisAccessError(f"cannot use Redis at {self.safe_url}: {exc}{hint}") from None
        finally:
            client.close()


def mask_password(url: str) -> str:
    """``url`` with the password, if any, replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def redis_client(url: str, **kwargs: object) -> redis.Redis:
    """A redis-py client for ``url`` with the TLS options of :class:`RedisTarget`.

    Raises:
        ConfigError: as :meth:`RedisTarget.parse`.
    """
    return RedisTarget.parse(url).client(**kwargs)
