"""The fleet-wide limit per model endpoint, kept in Redis.

Every worker process on every machine goes through the same two structures per
endpoint: a sorted set of *leases* (one per call in flight, scored by when it
expires) caps concurrency, and a sorted set of call start times over the last
minute caps requests per minute. Both are checked and taken in one Lua script,
with Redis's clock, so machines with skewed clocks agree. A lease that a dead
worker never released expires after the request timeout plus a margin, which is
what "released when a worker dies" means here. The concurrency cap adapts to 429
answers (see :class:`~verifleet.orchestrator.store.EndpointLimits`).

A call that finds the cap full blocks on a Redis list (``BLPOP``) that every
release pushes to, instead of polling: measured here, threads polling every
10-30 ms for a slot of a slow endpoint cost a worker 30-50 ms of CPU per unit.
The list is only a wake-up call (the lease set stays the truth), so a lost or
stale wake-up costs one more acquire attempt, and the wait is bounded anyway.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Callable, Iterator

import redis

from verifleet.orchestrator.store import EndpointLimits, is_rate_limited
from verifleet.pipeline import ModelCallError
from verifleet.schemas import ModelConfig

__all__ = ["RedisCallGate"]

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[3])
if cap > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  -- min with the configured cap: a lowered max_concurrency applies at once even
  -- while an adapted cap from before is still stored
  local eff = math.max(1, math.floor(math.min(cap, tonumber(redis.call('GET', KEYS[3]) or cap))))
  if redis.call('ZCARD', KEYS[1]) >= eff then return -1 end
end
local rpm = tonumber(ARGV[4])
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
  if redis.call('ZCARD', KEYS[2]) >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return math.max(1, tonumber(oldest[2]) + 60000 - now)
  end
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], 120000)
end
if cap > 0 then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
end
return 0
"""

# Release a lease, wake one waiter and adapt the cap in one round trip (one per
# call, on the hot path). KEYS: leases, cap, wake-up list, shrink marker.
# ARGV: token, configured cap, factor: <1 shrinks (a 429; at most once per marker
# lifetime, ARGV[5] ms), 0 grows by ARGV[4]/cap (a success), -1 leaves the cap alone.
_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
local cap = tonumber(ARGV[2])
redis.call('LPUSH', KEYS[3], 1)
redis.call('LTRIM', KEYS[3], 0, cap - 1)
redis.call('PEXPIRE', KEYS[3], 60000)
local cur = math.min(cap, tonumber(redis.call('GET', KEYS[2]) or cap))
local new
local factor = tonumber(ARGV[3])
if factor < 0 then return tostring(cur) end
if factor > 0 then
  if not redis.call('SET', KEYS[4], 1, 'PX', tonumber(ARGV[5]), 'NX') then
    return tostring(cur)
  end
  new = math.max(1, cur * factor)
else
  new = math.min(cap, cur + tonumber(ARGV[4]) / math.max(cur, 1))
end
redis.call('SET', KEYS[2], tostring(new), 'EX', 3600)
return tostring(new)
"""


class RedisCallGate:
    """A ``CallGate`` (see :mod:`verifleet.pipeline`) backed by Redis.

    Args:
        client: Redis client shared by the worker process.
        lease_seconds: How long a call may hold its slot before the slot is
            considered abandoned (request timeout plus a margin).
        max_wait: Seconds to wait for a slot before the call fails with
            :class:`ModelCallError` (the unit then records the error).
        prefix: Key prefix.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        lease_seconds: float,
        max_wait: float,
        prefix: str = "vf",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._lease_ms = int(lease_seconds * 1000)
        self._max_wait = max_wait
        self._prefix = prefix
        self._sleep = sleep
        self._shrink_ms = int(EndpointLimits.shrink_every * 1000)
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)

    def _keys(self, limits: EndpointLimits) -> list[str]:
        base = f"{self._prefix}:limit:{limits.key}"
        return [
            f"{base}:leases",
            f"{base}:starts",
            f"{base}:cap",
            f"{base}:free",
            f"{base}:shrunk",
        ]

    def __call__(self, model: ModelConfig) -> contextlib.AbstractContextManager[object]:
        limits = EndpointLimits.of(model)
        if limits is None:
            return contextlib.nullcontext()
        return self._slot(limits)

    @contextlib.contextmanager
    def _slot(self, limits: EndpointLimits) -> Iterator[object]:
        keys = self._keys(limits)
        token = uuid.uuid4().hex
        cap = limits.max_concurrency or 0
        args: list[str | int] = [token, self._lease_ms, cap, limits.requests_per_minute or 0]
        give_up = time.monotonic() + self._max_wait
        while True:
            wait_ms = int(self._acquire(keys=keys[:3], args=args))
            if wait_ms == 0:
                break
            left = give_up - time.monotonic()
            if left <= 0:
                raise ModelCallError(
                    f"no capacity on the endpoint within {self._max_wait:.0f}s "
                    f"(cap {cap or '-'}, {limits.requests_per_minute or '-'} requests/min)",
                    transient=True,
                    attempts=0,
                )
            if wait_ms < 0:  # cap full: until a release (or 1 s, in case it was missed)
                self._client.blpop([keys[3]], timeout=min(1.0, max(left, 0.01)))
            else:  # the minute's request budget is spent: until its oldest call ages out
                self._sleep(min(wait_ms / 1000, 0.25, left) * (0.5 + random.random()))
        factor: float = 0.0  # grow, unless the call ends in anything but success
        try:
            yield token
        except BaseException as exc:
            # A 429 shrinks the cap; any other failure releases without adapting.
            factor = EndpointLimits.shrink_factor if is_rate_limited(exc) else -1.0
            raise
        finally:
            if cap:
                self._release(
                    keys=[keys[0], keys[2], keys[3], keys[4]],
                    args=[token, cap, factor, EndpointLimits.growth, self._shrink_ms],
                )
