"""A fleet job's cost in ``status`` and ``watch``, and its budget in ``submit``
and ``resume`` (docs/iterating.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifleet.store import JobCost, ResultStore

__all__ = ["cost_text", "job_cost", "set_budget"]


def set_budget(store: ResultStore, job_id: str, budget: float) -> None:
    """Give the job a (new) budget; a job its budget stopped goes on up to it.

    Raises:
        ConfigError: the budget is not more than 0.
    """
    from verifleet.schemas import ConfigError
    from verifleet.store import CostLedger

    if budget <= 0:
        raise ConfigError(f"--max-cost {budget}: the budget must be more than 0 USD")
    CostLedger(store.client, prefix=store.prefix).set_budget(job_id, budget)


def job_cost(store: ResultStore, job_id: str) -> JobCost | None:
    """The job's cost so far with its budget, None for a job without prices."""
    from verifleet.schemas import VerificationConfig
    from verifleet.store import CostLedger

    cost = CostLedger(store.client, prefix=store.prefix).read(job_id)
    if cost.units == 0 or cost.budget_usd is None:
        try:
            config = VerificationConfig.model_validate_json(store.load_spec(job_id)[1])
        except KeyError:
            return None
        if config.pricing is None:
            return None
        if cost.budget_usd is None:
            cost.budget_usd = config.max_cost_usd
    return cost


def cost_text(job_id: str, cost: JobCost) -> str:
    """The cost lines of ``status``/``watch``."""
    models = "  ".join(f"{name} ${usd:.6f}" for name, usd in sorted(cost.models.items()))
    line = f"cost ${cost.total_usd:.6f} over {cost.units} units"
    if cost.budget_usd is not None:
        line += f" (budget ${cost.budget_usd:.6f})"
    if cost.cache_hits:
        line += f"  cache hits {cost.cache_hits}"
    if models:
        line += f"\n  {models}"
    if cost.stopped_at is not None:
        line += (
            "\nbudget reached: no new unit starts; finish with "
            f"`verifleet resume {job_id} --max-cost USD` (a larger budget)"
        )
    return line
