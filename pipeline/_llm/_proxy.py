"""Whether the environment names an HTTP proxy (both HTTP paths honour one)."""

from __future__ import annotations

import os

__all__ = ["PROXY_VARIABLES", "proxied"]

#: Environment variables that name a proxy, in either case.
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def proxied() -> bool:
    """Whether one of :data:`PROXY_VARIABLES` is set (upper or lower case)."""
    return any(os.environ.get(name) or os.environ.get(name.lower()) for name in PROXY_VARIABLES)
