"""The fleet's model-call cache in Redis: one for every worker, the reward servers
and the submitting machine (``verifleet cache stats|clear``).

Entries are plain keys ``{prefix}:cc:{hash}`` with a TTL; an index (a sorted set
by write time) bounds their number: a write that takes it past ``max_entries``
drops the oldest, in the same server-side script. Hits and misses are counted
in a hash (statistics only: a redelivered task counts its lookups twice).
"""

from __future__ import annotations

import time
from typing import Any

import redis

__all__ = ["DEFAULT_CACHE_MAX_ENTRIES", "DEFAULT_CACHE_TTL_SECONDS", "RedisCallCache"]

DEFAULT_CACHE_MAX_ENTRIES = 1_000_000
DEFAULT_CACHE_TTL_SECONDS = 30 * 24 * 3600

# KEYS: the entry, the index, the counters. ARGV: value, ttl (s), now, max entries,
# the entry key. Returns the entry stored: one already there is kept (the first
# reply wins fleet-wide); else the value, then drops index members whose entry
# expired and the oldest beyond the bound (at most 100 per write, so a lowered
# bound converges without a long script).
_PUT = """
local kept = redis.call('GET', KEYS[1])
if kept then return kept end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
redis.call('HINCRBY', KEYS[3], 'writes', 1)
local expired = tonumber(ARGV[3]) - tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. expired)
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], math.min(over, 100))
  for i = 1, #old, 2 do redis.call('DEL', old[i]) end
end
return ARGV[1]
"""


# KEYS: the entry, the counters. Returns the entry (or nil) and counts the lookup.
_GET = """
local value = redis.call('GET', KEYS[1])
redis.call('HINCRBY', KEYS[2], value and 'hits' or 'misses', 1)
return value
"""


class RedisCallCache:
    """A :class:`~verifleet.pipeline.CallCache` in Redis.

    Args:
        client: The fleet's Redis.
        prefix: The store's key prefix.
        max_entries: The size bound.
        ttl_seconds: How long an entry is reused.

    Lookups and writes raise ``redis.RedisError`` when Redis is unreachable; the
    model-call cache's users count that as a miss and call the model
    (``verifleet.pipeline.CachingCaller``).
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "vf",
        max_entries: int = DEFAULT_CACHE_MAX_ENTRIES,
        ttl_seconds: int = DEFAULT_CACHE_TTL_SECONDS,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._index = f"{prefix}:cc-index"
        self._counters = f"{prefix}:cc-stats"
        self._put = client.register_script(_PUT)
        self._get = client.register_script(_GET)

    def _key(self, key: str) -> str:
        return f"{self.prefix}:cc:{key}"

    def get(self, key: str) -> bytes | None:
        """The entry under ``key`` (None: missing or expired); counts a hit or a
        miss in the same round trip."""
        value = self._get(keys=[self._key(key), self._counters])
        return bytes(value) if value is not None else None

    def put(self, key: str, value: bytes) -> bytes:
        """Store ``value`` with the TTL unless ``key`` holds an entry (the first
        reply stored anywhere in the fleet is kept; the oldest entries beyond the
        bound go); return the entry now stored."""
        full = self._key(key)
        kept = self._put(
            keys=[full, self._index, self._counters],
            args=[value, int(self.ttl_seconds), time.time(), self.max_entries, full],
        )
        return bytes(kept)

    def stats(self) -> dict[str, Any]:
        """Entries, bytes (Redis's own count of the entries' memory, sampled),
        hits, misses and the bounds."""
        self.client.zremrangebyscore(self._index, "-inf", f"({time.time() - self.ttl_seconds}")
        entries = int(self.client.zcard(self._index))
        counters = {
            (k.decode() if isinstance(k, bytes) else str(k)): int(v)
            for k, v in self.client.hgetall(self._counters).items()
        }
        sample: list[Any] = list(self.client.zrange(self._index, -100, -1))
        sizes = [int(self.client.memory_usage(m) or 0) for m in sample]
        per_entry = sum(sizes) / len(sizes) if sizes else 0
        return {
            "where": "redis",
            "entries": entries,
            "bytes": int(per_entry * entries),
            "hits": counters.get("hits", 0),
            "misses": counters.get("misses", 0),
            "max_entries": self.max_entries,
            "ttl_seconds": self.ttl_seconds,
        }

    def clear(self) -> int:
        """Remove every entry, the index and the counters; returns the entries
        removed."""
        removed = 0
        batch: list[Any] = []
        for name in self.client.scan_iter(match=f"{self.prefix}:cc:*", count=1000):
            batch.append(name)
            if len(batch) >= 1000:
                removed += int(self.client.delete(*batch))
                batch = []
        if batch:
            removed += int(self.client.delete(*batch))
        self.client.delete(self._index, self._counters)
        return removed
