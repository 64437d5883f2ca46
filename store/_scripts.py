"""The store's Lua scripts: a step of a worker's units (results written, units
taken up), a scenario run, a drained shard, a job's progress, each in one
atomic round trip."""

from __future__ import annotations

__all__ = ["QUEUE_WEIGHTS", "READ_PROGRESS", "RECORD_SHARD", "UNITS_STEP", "WRITE_SCENARIO"]

# A Lua function, not a script: the scripts that need a queue's weights start
# with it. queue_weights(schedule zset, jobs' key prefix '<prefix>:job:') returns
# a flat list: job id, its weight as stored ('1' when unset), ... in pass order.
QUEUE_WEIGHTS = """
local function queue_weights(schedule, jobs)
  local out = {}
  for _, job in ipairs(redis.call('ZRANGE', schedule, 0, -1)) do
    out[#out + 1] = job
    out[#out + 1] = redis.call('HGET', jobs .. job .. ':meta', 'weight') or '1'
  end
  return out
end
"""

# One step of a worker thread's units, in one round trip: the results of the
# units it finished are written, then the units it runs next are taken up (a
# thread that runs a message of several units pays one script per step of them,
# not two per unit). The writes come first, so a finished unit is done before
# the next ones are marked in flight. What holds for the whole step (the job's
# status, its total, its start time) is read or written once per step: this
# script runs for every unit, and every command in it counts.
#
# KEYS: meta, done, inflight, templates, attempts, results, pairs, failed, then
# one verdict set per written result, in order.
# ARGV[1]: now (s), ARGV[2]: now (ISO), ARGV[3]: how many units are written;
# then per written unit: its key, how many results (n), and five per result:
# its key, its blob, its pair id, the pair's display text ('' when an earlier
# result of the step gave it), 1 if it is an error; then two per unit taken up:
# its key, the template id whose description the worker lacks ('' for none).
#
# Writes: a unit done already writes nothing (its results may have been drained
# out of Redis since), and verdicts count only the results this call actually
# stored: a redelivered task that judged differently must not add its verdict
# next to the first one.
# Takes up: a unit of a live job that is not done is marked started (in flight;
# a queued job becomes running), which in the same script also closes the gap
# in which a cancel could be overwritten by "running". A unit still in flight
# from an earlier start that never finished counts a further try (only then
# does it cost an attempts entry).
# Returns {1 when a write finished the whole job, then per unit taken up:
# {status ('' when the job is unknown), 1 when the unit is done already, the
# description or false, this start's try number}}.
UNITS_STEP = """
local now, now_iso = ARGV[1], ARGV[2]
local units, firsts = {}, {}
local a = 4
for i = 1, tonumber(ARGV[3]) do
  units[i], firsts[i] = ARGV[a], a
  a = a + 2 + tonumber(ARGV[a + 1]) * 5
end
local finished = 0
if #units > 0 then
  local done = redis.call('SMISMEMBER', KEYS[2], unpack(units))
  local written, failed, sets, members = {}, {}, {}, {}
  local v = 9
  for i = 1, #units do
    local n = tonumber(ARGV[firsts[i] + 1])
    if done[i] == 0 then
      written[#written + 1] = units[i]
      local any_error = false
      for r = 0, n - 1 do
        local b = firsts[i] + 2 + r * 5
        if redis.call('HSETNX', KEYS[6], ARGV[b], ARGV[b + 1]) == 1 then
          if ARGV[b + 3] ~= '' then redis.call('HSETNX', KEYS[7], ARGV[b + 2], ARGV[b + 3]) end
          local set = KEYS[v + r]
          if not members[set] then
            sets[#sets + 1] = set
            members[set] = {}
          end
          table.insert(members[set], ARGV[b])
          if ARGV[b + 4] == '1' then any_error = true end
        end
      end
      if any_error then failed[#failed + 1] = units[i] end
    end
    v = v + n
  end
  for _, set in ipairs(sets) do redis.call('SADD', set, unpack(members[set])) end
  if #written > 0 then
    redis.call('SADD', KEYS[2], unpack(written))
    redis.call('ZREM', KEYS[3], unpack(written))
    if #failed > 0 then redis.call('SADD', KEYS[8], unpack(failed)) end
    local total = redis.call('HGET', KEYS[1], 'total_units')
    if total and redis.call('SCARD', KEYS[2]) >= tonumber(total) then
      redis.call('HSET', KEYS[1], 'status', 'done')
      redis.call('HSETNX', KEYS[1], 'finished', now_iso)
      finished = 1
    end
  end
end
local reply = {finished}
if a > #ARGV then return reply end
local begins = {}
for b = a, #ARGV, 2 do begins[#begins + 1] = ARGV[b] end
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'cancelled' or status == 'failed' then
  for _ = 1, #begins do reply[#reply + 1] = {status or '', 0, false, 1} end
  return reply
end
local done = redis.call('SMISMEMBER', KEYS[2], unpack(begins))
local flying = redis.call('ZMSCORE', KEYS[3], unpack(begins))
local add = {}
for i, unit in ipairs(begins) do
  if done[i] == 0 then
    add[#add + 1] = now
    add[#add + 1] = unit
  end
end
if #add > 0 then
  redis.call('ZADD', KEYS[3], unpack(add))
  redis.call('HSETNX', KEYS[1], 'started', now_iso)
  if status == 'queued' then
    redis.call('HSET', KEYS[1], 'status', 'running')
    status = 'running'
  end
end
for i, unit in ipairs(begins) do
  if done[i] == 1 then
    reply[#reply + 1] = {status, 1, false, 1}
  else
    local tries = 1
    if flying[i] then tries = redis.call('HINCRBY', KEYS[5], unit, 1) + 1 end
    local described = false
    local wanted = ARGV[a + (i - 1) * 2 + 1]
    if wanted ~= '' then described = redis.call('HGET', KEYS[4], wanted) end
    reply[#reply + 1] = {status, 0, described, tries}
  end
end
return reply
"""

# KEYS: scenarios hash, results hash. ARGV: scenario unit key, run blob, then result
# key/blob pairs. Whoever stores the run stores its turns, in one atomic step: a
# redelivered scenario that took another path (a model is not deterministic) can
# neither add its turns next to the first run's nor replace them.
WRITE_SCENARIO = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
for i = 3, #ARGV, 2 do
  redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1])
end
return 1
"""


# KEYS: results hash, shards hash, meta hash. ARGV: shard URL, then the result
# keys it holds. Records the shard and removes exactly its results in one step,
# and counts what was removed: a shard written twice removes nothing the second time.
RECORD_SHARD = """
local removed = 0
for i = 2, #ARGV, 1000 do
  removed = removed + redis.call('HDEL', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('HSET', KEYS[2], ARGV[1], #ARGV - 1)
redis.call('HINCRBY', KEYS[3], 'drained', removed)
return removed
"""


# A job's progress in one round trip (``verifleet watch``, ``Job.wait`` and
# dashboards poll it, several times a second each: as a pipeline per pair plus
# the schedule's reads it was six round trips).
# KEYS: meta, done, failed, inflight, results, pairs, scenarios, scenario errors.
# ARGV: [1] in flight counts units started since (s), [2] what the job's verdict
# sets' keys start with ('<prefix>:job:<id>:verdict:', then pair id, ':', the
# verdict), [3] the jobs' key prefix ('<prefix>:job:'), [4] the schedules' key prefix ('<prefix>:sched:'),
# [5] the job id. Keys other than KEYS are built here, as the schedule's claim
# does (one Redis server, not a cluster).
# Returns {} for an unknown job, else {the meta hash (flat), {done, failed, in
# flight, results, scenarios done, scenario errors}, {{pair id, names, pass,
# fail, error, none}...}, the job's share of its queue as a string (false when
# the job is not scheduled)}.
READ_PROGRESS = (
    QUEUE_WEIGHTS
    + """
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then return {} end
local counts = {
  redis.call('SCARD', KEYS[2]), redis.call('SCARD', KEYS[3]),
  redis.call('ZCOUNT', KEYS[4], ARGV[1], '+inf'), redis.call('HLEN', KEYS[5]),
  redis.call('HLEN', KEYS[7]), redis.call('SCARD', KEYS[8])}
local pairs_ = redis.call('HGETALL', KEYS[6])
local verdicts = {}
for i = 1, #pairs_, 2 do
  local set = ARGV[2] .. pairs_[i] .. ':'
  verdicts[#verdicts + 1] = {pairs_[i], pairs_[i + 1],
    redis.call('SCARD', set .. 'pass'), redis.call('SCARD', set .. 'fail'),
    redis.call('SCARD', set .. 'error'), redis.call('SCARD', set .. 'none')}
end
local fields = {}
for i = 1, #meta, 2 do fields[meta[i]] = meta[i + 1] end
local share = false
if fields['cursor'] and fields['queue'] then
  local total, mine = 0, 0
  local weights = queue_weights(ARGV[4] .. fields['queue'], ARGV[3])
  for i = 1, #weights, 2 do
    local w = tonumber(weights[i + 1]) or 1
    total = total + w
    if weights[i] == ARGV[5] then mine = w end
  end
  share = '0'
  if total > 0 then share = tostring(mine / total) end
end
return {meta, counts, verdicts, share}
"""
)
