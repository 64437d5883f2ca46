"""The fleet-wide limit per model endpoint, kept in Redis.

Every worker process on every machine goes through the same structures per
endpoint: a sorted set of *leases* (one per call in flight, scored by when it
expires) caps concurrency, a sorted set of call start times over the last
minute caps requests per minute, and a sorted set of the calls' start times with
a hash of their tokens (and the window's running total) caps tokens per minute.
All are checked and taken in one Lua script, with Redis's clock, so machines with
skewed clocks agree; a call's estimate is replaced by its reported usage in the
script that releases its lease. A lease that a dead
worker never released expires after the request timeout plus a margin, which is
what "released when a worker dies" means here. The concurrency cap adapts to 429
answers (see :class:`~verifleet.store.EndpointLimits`), and a 429's
``Retry-After`` pauses the endpoint for every worker (a key with that expiry,
checked first by every acquire).

A call that finds the cap full blocks on a Redis list (``BLPOP``) that every
release pushes to, instead of polling: measured here, threads polling every
10-30 ms for a slot of a slow endpoint cost a worker 30-50 ms of CPU per unit.
The list is only a wake-up call (the lease set stays the truth), so a lost or
stale wake-up costs one more acquire attempt, and the wait is bounded anyway.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterator
from typing import NamedTuple

import redis

from verifleet.pipeline import ModelCallError, endpoint_pause
from verifleet.schemas import ModelConfig
from verifleet.store import EndpointGate, EndpointLimits, is_rate_limited

__all__ = ["RedisCallGate", "Spend"]

_log = logging.getLogger(__name__)

# Check every limit, then take a slot in all of them, in one atomic step.
# KEYS: leases, starts, adapted cap, spends (call -> start ms), spent (call ->
# tokens, plus the field '#sum', the total of the calls in the window), pause.
# ARGV: call id, lease ms, cap, rpm, tpm, the call's token estimate.
# Returns 0 (taken), -1 (cap full) or the ms until a call may start: the
# endpoint's pause (a 429's Retry-After) or until the window's oldest call ages out.
_ACQUIRE = """
local paused = redis.call('PTTL', KEYS[6])
if paused > 0 then return paused end
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
end
local tpm = tonumber(ARGV[5])
local tokens = tonumber(ARGV[6])
if tpm > 0 then
  -- Age out old spends in batches (unpack has a stack limit), keeping the sum.
  while true do
    local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now - 60000, 'LIMIT', 0, 500)
    if #old == 0 then break end
    local freed = 0
    for _, n in ipairs(redis.call('HMGET', KEYS[5], unpack(old))) do
      freed = freed + (tonumber(n) or 0)
    end
    redis.call('HDEL', KEYS[5], unpack(old))
    redis.call('ZREM', KEYS[4], unpack(old))
    redis.call('HINCRBY', KEYS[5], '#sum', -freed)
  end
  local used = 0
  if redis.call('ZCARD', KEYS[4]) > 0 then
    used = tonumber(redis.call('HGET', KEYS[5], '#sum') or 0)
  else
    -- an empty window holds nothing: drop whatever drifted (evicted keys)
    redis.call('DEL', KEYS[5])
  end
  -- alone in an empty window, a call larger than the budget still goes through
  if used > 0 and used + tokens > tpm then
    local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
    return math.max(1, tonumber(oldest[2]) + 60000 - now)
  end
  redis.call('ZADD', KEYS[4], now, ARGV[1])
  redis.call('HSET', KEYS[5], ARGV[1], tokens)
  redis.call('HINCRBY', KEYS[5], '#sum', tokens)
  redis.call('PEXPIRE', KEYS[4], 120000)
  redis.call('PEXPIRE', KEYS[5], 120000)
end
if rpm > 0 then
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], 120000)
end
if cap > 0 then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
end
return 0
"""

# Settle the call's tokens, release its lease, wake one waiter and adapt the cap,
# in one round trip (one per call, on the hot path).
# KEYS: leases, cap, wake-up list, shrink marker, spent, pause.
# ARGV: call id, configured cap (0: no cap), factor: <1 shrinks (a 429; at most
# once per marker lifetime, ARGV[5] ms), 0 grows by ARGV[4]/cap (a success), -1
# leaves the cap alone; ARGV[6]: the call's actual tokens (-1: keep the estimate);
# ARGV[7]: ms to pause the endpoint (a 429's Retry-After; 0: none), never
# shortening a longer pause already set.
_RELEASE = """
local pause = tonumber(ARGV[7])
if pause > 0 and redis.call('PTTL', KEYS[6]) < pause then
  redis.call('SET', KEYS[6], 1, 'PX', pause)
end
local used = tonumber(ARGV[6])
if used >= 0 then
  -- absent once the call's spend aged out of the window: nothing to correct then
  local old = redis.call('HGET', KEYS[5], ARGV[1])
  if old then
    redis.call('HSET', KEYS[5], ARGV[1], used)
    redis.call('HINCRBY', KEYS[5], '#sum', used - tonumber(old))
  end
end
local cap = tonumber(ARGV[2])
if cap <= 0 then return '0' end
redis.call('ZREM', KEYS[1], ARGV[1])
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

# The spends of the current window as a flat [call, start ms, tokens, ...] list.
# KEYS: spends, spent.
_WINDOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now - 60000), '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  out[#out + 1] = live[i]
  out[#out + 1] = live[i + 1]
  out[#out + 1] = redis.call('HGET', KEYS[2], live[i]) or '0'
end
return out
"""


class Spend(NamedTuple):
    """One call in an endpoint's tokens-per-minute window."""

    call: str
    start_ms: int  # Redis's clock
    tokens: int  # the estimate while in flight, the reported usage after


class _Slot:
    """What the gate yields: the caller reports the call's actual tokens to it."""

    __slots__ = ("call", "used")

    def __init__(self, call: str) -> None:
        self.call = call
        self.used: int | None = None

    def record_usage(self, tokens: int) -> None:
        """Keep the input + output tokens the provider reported for this call."""
        self.used = max(0, int(tokens))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisCallGate(EndpointGate):
    """A ``CallGate`` (see :mod:`verifleet.pipeline`) backed by Redis.

    Tokens per minute: a call reserves its estimate (``tokens``; 0 when the caller
    passes none) as it takes its slot, waits while the tokens of the calls started
    in the last 60 s plus its own would exceed ``tokens_per_minute``, and its
    reservation becomes the usage it reports when it ends (see
    :meth:`~verifleet.store.EndpointLimits.tokens_fit`). A call
    larger than the whole budget is let through alone once the window is empty
    instead of waiting forever. A call answered 429 used no tokens; any other
    failure keeps its estimate, since the provider may have done the work.

    Args:
        client: Redis client shared by the worker process.
        lease_seconds: How long a call may hold its slot before the slot is
            considered abandoned (request timeout plus a margin).
        max_wait: Seconds to wait for a slot before the call fails with
            :class:`ModelCallError` (the unit then records the error).
        prefix: Key prefix.
        sleep: Sleep between attempts while a minute's budget is spent.

    Redis errors (unreachable, script errors) propagate from entering and from
    leaving the gate.
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
        super().__init__()
        self._client = client
        self._lease_ms = int(lease_seconds * 1000)
        self._max_wait = max_wait
        self._prefix = prefix
        self._sleep = sleep
        self._shrink_ms = int(EndpointLimits.shrink_every * 1000)
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._window = client.register_script(_WINDOW)

    def _keys(self, limits: EndpointLimits) -> dict[str, str]:
        base = f"{self._prefix}:limit:{limits.key}"
        names = ("leases", "starts", "cap", "free", "shrunk", "spends", "spent", "pause")
        return {name: f"{base}:{name}" for name in names}

    def spends(self, model: ModelConfig) -> list[Spend]:
        """The calls of ``model``'s endpoint started in the last 60 s by Redis's
        clock, oldest first. Empty without a ``tokens_per_minute``.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        limits = EndpointLimits.of(model)
        if limits is None or not limits.tokens_per_minute:
            return []
        keys = self._keys(limits)
        flat = self._window(keys=[keys["spends"], keys["spent"]])
        return [
            Spend(_text(flat[i]), int(float(flat[i + 1])), int(flat[i + 2]))
            for i in range(0, len(flat), 3)
        ]

    @contextlib.contextmanager
    def _slot(self, limits: EndpointLimits, tokens: int) -> Iterator[object]:
        keys = self._keys(limits)
        slot = _Slot(uuid.uuid4().hex)
        cap = limits.max_concurrency or 0
        tpm = limits.tokens_per_minute or 0
        args: list[str | int] = [
            slot.call,
            self._lease_ms,
            cap,
            limits.requests_per_minute or 0,
            tpm,
            tokens,
        ]
        acquire_keys = [keys[k] for k in ("leases", "starts", "cap", "spends", "spent", "pause")]
        give_up = time.monotonic() + self._max_wait
        while True:
            wait_ms = int(self._acquire(keys=acquire_keys, args=args))
            if wait_ms == 0:
                break
            left = give_up - time.monotonic()
            if left <= 0:
                raise ModelCallError(
                    f"no capacity on the endpoint within {self._max_wait:.0f}s "
                    f"(cap {cap or '-'}, {limits.requests_per_minute or '-'} requests/min, "
                    f"{tpm or '-'} tokens/min, this call {tokens} tokens)",
                    transient=True,
                    attempts=0,
                )
            if wait_ms < 0:  # cap full: until a release (or 1 s, in case it was missed)
                self._client.blpop([keys["free"]], timeout=min(1.0, max(left, 0.01)))
            else:  # the minute's budget is spent: until its oldest call ages out
                self._sleep(min(wait_ms / 1000, 0.25, left) * (0.5 + random.random()))
        factor: float = 0.0  # grow, unless the call ends in anything but success
        rate_limited = False
        pause_ms = 0
        try:
            yield slot
        except BaseException as exc:
            # A 429 shrinks the cap (and its Retry-After pauses the endpoint); any
            # other failure releases without adapting.
            rate_limited = is_rate_limited(exc)
            factor = EndpointLimits.shrink_factor if rate_limited else -1.0
            pause_ms = int(endpoint_pause(exc) * 1000)
            raise
        finally:
            # -1 keeps the estimate: the provider said nothing about this call.
            used = 0 if rate_limited else (slot.used if slot.used is not None else -1)
            if cap or (tpm and used >= 0) or pause_ms:
                self._release(
                    keys=[keys[k] for k in ("leases", "cap", "free", "shrunk", "spent", "pause")],
                    args=[
                        slot.call,
                        cap,
                        factor,
                        EndpointLimits.growth,
                        self._shrink_ms,
                        used,
                        pause_ms,
                    ],
                )
