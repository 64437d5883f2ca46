"""The store's Lua scripts: a unit taken up, a unit's results (alone or with the
next unit taken up), a scenario run, a drained shard, each in one atomic round
trip."""

from __future__ import annotations

__all__ = ["BEGIN_UNIT", "RECORD_SHARD", "WRITE_AND_BEGIN", "WRITE_SCENARIO", "WRITE_UNIT"]

# A unit's results written once and the unit marked done (a Lua function shared
# by WRITE_UNIT and WRITE_AND_BEGIN). Keys: results, pairs, failed, done,
# inflight, meta hashes/sets, then one verdict set per result from KEYS[v];
# ARGV[a] the unit's key, ARGV[a + 1] now (ISO), then per result: its key, its
# blob, its pair id, the pair's display text, 1 if it is an error.
# Verdicts count only what this call actually stored: a redelivered task that
# judged differently must not add its verdict next to the first one. A unit done
# already writes nothing: its results may have been drained out of Redis since.
# Returns 1 when this call finished the whole job.
_WRITE_FUNCTION = """
local function write_unit(results, pairs, failed, done, inflight, meta, v, a)
  if redis.call('SISMEMBER', done, ARGV[a]) == 1 then return 0 end
  local any_error = false
  local n = (#ARGV - a - 1) / 5
  for i = 0, n - 1 do
    local b = a + 2 + i * 5
    if redis.call('HSETNX', results, ARGV[b], ARGV[b + 1]) == 1 then
      redis.call('HSETNX', pairs, ARGV[b + 2], ARGV[b + 3])
      redis.call('SADD', KEYS[v + i], ARGV[b])
      if ARGV[b + 4] == '1' then any_error = true end
    end
  end
  if any_error then redis.call('SADD', failed, ARGV[a]) end
  redis.call('SADD', done, ARGV[a])
  redis.call('ZREM', inflight, ARGV[a])
  local total = redis.call('HGET', meta, 'total_units')
  if total and redis.call('SCARD', done) >= tonumber(total) then
    redis.call('HSET', meta, 'status', 'done')
    redis.call('HSETNX', meta, 'finished', ARGV[a + 1])
    return 1
  end
  return 0
end
"""

# KEYS: results, pairs, failed, done, inflight, meta, then one verdict set per
# result. ARGV: the unit's key, now (ISO), then five per result (see above).
WRITE_UNIT = (
    _WRITE_FUNCTION
    + "return write_unit(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], 7, 1)\n"
)

# Everything a worker checks and records as it takes a unit up (a Lua function
# shared by BEGIN_UNIT and WRITE_AND_BEGIN). Keys: meta, done, inflight,
# templates, attempts. ARGV[1..4]: the unit's key, now (s), now (ISO), the
# template id whose description the worker lacks ('' for none).
# Returns [status ('' when the job is unknown), 1 when the unit is done already,
# the description or false, this start's try number]. A unit of a live job that
# is not done is marked started (in flight; a queued job becomes running), which
# in the same script also closes the gap in which a cancel could be overwritten
# by "running". A unit still in flight from an earlier start that never finished
# is counted as a further try (only then does it cost an attempts entry).
_BEGIN_FUNCTION = """
local function begin_unit(meta, done, inflight, templates, attempts)
  local status = redis.call('HGET', meta, 'status')
  if not status then return {'', 0, false, 1} end
  if status == 'cancelled' then return {status, 0, false, 1} end
  if redis.call('SISMEMBER', done, ARGV[1]) == 1 then return {status, 1, false, 1} end
  local tries = 1
  if redis.call('ZADD', inflight, ARGV[2], ARGV[1]) == 0 then
    tries = redis.call('HINCRBY', attempts, ARGV[1], 1) + 1
  end
  redis.call('HSETNX', meta, 'started', ARGV[3])
  if status == 'queued' then
    redis.call('HSET', meta, 'status', 'running')
    status = 'running'
  end
  local described = false
  if ARGV[4] ~= '' then described = redis.call('HGET', templates, ARGV[4]) end
  return {status, 0, described, tries}
end
"""

# KEYS: meta, done, inflight, templates, attempts. ARGV: see _BEGIN_FUNCTION.
BEGIN_UNIT = _BEGIN_FUNCTION + "return begin_unit(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])\n"

# One unit's results written and the next unit (of the same job, in the same
# message) taken up, in one round trip: a worker thread that runs a batch of
# units pays one script per unit instead of two. The write comes first, so the
# finished unit is done before the next one is marked in flight.
# KEYS: meta, done, inflight, templates, attempts, results, pairs, failed, then
# one verdict set per result. ARGV[1..4]: the begin's (see _BEGIN_FUNCTION);
# ARGV[5..]: the finished unit's key, now (ISO), five per result (see
# _WRITE_FUNCTION). Returns the begin's reply with a fifth item: 1 when the
# write finished the whole job.
WRITE_AND_BEGIN = (
    _WRITE_FUNCTION
    + _BEGIN_FUNCTION
    + """
local finished = write_unit(KEYS[6], KEYS[7], KEYS[8], KEYS[2], KEYS[3], KEYS[1], 9, 5)
local reply = begin_unit(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
reply[5] = finished
return reply
"""
)

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
