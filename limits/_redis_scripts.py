"""The Redis backend's Lua scripts: each check-and-take and each release is one
atomic round trip, timed by Redis's clock so that machines with skewed clocks
agree. The window arithmetic mirrors :class:`verifleet.limits.Window` (same
fields, same rules; the policy's numbers come in as arguments, so Python holds
the only copy of them)."""

from __future__ import annotations

__all__ = ["ACQUIRE", "REPORT", "WINDOW", "WINDOW_STATE"]

# Check every limit, then take a slot in all of them, in one atomic step.
# KEYS: leases, starts, window (hash), spends (call -> start ms), spent (call ->
# tokens, plus the field '#sum', the total of the calls in the window), pause,
# active (caller process -> when it last asked or reported), starving (process
# below its share that found the window full -> when).
# ARGV: call id, lease ms, ceiling (0: no cap), rpm, tpm, the call's token
# estimate, adaptive (1/0), the window's start (AdaptivePolicy.start), the
# caller's process token, the slots that process holds now.
# A process's *share* is the window divided by the processes active in the last
# 2 s (rounded down): it may keep up to that many slots for its own next calls
# (see limits/_pool.py). A process at its share takes a free slot only while no
# process below its share waits for one, so a process that keeps slots can never
# starve another.
# Returns {0, 0, Redis's TIME (s, us), the caller's share} (taken), {-1, 0}
# (window full: wait for a release), {-2, 0} (the caller holds its share and the
# rest is someone else's: wait for one of its own slots) or {1, ms until a call
# may start}: the endpoint's pause (a 429's Retry-After) or until the window's
# oldest call ages out.
ACQUIRE = """
local paused = redis.call('PTTL', KEYS[6])
if paused > 0 then return {1, paused} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[3])
local share = 0
if cap > 0 then
  -- leases of dead workers expire here (their score is the lease's end)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local eff = cap
  if ARGV[7] == '1' then
    -- min with the ceiling: a lowered max_concurrency applies at once
    local size = tonumber(redis.call('HGET', KEYS[3], 'size') or ARGV[8])
    eff = math.max(1, math.floor(math.min(cap, size)))
  end
  redis.call('ZADD', KEYS[7], now, ARGV[9])
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now - 2000)
  redis.call('PEXPIRE', KEYS[7], 60000)
  share = math.floor(eff / redis.call('ZCARD', KEYS[7]))
  local full = redis.call('ZCARD', KEYS[1]) >= eff
  local held = tonumber(ARGV[10])
  if held < share then
    if full then
      redis.call('ZADD', KEYS[8], now, ARGV[9])
      redis.call('PEXPIRE', KEYS[8], 60000)
      return {-1, 0}
    end
  elseif share > 0 then
    if full then return {-2, 0} end
    redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now - 2000)
    local starving = redis.call('ZCARD', KEYS[8])
    if redis.call('ZSCORE', KEYS[8], ARGV[9]) then starving = starving - 1 end
    if starving > 0 then return {-2, 0} end
  elseif full then
    return {-1, 0}
  end
end
local rpm = tonumber(ARGV[4])
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
  if redis.call('ZCARD', KEYS[2]) >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {1, math.max(1, tonumber(oldest[2]) + 60000 - now)}
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
    return {1, math.max(1, tonumber(oldest[2]) + 60000 - now)}
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
if cap > 0 and tonumber(ARGV[10]) + 1 >= share then redis.call('ZREM', KEYS[8], ARGV[9]) end
return {0, 0, t[1], t[2], share}
"""

# What calls that ended tell the endpoint, and the slots given back, in one
# round trip: per call, settle its tokens, set a pause and move the window by
# its outcome, in the order the calls ended; then release the slots and wake
# one waiter per slot. A worker process sends one call's end at once (a 429,
# a slot it does not keep) or several together (the calls whose slots it kept
# for its next calls, every ~``keep_idle / 2`` s).
# KEYS: leases, window (hash), wake-up list, spent, pause, active (see ACQUIRE).
# ARGV: [1] ceiling (0: no cap), [2] adaptive (1/0), [3] the window's start
# (AdaptivePolicy.start), [4..11] the policy: backoff, hold ms, probe, probe
# gain, latency tolerance, latency floor ms, smoothing, drift; [12] the lease ms
# (a lease's score minus it is when its slot was taken, by Redis's clock); [13] the slots the sender holds in the
# lease set now (the calls in flight are the others' slots plus the sender's
# busy ones); [14] the sender's process token; [15] k, the number of calls;
# then k x 7: the call's lease member
# (and tokens-per-minute spend), its outcome (0 success, 1 pushback, 2 another
# failure: no adaptation), its latency in ms, its actual tokens (-1: keep the
# estimate), ms to pause the endpoint (never shortening a longer pause already
# set; only when Window.pause_applies), when it started by Redis's clock in ms
# (-1: when its lease was taken), the sender's calls in flight as it ended
# (itself included); then the lease members to release.
# Returns {the window after these calls ('' when it did not move), Redis's TIME
# (s, us), the pause's ms left, the sender's share (see ACQUIRE), the leases
# held now}.
REPORT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[1])
local windowed = cap > 0 and ARGV[2] == '1'
local hold = tonumber(ARGV[5])
local tolerance = tonumber(ARGV[8])
local floor_ms = tonumber(ARGV[9])
local lease_ms = tonumber(ARGV[12])
local k = tonumber(ARGV[15])
local others = 0
if cap > 0 then others = math.max(0, redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[13])) end
local size, peak, base, smooth, shrunk, unheld
if windowed and k > 0 then
  local st = redis.call('HMGET', KEYS[2], 'size', 'peak', 'base', 'smooth', 'shrunk', 'unheld')
  size = math.min(cap, tonumber(st[1]) or tonumber(ARGV[3]))
  peak = tonumber(st[2])
  base = tonumber(st[3])
  smooth = tonumber(st[4])
  shrunk = tonumber(st[5])
  unheld = tonumber(st[6]) or 0
end
local moved = false
local pause_to = 0
for i = 0, k - 1 do
  local a = 16 + i * 7
  local member = ARGV[a]
  local outcome = tonumber(ARGV[a + 1])
  local pause = tonumber(ARGV[a + 4])
  local started = tonumber(ARGV[a + 5])
  local n = others + tonumber(ARGV[a + 6])
  if started < 0 then
    -- the call's start by Redis's clock (-1e18: its lease expired, it is old news)
    started = -1e18
    if cap > 0 then
      local lease = redis.call('ZSCORE', KEYS[1], member)
      if lease then started = tonumber(lease) - lease_ms end
    end
  end
  if pause > 0 and windowed then
    -- only a refusal soon after a decrease, of a call admitted after it, pauses
    -- (Window.pause_applies): an isolated one is answered by the decrease alone
    if shrunk == nil or started <= shrunk or now - shrunk >= math.max(hold, smooth or 0) then
      pause = 0
    end
  end
  if pause > pause_to then pause_to = pause end
  local used = tonumber(ARGV[a + 3])
  if used >= 0 then
    -- absent once the call's spend aged out of the window: nothing to correct then
    local old = redis.call('HGET', KEYS[4], member)
    if old then
      redis.call('HSET', KEYS[4], member, used)
      redis.call('HINCRBY', KEYS[4], '#sum', used - tonumber(old))
    end
  end
  if windowed and outcome ~= 2 then
    moved = true
    if outcome == 0 then
      local lat = tonumber(ARGV[a + 2])
      if base == nil or smooth == nil then
        base = lat
        smooth = lat
      else
        base = math.min(lat, base + (lat - base) * tonumber(ARGV[11]))
        local limit = math.max(tolerance * base, base + floor_ms)
        smooth = smooth + (math.min(lat, 2 * limit) - smooth) * tonumber(ARGV[10])
      end
      if smooth > math.max(tolerance * base, base + floor_ms) then
        outcome = 3
      elseif n >= size / 2 then
        if peak == nil then
          size = size + 1
        elseif size < peak - 1 then
          size = size + 1 / size
        else
          size = size + (tonumber(ARGV[6]) + tonumber(ARGV[7]) * (size - (peak - 1))) / size
        end
        size = math.min(size, cap)
      end
    end
    -- a refusal counts when its call started after the last decrease; the
    -- latency signal (3) once per hold
    local shrink = false
    if outcome == 1 then
      shrink = shrunk == nil or started > shrunk
      if not shrink and peak ~= nil and unheld >= 1 and started > -1e18 then
        -- the burst's brake: a refusal of the last decrease's burst takes a
        -- call the endpoint never held off the peak (Window.pushed_back)
        unheld = unheld - 1
        peak = peak - 1
        size = math.max(1, math.min(size, tonumber(ARGV[4]) * peak))
      end
    elseif outcome == 3 then
      shrink = shrunk == nil or now - shrunk >= math.max(hold, smooth or 0)
    end
    if shrink then
      -- slow start's overshoot (its window grew past the calls in flight):
      -- the burst's brake may take up to half of the peak off
      if outcome == 1 and peak == nil and size > n then
        unheld = math.floor(n / 2)
      else
        unheld = 0
      end
      size = math.max(1, tonumber(ARGV[4]) * math.min(size, n))
      peak = n
      shrunk = now
    end
  end
end
if pause_to > 0 and redis.call('PTTL', KEYS[5]) < pause_to then
  redis.call('SET', KEYS[5], 1, 'PX', pause_to)
end
local first = 16 + k * 7
if cap > 0 and #ARGV >= first then
  local wake = {}
  for i = first, #ARGV do
    redis.call('ZREM', KEYS[1], ARGV[i])
    wake[#wake + 1] = 1
  end
  redis.call('LPUSH', KEYS[3], unpack(wake))
  -- a wake-up only prompts one more acquire attempt: a few stale ones are
  -- harmless; a burst of releases must not lose many (each process reads them
  -- one by one)
  redis.call('LTRIM', KEYS[3], 0, 127)
  redis.call('PEXPIRE', KEYS[3], 60000)
end
local reply = ''
if moved then
  local fields = {'size', tostring(size)}
  if peak ~= nil then
    fields[#fields + 1] = 'peak'
    fields[#fields + 1] = tostring(peak)
  end
  if base ~= nil then
    fields[#fields + 1] = 'base'
    fields[#fields + 1] = tostring(base)
    fields[#fields + 1] = 'smooth'
    fields[#fields + 1] = tostring(smooth)
  end
  if shrunk ~= nil then
    fields[#fields + 1] = 'shrunk'
    fields[#fields + 1] = tostring(shrunk)
    fields[#fields + 1] = 'unheld'
    fields[#fields + 1] = tostring(unheld)
  end
  redis.call('HSET', KEYS[2], unpack(fields))
  redis.call('EXPIRE', KEYS[2], 3600)
  reply = tostring(size)
end
local held = 0
local share = 0
if cap > 0 then
  held = redis.call('ZCARD', KEYS[1])
  local eff = cap
  if ARGV[2] == '1' then
    if size == nil then size = tonumber(redis.call('HGET', KEYS[2], 'size') or ARGV[3]) end
    eff = math.max(1, math.floor(math.min(cap, size)))
  end
  redis.call('ZADD', KEYS[6], now, ARGV[14])
  redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', now - 2000)
  redis.call('PEXPIRE', KEYS[6], 60000)
  share = math.floor(eff / redis.call('ZCARD', KEYS[6]))
end
return {reply, t[1], t[2], redis.call('PTTL', KEYS[5]), share, held}
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

#: The fields of an endpoint's window hash, in the order :data:`REPORT` reads them.
WINDOW_STATE = ("size", "peak", "base", "smooth", "shrunk", "unheld")
