"""What a set of results cost, per model and in total, read from their usage.

Each stage entry of ``usage_metadata`` carries ``cost_usd`` when the run had a
price for its model (a call answered by the call cache, or an answer paid for by
another result of the unit, costs 0), and ``cache_hits``. Summing the results'
entries therefore gives what the job paid, with nothing counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .._pricing import token_count, usd_amount
from .result import VerificationResult

__all__ = ["CostSummary", "ModelCost"]


@dataclass
class ModelCost:
    """One model's share of a job's cost."""

    cost_usd: float = 0.0
    cache_hits: int = 0
    #: Stage entries of this model without a cost (the price table lacked it).
    unpriced: int = 0


@dataclass
class CostSummary:
    """Streaming cost totals; memory grows with models, not with results."""

    models: dict[str, ModelCost] = field(default_factory=dict)

    def add_usage(self, usage: Mapping[str, object] | None) -> None:
        """Count one result's ``usage_metadata`` (None: nothing)."""
        if not usage:
            return
        for stage, entry in usage.items():
            if stage == "total" or not isinstance(entry, dict):
                continue
            model = self.models.setdefault(str(entry.get("model") or "?"), ModelCost())
            cost = entry.get("cost_usd")
            # Stored usage is read clamped too: no entry lowers a total.
            if isinstance(cost, int | float) and not isinstance(cost, bool):
                model.cost_usd += usd_amount(cost)
            elif token_count(entry.get("input_tokens")) or token_count(entry.get("output_tokens")):
                model.unpriced += 1
            model.cache_hits += token_count(entry.get("cache_hits"))

    def add(self, result: VerificationResult) -> None:
        """Count one result."""
        template = result.template
        self.add_usage(template.usage_metadata if template is not None else None)

    @property
    def total_usd(self) -> float:
        """What every counted call cost."""
        return sum(m.cost_usd for m in self.models.values())

    @property
    def cache_hits(self) -> int:
        """Calls answered by the call cache."""
        return sum(m.cache_hits for m in self.models.values())

    def unpriced_models(self) -> list[str]:
        """Models that made calls the price table has no price for, sorted."""
        return sorted(name for name, m in self.models.items() if m.unpriced)

    def lines(self) -> list[str]:
        """One line per model and a total, for a run summary."""
        out = [
            f"  {name}: ${m.cost_usd:.6f}"
            + (f" ({m.cache_hits} cache hits)" if m.cache_hits else "")
            for name, m in sorted(self.models.items())
            if not m.unpriced or m.cost_usd
        ]
        out.append(f"  total: ${self.total_usd:.6f}")
        return out
