"""The Redis backend's Lua scripts: each check-and-take and each release is one
atomic round trip, timed by Redis's clock so that machines with skewed clocks
agree. The window arithmetic mirrors :class:`verifleet.limits.Window` (same
fields, same rules; the policy's numbers come in as arguments, so Python holds
the only copy of them)."""

from __future__ import annotations

__all__ = ["ACQUIRE", "RELEASE", "WINDOW", "WINDOW_STATE"]

# Check every limit, then take a slot in all of them, in one atomic step.
# KEYS: leases, starts, window (hash), spends (call -> start ms), spent (call ->
# tokens, plus the field '#sum', the total of the calls in the window), pause.
# ARGV: call id, lease ms, ceiling (0: no cap), rpm, tpm, the call's token
# estimate, adaptive (1/0), the initial window.
# Returns 0 (taken), -1 (window full) or the ms until a call may start: the
# endpoint's pause (a 429's Retry-After) or until the window's oldest call ages out.
ACQUIRE = """
local paused = redis.call('PTTL', KEYS[6])
if paused > 0 then return paused end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[3])
if cap > 0 then
  -- leases of dead workers expire here (their score is the lease's end)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local eff = cap
  if ARGV[7] == '1' then
    -- min with the ceiling: a lowered max_concurrency applies at once
    local size = tonumber(redis.call('HGET', KEYS[3], 'size') or ARGV[8])
    eff = math.max(1, math.floor(math.min(cap, size)))
  end
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

# Settle the call's tokens, set a pause, release its lease, wake one waiter and
# adapt the window, in one round trip (one per call, on the hot path).
# KEYS: leases, window (hash), wake-up list, spent, pause.
# ARGV: [1] call id, [2] ceiling (0: no cap), [3] outcome (0 success, 1 pushback,
# 2 another failure: no adaptation), [4] the call's latency in ms, [5] its actual
# tokens (-1: keep the estimate), [6] ms to pause the endpoint (never shortening
# a longer pause already set; only when Window.pause_applies), [7] adaptive (1/0), [8..16] the policy: initial,
# backoff, hold ms, probe, probe gain, latency tolerance, latency floor ms,
# smoothing, drift; [17] the lease ms (the lease's score minus it is when the
# call started, by Redis's clock).
# Returns the window after this call ('' when there is none).
RELEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pause = tonumber(ARGV[6])
local cap = tonumber(ARGV[2])
-- the call's start by Redis's clock (-1e18: its lease expired, it is old news)
local lease = nil
if cap > 0 then lease = redis.call('ZSCORE', KEYS[1], ARGV[1]) end
local started = -1e18
if lease then started = tonumber(lease) - tonumber(ARGV[17]) end
if pause > 0 and ARGV[7] == '1' and cap > 0 then
  -- only a refusal soon after a decrease, of a call admitted after it, pauses
  -- (Window.pause_applies): an isolated one is answered by the decrease alone
  local w = redis.call('HMGET', KEYS[2], 'shrunk', 'smooth')
  local last = tonumber(w[1])
  if last == nil or started <= last
     or now - last >= math.max(tonumber(ARGV[10]), tonumber(w[2]) or 0) then
    pause = 0
  end
end
if pause > 0 and redis.call('PTTL', KEYS[5]) < pause then
  redis.call('SET', KEYS[5], 1, 'PX', pause)
end
local used = tonumber(ARGV[5])
if used >= 0 then
  -- absent once the call's spend aged out of the window: nothing to correct then
  local old = redis.call('HGET', KEYS[4], ARGV[1])
  if old then
    redis.call('HSET', KEYS[4], ARGV[1], used)
    redis.call('HINCRBY', KEYS[4], '#sum', used - tonumber(old))
  end
end
if cap <= 0 then return '' end
-- the calls in flight, this one included (its lease may have expired already)
local n = redis.call('ZCARD', KEYS[1])
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then n = n + 1 end
redis.call('LPUSH', KEYS[3], 1)
-- a wake-up only prompts one more acquire attempt: a few stale ones are harmless;
-- a burst of releases must not lose many (each process reads them one by one)
redis.call('LTRIM', KEYS[3], 0, 127)
redis.call('PEXPIRE', KEYS[3], 60000)
local outcome = tonumber(ARGV[3])
if ARGV[7] ~= '1' or outcome == 2 then return '' end
local st = redis.call('HMGET', KEYS[2], 'size', 'peak', 'base', 'smooth', 'shrunk')
local size = math.min(cap, tonumber(st[1]) or tonumber(ARGV[8]))
local peak = tonumber(st[2])
local base = tonumber(st[3])
local smooth = tonumber(st[4])
local shrunk = tonumber(st[5])
if outcome == 0 then
  local lat = tonumber(ARGV[4])
  if base == nil or smooth == nil then
    base = lat
    smooth = lat
  else
    base = math.min(lat, base + (lat - base) * tonumber(ARGV[16]))
    local limit = math.max(tonumber(ARGV[13]) * base, base + tonumber(ARGV[14]))
    smooth = smooth + (math.min(lat, 2 * limit) - smooth) * tonumber(ARGV[15])
  end
  if smooth > math.max(tonumber(ARGV[13]) * base, base + tonumber(ARGV[14])) then
    outcome = 3
  elseif n >= size / 2 then
    if peak == nil then
      size = size + 1
    elseif size < peak - 1 then
      size = size + 1 / size
    else
      size = size + (tonumber(ARGV[11]) + tonumber(ARGV[12]) * (size - (peak - 1))) / size
    end
    size = math.min(size, cap)
  end
end
-- a refusal counts when its call started after the last decrease; the latency
-- signal (3) once per hold
local shrink = false
if outcome == 1 then
  shrink = shrunk == nil or started > shrunk
elseif outcome == 3 then
  shrink = shrunk == nil or now - shrunk >= math.max(tonumber(ARGV[10]), smooth or 0)
end
if shrink then
  size = math.max(1, tonumber(ARGV[9]) * math.min(size, n))
  peak = n
  shrunk = now
end
redis.call('HSET', KEYS[2], 'size', tostring(size))
if peak ~= nil then redis.call('HSET', KEYS[2], 'peak', tostring(peak)) end
if base ~= nil then
  redis.call('HSET', KEYS[2], 'base', tostring(base), 'smooth', tostring(smooth))
end
if shrunk ~= nil then redis.call('HSET', KEYS[2], 'shrunk', tostring(shrunk)) end
redis.call('EXPIRE', KEYS[2], 3600)
return tostring(size)
"""

# The spends of the current window as a flat [call, start ms, tokens, ...] list.
# KEYS: spends, spent.
WINDOW = """
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

#: The fields of an endpoint's window hash, in the order :data:`RELEASE` reads them.
WINDOW_STATE = ("size", "peak", "base", "smooth", "shrunk")
