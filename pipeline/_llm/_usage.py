"""Token accounting per pipeline stage, in the spec's ``usage_metadata`` shape,
with each call's cost and whether it came from the call cache.

A stage entry holds ``input_tokens``, ``output_tokens``, ``total_tokens`` and
``model`` (the spec's shape) and, when they apply, ``cached_input_tokens`` (input
the provider served from its prompt cache), ``cost_usd`` (what the stage's calls
cost at the run's prices; cache hits cost nothing) and ``cache_hits`` (calls
answered by verifleet's call cache: their tokens are counted as when they were
first made, their cost is not).

Every count and cost that enters a tracker is clamped (``token_count``,
``usd_amount``): an endpoint reporting negative, NaN or non-numeric usage adds
nothing, and can never lower a unit's cost or its job's spend.
"""

from __future__ import annotations

import threading
from typing import Any

from verifleet.schemas import PriceTable, token_count, usd_amount

from ._record import CallLog

__all__ = ["UsageTracker", "cached_input_tokens"]

_COUNTS = ("input_tokens", "output_tokens", "total_tokens")
_EXTRAS = ("cached_input_tokens", "cache_hits")


def cached_input_tokens(usage: dict[str, Any] | None) -> int:
    """Input tokens served from the provider's prompt cache, as langchain
    (``input_token_details.cache_read``) or OpenAI (``prompt_tokens_details.
    cached_tokens``) report them; 0 when not reported or not a sane count
    (clamped by ``token_count``). Never raises."""
    if not isinstance(usage, dict):
        return 0
    for details, name in (
        ("input_token_details", "cache_read"),
        ("prompt_tokens_details", "cached_tokens"),
    ):
        block = usage.get(details)
        if isinstance(block, dict) and token_count(block.get(name)):
            return token_count(block[name])
    return token_count(usage.get("cached_input_tokens"))


class UsageTracker:
    """Collects token counts of one unit's model calls, keyed by stage.

    One tracker belongs to one (question, answering model, parsing model,
    replicate) result, so usage of concurrent units never mixes. Calls of the same
    stage add up. Thread-safe, because a check may fan out its calls.
    """

    def __init__(self, *, pricing: PriceTable | None = None, replicate: int | None = None) -> None:
        """Args:
        pricing: Prices that give each call a ``cost_usd``; None: no costs.
        replicate: The unit's replicate index; the call cache keys answer
            generation by it, so replicates stay independent samples.
        """
        self._lock = threading.Lock()
        self._stages: dict[str, dict[str, Any]] = {}
        self._agent_metrics: dict[str, Any] | None = None
        self._incomplete = False
        self.pricing = pricing
        self.replicate = replicate
        #: The unit's model calls, prompts and replies (filled by RecordingCaller).
        self.calls = CallLog()

    def record(
        self,
        stage: str,
        *,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        total_tokens: int | None = None,
        cached_input: int = 0,
        cost_usd: float | None = None,
        cache_hits: int = 0,
    ) -> None:
        """Add one call's tokens (and cost) to ``stage``.

        ``total_tokens`` defaults to input + output when the provider omits it.
        ``cost_usd`` None prices the call with :attr:`pricing` (no cost when the
        table lacks the model); pass 0.0 for a call that cost nothing. Counts
        and the cost are clamped to finite, non-negative values (a bogus count
        adds 0); never raises on them.
        """
        input_tokens, output_tokens = token_count(input_tokens), token_count(output_tokens)
        cached_input, cache_hits = token_count(cached_input), token_count(cache_hits)
        total = input_tokens + output_tokens if total_tokens is None else token_count(total_tokens)
        if cost_usd is None and self.pricing is not None:
            cost_usd = self.pricing.cost(model, input_tokens, output_tokens, cached_input)
        if cost_usd is not None:
            cost_usd = usd_amount(cost_usd)
        with self._lock:
            entry = self._stages.setdefault(
                stage, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "model": model}
            )
            entry["input_tokens"] += int(input_tokens)
            entry["output_tokens"] += int(output_tokens)
            entry["total_tokens"] += int(total)
            entry["model"] = model
            for name, value in (("cached_input_tokens", cached_input), ("cache_hits", cache_hits)):
                if value:
                    entry[name] = int(entry.get(name, 0)) + int(value)
            if cost_usd is not None:
                entry["cost_usd"] = float(entry.get("cost_usd", 0.0)) + float(cost_usd)

    def record_usage(self, stage: str, *, model: str, usage: dict[str, Any] | None) -> None:
        """Record a langchain ``usage_metadata`` dict (``None`` counts as zero
        tokens; each count is clamped as in :meth:`record`)."""
        usage = usage if isinstance(usage, dict) else {}
        total = usage.get("total_tokens")
        self.record(
            stage,
            model=model,
            input_tokens=token_count(usage.get("input_tokens")),
            output_tokens=token_count(usage.get("output_tokens")),
            total_tokens=None if total is None else token_count(total),
            cached_input=cached_input_tokens(usage),
        )

    def merge_stage(
        self, stage: str, entry: dict[str, Any], *, free: bool = False, cache_hit: bool = False
    ) -> None:
        """Add a stage entry recorded elsewhere, its cost included.

        Args:
            stage: Where it goes.
            entry: A stage entry of another tracker.
            free: The calls were paid for elsewhere (an answer shared by the
                unit's parsing models, or a stored one): they cost 0 here.
            cache_hit: The calls' replies came from the call cache (cost 0, one
                cache hit).
        """
        cost = entry.get("cost_usd")
        if (free or cache_hit) and (cost is not None or self.pricing is not None):
            cost = 0.0
        hits = token_count(entry.get("cache_hits")) + (1 if cache_hit else 0)
        self.record(
            stage,
            model=str(entry.get("model", "")),
            input_tokens=token_count(entry.get("input_tokens")),
            output_tokens=token_count(entry.get("output_tokens")),
            total_tokens=token_count(entry.get("total_tokens")),
            cached_input=token_count(entry.get("cached_input_tokens")),
            cost_usd=cost,
            cache_hits=hits,
        )

    def mark_incomplete(self) -> None:
        """Note that a reply was cut off or refused (a token limit, a content
        filter): the call cache never keeps such a reply."""
        with self._lock:
            self._incomplete = True

    @property
    def incomplete(self) -> bool:
        """Whether a call recorded here was cut off or refused."""
        with self._lock:
            return self._incomplete

    def stage(self, stage: str) -> dict[str, Any] | None:
        """A copy of one stage's entry, or ``None`` when it made no calls."""
        with self._lock:
            entry = self._stages.get(stage)
            return dict(entry) if entry is not None else None

    def set_agent_metrics(self, metrics: dict[str, Any] | None) -> None:
        """Keep the answering agent's metrics (tool calls, iterations)."""
        with self._lock:
            self._agent_metrics = dict(metrics) if metrics is not None else None

    @property
    def agent_metrics(self) -> dict[str, Any] | None:
        """The answering agent's metrics, if an agent answered."""
        with self._lock:
            return dict(self._agent_metrics) if self._agent_metrics is not None else None

    def summary(self) -> dict[str, dict[str, Any]] | None:
        """``{stage: {input_tokens, output_tokens, total_tokens, model}, ..., total: {...}}``.

        Returns:
            ``None`` when no call was recorded, so results of units that never
            reached a model carry no empty usage block.
        """
        with self._lock:
            if not self._stages:
                return None
            out = {name: dict(entry) for name, entry in self._stages.items()}
        total: dict[str, Any] = {key: sum(int(e[key]) for e in out.values()) for key in _COUNTS}
        for key in _EXTRAS:
            if any(key in e for e in out.values()):
                total[key] = sum(int(e.get(key, 0)) for e in out.values())
        costs = [float(e["cost_usd"]) for e in out.values() if "cost_usd" in e]
        if costs:
            total["cost_usd"] = sum(costs)
        out["total"] = total
        return out
