"""What a unit task does for cost: ask the job's budget before a unit starts,
and count the unit's cost once after it is stored (only for jobs with prices)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import redis

from verifleet.schemas import CostSummary, VerificationConfig, VerificationResult
from verifleet.store import CostLedger

__all__ = ["account_unit", "admit_unit"]

_lock = threading.Lock()
_ledgers: dict[int, CostLedger] = {}


def _ledger(client: redis.Redis, prefix: str) -> CostLedger:
    with _lock:
        found = _ledgers.get(id(client))
        if found is None:
            found = _ledgers[id(client)] = CostLedger(client, prefix=prefix)
        return found


def admit_unit(
    client: redis.Redis, prefix: str, config: VerificationConfig, job_id: str, unit_key: str
) -> bool:
    """Whether the job's budget lets the unit start (always, without a budget).

    Raises:
        redis.RedisError: Redis is unreachable.
    """
    if config.max_cost_usd is None:
        return True
    return _ledger(client, prefix).admit(job_id, unit_key, config.max_cost_usd)


def account_unit(
    client: redis.Redis,
    prefix: str,
    config: VerificationConfig,
    job_id: str,
    unit_key: str,
    results: Sequence[VerificationResult],
) -> None:
    """Count the stored unit's cost per model in the job's ledger, once (nothing
    for a job without prices).

    Raises:
        redis.RedisError: Redis is unreachable.
    """
    if config.pricing is None:
        return
    summary = CostSummary()
    for result in results:
        summary.add(result)
    models = {name: m.cost_usd for name, m in summary.models.items()}
    _ledger(client, prefix).add(job_id, unit_key, models, summary.cache_hits)
