"""Fair share between jobs: which job's units go to a queue next.

A submitted job sends no message. It is enrolled in its queue's schedule, and
the workers' feeders keep that queue a few hundred messages deep by claiming the
next units of the jobs in flight, by weight (stride scheduling): each job has a
*pass*; the job with the lowest pass gives the next unit and its pass grows by
``1 / weight``. A job enrolls at the schedule's current pass, so a new job does
not starve the others to catch up and is not starved by them either: its first
units go out in the next fill, whatever else is queued. A cancelled or finished
job leaves the schedule at the next claim, and its share goes to the others.

Units are claimed by position (``cursor`` in the job's meta hash counts units
handed to a feeder, up to ``sendable``; :func:`unit_ref_at` maps a position to a unit), so a job of
a million units costs the broker a few hundred messages, not a million. A
feeder that dies between claiming and sending loses its claims' messages: the
stall detector sends a job's missing units again once its cursor has reached the
end and nothing carries them, as it does for any lost message. Results are
written once under their keys, so a unit sent twice is still counted once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._protocol import UnitRef
from ._replies import reply_text
from ._scripts import QUEUE_WEIGHTS

if TYPE_CHECKING:
    import redis

    from verifleet.schemas import Benchmark, VerificationConfig

__all__ = ["Schedule", "unit_ref_at"]

# KEYS: schedule zset, its virtual-time key. ARGV: job id.
# A job enrolls at the schedule's current virtual time (the pass of the last unit
# given out); NX: enrolling twice (a resume) keeps its place.
_ENROLL = """
local vt = redis.call('GET', KEYS[2]) or '0'
redis.call('ZADD', KEYS[1], 'NX', vt, ARGV[1])
return 1
"""

# KEYS: schedule zset, its virtual-time key, its count of units given out. ARGV:
# how many units, the key prefix of jobs ('<prefix>:job:'). Returns a flat list:
# job id, position, ...
# Stride scheduling, unit by unit: the job with the lowest (pass, id) gives the
# next unit and its pass grows by 1/weight. The lowest 64 jobs are read once
# per round and served in Lua, each written back once (its cursor and its new
# pass), not with four commands per unit given out (the fill of a fast fleet is
# hundreds of units); a round ends where a job not read would come first.
# Meta keys are built here (one Redis server, not a cluster).
_CLAIM = """
local out = {}
local n = tonumber(ARGV[1])
local vt = nil
while n > 0 do
  local top = redis.call('ZRANGE', KEYS[1], 0, 64, 'WITHSCORES')
  if #top == 0 then break end
  local next_pass, next_job = math.huge, nil
  if #top > 128 then
    next_job, next_pass = top[129], tonumber(top[130])
  end
  local jobs = {}
  local removed = 0
  for i = 1, math.min(#top, 128), 2 do
    local job, pass = top[i], tonumber(top[i + 1])
    local meta = ARGV[2] .. job .. ':meta'
    local m = redis.call('HMGET', meta, 'status', 'sendable', 'cursor', 'weight')
    local total = tonumber(m[2] or '0')
    local cursor = tonumber(m[3] or '0')
    if (not m[1]) or m[1] == 'cancelled' or m[1] == 'failed' or m[1] == 'done'
        or cursor >= total then
      redis.call('ZREM', KEYS[1], job)
      removed = removed + 1
    else
      local weight = tonumber(m[4] or '1')
      if not weight or weight <= 0 then weight = 1 end
      jobs[#jobs + 1] = {job = job, pass = pass, meta = meta, cursor = cursor,
                         first = cursor, total = total, step = 1 / weight}
    end
  end
  local given = 0
  while n > 0 do
    local best = nil
    for _, j in ipairs(jobs) do
      if j.cursor < j.total and (best == nil or j.pass < best.pass
          or (j.pass == best.pass and j.job < best.job)) then
        best = j
      end
    end
    if best == nil or best.pass > next_pass
        or (best.pass == next_pass and best.job > next_job) then
      break
    end
    out[#out + 1] = best.job
    out[#out + 1] = best.cursor
    vt = best.pass
    best.cursor = best.cursor + 1
    best.pass = best.pass + best.step
    n = n - 1
    given = given + 1
  end
  for _, j in ipairs(jobs) do
    if j.cursor ~= j.first then
      redis.call('HSET', j.meta, 'cursor', j.cursor)
      if j.cursor >= j.total then
        redis.call('ZREM', KEYS[1], j.job)
      else
        redis.call('ZADD', KEYS[1], j.pass, j.job)
      end
    end
  end
  if given == 0 and removed == 0 then break end
end
if vt then redis.call('SET', KEYS[2], tostring(vt)) end
if #out > 0 then redis.call('INCRBY', KEYS[3], #out / 2) end
return out
"""

# KEYS: schedule zset. ARGV: the key prefix of jobs ('<prefix>:job:'). Returns a
# flat list: job id, its weight ('1' when unset), ... in pass order. One round
# trip for what a feeder labels each fill's messages with.
_WEIGHTS = QUEUE_WEIGHTS + "return queue_weights(KEYS[1], ARGV[1])\n"


class Schedule:
    """The schedules of a store's queues (keys ``<prefix>:sched:<queue>``).

    Args:
        client: The store's Redis client.
        prefix: The store's key prefix.

    Raises:
        redis.RedisError: Redis is unreachable (every method).
    """

    def __init__(self, client: redis.Redis, *, prefix: str = "vf") -> None:
        self.client = client
        self.prefix = prefix
        self._enroll = client.register_script(_ENROLL)
        self._claim = client.register_script(_CLAIM)
        self._weights = client.register_script(_WEIGHTS)

    def key(self, queue: str) -> str:
        """The sorted set of ``queue``'s scheduled jobs (job id → pass)."""
        return f"{self.prefix}:sched:{queue}"

    def _vt(self, queue: str) -> str:
        return f"{self.prefix}:sched:{queue}:vt"

    def given_out_key(self, queue: str) -> str:
        """The count of units ``queue``'s schedule has given out, ever."""
        return f"{self.prefix}:sched:{queue}:given"

    def enroll(self, job_id: str, queue: str) -> None:
        """Put a job whose meta has ``sendable`` (and ``weight``) in ``queue``'s
        schedule at the current pass; a job already there keeps its place."""
        self._enroll(keys=[self.key(queue), self._vt(queue)], args=[job_id])

    def claim(self, queue: str, n: int) -> list[tuple[str, int]]:
        """Take the next ``n`` units of ``queue`` by weight: ``(job id, position)``
        pairs, fewer when the scheduled jobs run out. Each is claimed once."""
        reply: Any = self._claim(
            keys=[self.key(queue), self._vt(queue), self.given_out_key(queue)],
            args=[n, f"{self.prefix}:job:"],
        )
        items = [v.decode() if isinstance(v, bytes) else str(v) for v in reply]
        return [(items[i], int(items[i + 1])) for i in range(0, len(items), 2)]

    def scheduled(self, queue: str) -> set[str]:
        """The jobs of ``queue`` with units still to give out."""
        return {reply_text(m) for m in self.client.zrange(self.key(queue), 0, -1)}

    def shares(self, queue: str) -> dict[str, tuple[float, float]]:
        """``{job id: (weight, share)}`` of the jobs of ``queue`` still giving out
        units."""
        flat = self._weights(keys=[self.key(queue)], args=[f"{self.prefix}:job:"])
        weights = {reply_text(j): float(w) for j, w in zip(flat[::2], flat[1::2], strict=True)}
        total = sum(weights.values())
        return {j: (w, w / total if total > 0 else 0.0) for j, w in weights.items()}


def unit_ref_at(
    job_id: str, benchmark: Benchmark, config: VerificationConfig, position: int
) -> tuple[UnitRef, dict[str, str]]:
    """The task of the unit at ``position`` in submit order (questions, then
    scenarios; each item × answering models × replicates), and its Flower labels.

    Raises:
        IndexError: ``position`` is past the job's last unit.
    """
    replicates = config.replicate_count
    item, rest = divmod(position, len(config.answering_models) * replicates)
    answering_index, replicate_index = divmod(rest, replicates)
    answering = config.answering_models[answering_index].identity().display_string
    if item < len(benchmark.questions):
        ref = UnitRef(
            job_id=job_id,
            question_index=item,
            answering_index=answering_index,
            replicate=replicate_index + 1,
        )
        return ref, {"question_id": benchmark.questions[item].id, "answering": answering}
    scenario_index = item - len(benchmark.questions)
    ref = UnitRef(
        job_id=job_id,
        question_index=scenario_index,
        answering_index=answering_index,
        replicate=replicate_index + 1,
        kind="scenario",
    )
    return ref, {"scenario_id": benchmark.scenarios[scenario_index].id, "answering": answering}
