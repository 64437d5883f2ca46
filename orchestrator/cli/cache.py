"""``verifleet cache stats|clear``: the model-call cache (docs/iterating.md).

With ``--redis URL`` (or ``VERIFLEET_REDIS_URL``) the fleet's cache in Redis,
which every worker, ``serve`` and ``reward --redis`` share; with ``--local`` the
local runs' SQLite file (``VERIFLEET_CACHE_DIR``, default ``~/.cache/verifleet``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.pipeline import CallCache

__all__ = ["open_cache", "register"]

_EPILOG = """\
examples:
  verifleet cache stats --redis redis://127.0.0.1:6379/0
  verifleet cache clear --local
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cache`` sub-command."""
    parser = commands.add_parser(
        "cache",
        description=__doc__,
        epilog=_EPILOG,
    )
    parser.add_argument("action", choices=["stats", "clear"])
    parser.add_argument(
        "--redis", metavar="URL", help="the fleet's Redis (default: $VERIFLEET_REDIS_URL)"
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="the local runs' cache file even when VERIFLEET_REDIS_URL is set",
    )
    parser.add_argument(
        "--cache-dir", type=Path, help="local cache folder (default: $VERIFLEET_CACHE_DIR)"
    )
    parser.set_defaults(handler=_cache)


def open_cache(
    redis_url: str | None, *, local: bool = False, cache_dir: Path | None = None
) -> CallCache:
    """The fleet's cache for ``redis_url`` (checked with one PING), else the local one.

    Raises:
        ConfigError: a malformed Redis URL.
        RedisAccessError: Redis is unreachable or refuses the password or TLS.
    """
    # Imported here: building the parser (--help) must not load them.
    if redis_url and not local:
        from verifleet.store import RedisCallCache, RedisTarget

        target = RedisTarget.parse(redis_url)
        target.check()
        return RedisCallCache(target.client())
    from verifleet.pipeline import DiskCallCache

    return DiskCallCache(cache_dir / "calls.sqlite3" if cache_dir else None)


def _cache(args: argparse.Namespace) -> int:
    url = args.redis or os.environ.get("VERIFLEET_REDIS_URL")
    cache = open_cache(url, local=args.local, cache_dir=args.cache_dir)
    if args.action == "clear":
        removed = cache.clear()
        print(f"call cache cleared: {removed} entries removed")
        return 0
    stats = cache.stats()
    lookups = stats["hits"] + stats["misses"]
    rate = f"{stats['hits'] / lookups:.1%}" if lookups else "n/a"
    print(f"call cache ({stats['where']})")
    print(
        f"  entries:  {stats['entries']} (bound {stats['max_entries']}, TTL {stats['ttl_seconds'] / 86400:g} days)"
    )
    print(f"  size:     {stats['bytes'] / 1e6:.2f} MB")
    print(
        f"  lookups:  {lookups} ({stats['hits']} hits, {stats['misses']} misses, hit rate {rate})"
    )
    return 0
