"""The Redis backend's Lua scripts: each check-and-take and each release is one
atomic round trip, timed by Redis's clock so that machines with skewed clocks
agree. The window arithmetic mirrors :class:`verifleet.limits.Window` (same
fields, same rules; the policy's numbers come in as arguments, so Python holds
the only copy of them)."""

from __future__ import annotations

__all__ = ["ACQUIRE", "LEASE", "RELEASE", "WINDOW", "WINDOW_STATE"]


# Slots leased to worker processes in batches (``LEASE``): a sorted set of owners
# scored by when their lease ends and a hash of how many slots each holds. An
# owner whose lease ended (a dead process) is dropped here, and the sum of the
# others is what the calls in flight by lease add to the per-call leases.
# Keys: pool (zset), held (hash), starving (zset), busy (hash: the calls in
# flight each owner reported with its last renewal).
_POOLED = """
local function pooled(pool, held, starving, busy, now)
  local dead = redis.call('ZRANGEBYSCORE', pool, '-inf', now)
  for _, owner in ipairs(dead) do
    redis.call('HDEL', held, owner)
    redis.call('HDEL', busy, owner)
    redis.call('ZREM', pool, owner)
    redis.call('ZREM', starving, owner)
  end
  local sum = 0
  for _, n in ipairs(redis.call('HVALS', held)) do sum = sum + tonumber(n) end
  return sum
end
"""

# Check every limit, then take a slot in all of them, in one atomic step.
# KEYS: leases, starts, window (hash), spends (call -> start ms), spent (call ->
# tokens, plus the field '#sum', the total of the calls in the window), pause,
# then the pooled leases' pool, held, starving and busy (they count as taken).
# ARGV: call id, lease ms, ceiling (0: no cap), rpm, tpm, the call's token
# estimate, adaptive (1/0), the initial window.
# Returns 0 (taken), -1 (window full) or the ms until a call may start: the
# endpoint's pause (a 429's Retry-After) or until the window's oldest call ages out.
ACQUIRE = (
    _POOLED
    + """
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
  local taken = redis.call('ZCARD', KEYS[1]) + pooled(KEYS[7], KEYS[8], KEYS[9], KEYS[10], now)
  if taken >= eff then return -1 end
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
)

# Settle the call's tokens, set a pause, release its lease, wake one waiter and
# adapt the window, in one round trip (one per call, on the hot path).
# KEYS: leases, window (hash), wake-up list, spent, pause, then the pooled
# leases' pool, held, starving and busy.
# ARGV: [1] call id, [2] ceiling (0: no cap), [3] outcome (0 success, 1 pushback,
# 2 another failure: no adaptation), [4] the call's latency in ms, [5] its actual
# tokens (-1: keep the estimate), [6] ms to pause the endpoint (never shortening
# a longer pause already set; only when Window.pause_applies), [7] adaptive (1/0), [8..16] the policy: initial,
# backoff, hold ms, probe, probe gain, latency tolerance, latency floor ms,
# smoothing, drift; [17] the lease ms (the lease's score minus it is when the
# call started, by Redis's clock).
# Returns the window after this call ('' when there is none).
RELEASE = (
    _POOLED
    + """
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
local n = redis.call('ZCARD', KEYS[1]) + pooled(KEYS[6], KEYS[7], KEYS[8], KEYS[9], now)
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
)


# A worker process's slots of one endpoint, leased in a batch (see ``_pool.py``):
# the outcomes of its calls since its last lease move the window in the order
# they ended, a ``Retry-After`` pause is set, and the process's lease becomes
# what it may hold now. Leased slots count as taken for every other caller, so
# the window is never exceeded fleet-wide; a process that stops renewing its
# lease (dead) loses it after the lease ms.
# KEYS: leases, window (hash), wake-up list, pause, pool, held, starving, busy.
# ARGV: [1] owner, [2] lease ms, [3] ceiling (> 0), [4] adaptive (1/0), [5..13]
# the policy: initial, backoff, hold ms, probe, probe gain, latency tolerance,
# latency floor ms, smoothing, drift; [14] the slots the process wants (its
# calls in flight and its threads waiting for one; 0 gives every idle slot
# back), [15] its calls in flight, [16] how many more it would take if they
# are spare (at most half of what nobody holds), then per outcome five values: 0 success or 1
# pushback, latency ms, the process's calls in flight when it ended (itself
# included; the others' are those they reported with their last renewal), the window's last decrease the process knew of when the call was
# admitted (-1: none) and the ms to pause the endpoint.
# A call "admitted after the last decrease" (Window.pushed_back, pause_applies)
# is one whose process knew of that decrease when it admitted it.
# Fair share: while other processes want slots they cannot get ("starving"), a
# process keeps at most floor(window / processes wanting) of the slots it holds,
# and may still take any slot nobody holds; the rest it gives back as its calls
# end, and every slot given back wakes one waiter.
# Returns {slots held now, slots it may use, the window's limit, the last
# decrease ('' none), the pause's ms left (<= 0: none)}.
LEASE = (
    _POOLED
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]
local cap = tonumber(ARGV[3])
local adaptive = ARGV[4] == '1'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local all = redis.call('ZCARD', KEYS[1]) + pooled(KEYS[5], KEYS[6], KEYS[7], KEYS[8], now)
local mine = tonumber(redis.call('HGET', KEYS[6], owner) or '0')
local others = all - mine
-- the calls in flight elsewhere: per-call leases and what the others reported
local elsewhere = redis.call('ZCARD', KEYS[1])
local flat = redis.call('HGETALL', KEYS[8])
for j = 1, #flat, 2 do
  if flat[j] ~= owner then elsewhere = elsewhere + tonumber(flat[j + 1]) end
end
local st = redis.call('HMGET', KEYS[2], 'size', 'peak', 'base', 'smooth', 'shrunk')
local size = math.min(cap, tonumber(st[1]) or tonumber(ARGV[5]))
local peak = tonumber(st[2])
local base = tonumber(st[3])
local smooth = tonumber(st[4])
local shrunk = tonumber(st[5])
local moved = false
local hold = tonumber(ARGV[7])
for i = 17, #ARGV, 5 do
  local outcome = tonumber(ARGV[i])
  local n = tonumber(ARGV[i + 2]) + elsewhere
  local known = tonumber(ARGV[i + 3])
  local after = shrunk == nil or known >= shrunk
  local pause = tonumber(ARGV[i + 4])
  if pause > 0 and adaptive then
    if shrunk == nil or not after or now - shrunk >= math.max(hold, smooth or 0) then
      pause = 0
    end
  end
  if pause > 0 and redis.call('PTTL', KEYS[4]) < pause then
    redis.call('SET', KEYS[4], 1, 'PX', pause)
  end
  if adaptive then
    moved = true
    if outcome == 0 then
      local lat = tonumber(ARGV[i + 1])
      if base == nil or smooth == nil then
        base = lat
        smooth = lat
      else
        base = math.min(lat, base + (lat - base) * tonumber(ARGV[13]))
        local limit = math.max(tonumber(ARGV[10]) * base, base + tonumber(ARGV[11]))
        smooth = smooth + (math.min(lat, 2 * limit) - smooth) * tonumber(ARGV[12])
      end
      if smooth > math.max(tonumber(ARGV[10]) * base, base + tonumber(ARGV[11])) then
        outcome = 3
      elseif n >= size / 2 then
        if peak == nil then
          size = size + 1
        elseif size < peak - 1 then
          size = size + 1 / size
        else
          size = size + (tonumber(ARGV[8]) + tonumber(ARGV[9]) * (size - (peak - 1))) / size
        end
        size = math.min(size, cap)
      end
    end
    local shrink = false
    if outcome == 1 then
      shrink = after
    elseif outcome == 3 then
      shrink = shrunk == nil or now - shrunk >= math.max(hold, smooth or 0)
    end
    if shrink then
      size = math.max(1, tonumber(ARGV[6]) * math.min(size, n))
      peak = n
      shrunk = now
    end
  end
end
if moved then
  redis.call('HSET', KEYS[2], 'size', tostring(size))
  if peak ~= nil then redis.call('HSET', KEYS[2], 'peak', tostring(peak)) end
  if base ~= nil then
    redis.call('HSET', KEYS[2], 'base', tostring(base), 'smooth', tostring(smooth))
  end
  if shrunk ~= nil then redis.call('HSET', KEYS[2], 'shrunk', tostring(shrunk)) end
  redis.call('EXPIRE', KEYS[2], 3600)
end
local eff = cap
if adaptive then eff = math.max(1, math.floor(math.min(cap, size))) end
local want = tonumber(ARGV[14])
local busy = tonumber(ARGV[15])
local free = math.max(0, eff - all)
local keep = mine
local rivals = redis.call('ZCOUNT', KEYS[7], '(' .. now, '+inf')
if redis.call('ZSCORE', KEYS[7], owner) then rivals = rivals - 1 end
if rivals > 0 then keep = math.min(mine, math.floor(eff / (rivals + 1))) end
-- never more than the window leaves this process, whatever it held before
local allowed = math.max(0, math.min(want, keep + free, eff - others))
local starved = want > allowed
-- a little more, for the threads that arrive next: half of what would be left
local spare = math.min(keep + free, eff - others) - allowed
if want > 0 and spare > 1 then
  allowed = allowed + math.min(tonumber(ARGV[16]), math.floor(spare / 2))
end
local now_held = math.max(busy, allowed)
if now_held > 0 then
  redis.call('HSET', KEYS[6], owner, now_held)
  redis.call('HSET', KEYS[8], owner, busy)
  redis.call('ZADD', KEYS[5], now + tonumber(ARGV[2]), owner)
  for k = 5, 8 do redis.call('PEXPIRE', KEYS[k], tonumber(ARGV[2]) * 2) end
elseif mine > 0 then
  redis.call('HDEL', KEYS[6], owner)
  redis.call('HDEL', KEYS[8], owner)
  redis.call('ZREM', KEYS[5], owner)
end
if starved then
  redis.call('ZADD', KEYS[7], now + 3000, owner)
  redis.call('PEXPIRE', KEYS[7], 6000)
else
  redis.call('ZREM', KEYS[7], owner)
end
if now_held < mine then
  for _ = 1, math.min(mine - now_held, 128) do redis.call('LPUSH', KEYS[3], 1) end
  redis.call('LTRIM', KEYS[3], 0, 127)
  redis.call('PEXPIRE', KEYS[3], 60000)
end
local last = ''
if shrunk ~= nil then last = tostring(shrunk) end
return {now_held, allowed, eff, last, redis.call('PTTL', KEYS[4])}
"""
)

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
