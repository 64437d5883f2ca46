"""The store's Lua scripts that write: a unit's results, a scenario run, a drained
shard, each in one atomic round trip. (What a worker checks as it takes a unit
up is next to its caller in ``_store.py``.)"""

from __future__ import annotations

__all__ = ["RECORD_SHARD", "WRITE_SCENARIO", "WRITE_UNIT"]

# A unit's results written once and the unit marked done, in one round trip.
# KEYS: results, pairs, failed, done, inflight, meta, then one verdict set per
# result. ARGV: the unit's key, now (ISO), then per result: its key, its blob,
# its pair id, the pair's display text, 1 if it is an error.
# Verdicts count only what this call actually stored: a redelivered task that
# judged differently must not add its verdict next to the first one. A unit done
# already writes nothing: its results may have been drained out of Redis since.
# Returns 1 when this call finished the whole job.
WRITE_UNIT = """
if redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1 then return 0 end
local any_error = false
local n = (#ARGV - 2) / 5
for i = 0, n - 1 do
  local a = 3 + i * 5
  if redis.call('HSETNX', KEYS[1], ARGV[a], ARGV[a + 1]) == 1 then
    redis.call('HSETNX', KEYS[2], ARGV[a + 2], ARGV[a + 3])
    redis.call('SADD', KEYS[7 + i], ARGV[a])
    if ARGV[a + 4] == '1' then any_error = true end
  end
end
if any_error then redis.call('SADD', KEYS[3], ARGV[1]) end
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
local total = redis.call('HGET', KEYS[6], 'total_units')
if total and redis.call('SCARD', KEYS[4]) >= tonumber(total) then
  redis.call('HSET', KEYS[6], 'status', 'done')
  redis.call('HSETNX', KEYS[6], 'finished', ARGV[2])
  return 1
end
return 0
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
