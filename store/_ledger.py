"""A fleet job's cost so far, and its budget.

Each finished unit adds its results' cost once: the unit's key goes into a set
and its costs are added to a hash in the same server-side script, so a
redelivered unit adds nothing. A job with a budget (``max_cost_usd``) admits a
unit only while what it spent plus what its units in flight are expected to
spend (the mean cost of a finished unit each) stays below the budget; the first
refusal is recorded, and ``resume`` with a larger budget clears it.

Keys: ``{prefix}:job:<id>:cost`` (hash: ``total``, ``hits``, ``model:<name>``)
and ``{prefix}:job:<id>:cost-units`` (set of the units counted); the budget and
the refusal are fields of the job's meta hash (``max_cost_usd``, ``budget_stop``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import redis

from verifleet.schemas import token_count, usd_amount

from ._keys import JobKeys
from ._replies import reply_text

__all__ = ["CostLedger", "JobCost"]

# KEYS: cost hash, counted units. ARGV: unit key, then field/amount pairs.
_ADD = """
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
for i = 2, #ARGV, 2 do
  redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1])
end
return 1
"""

# KEYS: cost hash, counted units, in-flight zset, meta. ARGV: the budget of the
# job's config ('' for none), the unit key. The meta's max_cost_usd (set by
# resume) wins over the config's. Returns 1 to admit the unit, 0 to refuse it.
_ADMIT = """
local budget = tonumber(redis.call('HGET', KEYS[4], 'max_cost_usd') or ARGV[1])
if not budget then return 1 end
local spent = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
local counted = redis.call('SCARD', KEYS[2])
local inflight = redis.call('ZCARD', KEYS[3])
if redis.call('ZSCORE', KEYS[3], ARGV[2]) then inflight = inflight - 1 end
local mean = 0
if counted > 0 then mean = spent / counted end
if spent + mean * inflight >= budget then
  redis.call('HSETNX', KEYS[4], 'budget_stop', tostring(spent))
  return 0
end
return 1
"""


@dataclass
class JobCost:
    """What a job spent so far.

    Attributes:
        total_usd: Every counted unit's cost.
        models: Cost per model name.
        cache_hits: Calls answered by the call cache.
        units: Units counted.
        budget_usd: The job's budget, None without one.
        stopped_at: What had been spent when the budget first refused a unit
            (None: it never did, or resume cleared it).
    """

    total_usd: float = 0.0
    models: dict[str, float] = field(default_factory=dict)
    cache_hits: int = 0
    units: int = 0
    budget_usd: float | None = None
    stopped_at: float | None = None


class CostLedger:
    """Cost counters and the budget check of fleet jobs.

    Every method raises ``redis.RedisError`` when Redis is unreachable.
    """

    def __init__(self, client: redis.Redis, *, prefix: str = "vf") -> None:
        self.client = client
        self.prefix = prefix
        self._add = client.register_script(_ADD)
        self._admit = client.register_script(_ADMIT)

    def _keys(self, job_id: str) -> tuple[str, str, JobKeys]:
        keys = JobKeys(job_id, self.prefix)
        base = f"{self.prefix}:job:{job_id}"
        return f"{base}:cost", f"{base}:cost-units", keys

    def add(
        self, job_id: str, unit_key: str, models: Mapping[str, float], cache_hits: int = 0
    ) -> bool:
        """Count a finished unit's cost per model, once.

        Each amount is clamped to a finite, non-negative float (``usd_amount``):
        no unit lowers the job's spend, whatever its results claim.

        Returns:
            False when the unit was counted before (a redelivery).
        """
        cost, units, _ = self._keys(job_id)
        amounts = {name: usd_amount(amount) for name, amount in models.items()}
        args: list[str | float] = [unit_key, "total", sum(amounts.values())]
        for name, amount in amounts.items():
            args += [f"model:{name}", amount]
        cache_hits = token_count(cache_hits)
        if cache_hits:
            args += ["hits", cache_hits]
        return bool(self._add(keys=[cost, units], args=args))

    def admit(self, job_id: str, unit_key: str, budget: float | None) -> bool:
        """Whether the job's budget lets ``unit_key`` start (see the module
        docstring); ``budget`` is the job config's, used until resume sets one."""
        cost, units, keys = self._keys(job_id)
        return bool(
            self._admit(
                keys=[cost, units, keys.inflight, keys.meta],
                args=["" if budget is None else budget, unit_key],
            )
        )

    def set_budget(self, job_id: str, budget: float) -> None:
        """Give the job a (new) budget and clear a refusal: resume then starts
        the units the old budget held back."""
        _, _, keys = self._keys(job_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(keys.meta, "max_cost_usd", budget)
        pipe.hdel(keys.meta, "budget_stop")
        pipe.execute()

    def read(self, job_id: str) -> JobCost:
        """The job's cost so far and its budget."""
        cost, units, keys = self._keys(job_id)
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(cost)
        pipe.scard(units)
        pipe.hmget(keys.meta, ["max_cost_usd", "budget_stop"])
        raw, counted, (budget, stop) = pipe.execute()
        fields = {reply_text(k): float(reply_text(v)) for k, v in raw.items()}
        return JobCost(
            total_usd=fields.get("total", 0.0),
            models={k[6:]: v for k, v in fields.items() if k.startswith("model:")},
            cache_hits=int(fields.get("hits", 0)),
            units=int(counted),
            budget_usd=float(reply_text(budget)) if budget is not None else None,
            stopped_at=float(reply_text(stop)) if stop is not None else None,
        )
