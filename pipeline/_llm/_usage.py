"""Token accounting per pipeline stage, in the spec's ``usage_metadata`` shape."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["UsageTracker"]

_COUNTS = ("input_tokens", "output_tokens", "total_tokens")


class UsageTracker:
    """Collects token counts of one unit's model calls, keyed by stage.

    One tracker belongs to one (question, answering model, parsing model,
    replicate) result, so usage of concurrent units never mixes. Calls of the same
    stage add up. Thread-safe, because a check may fan out its calls.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, dict[str, Any]] = {}
        self._agent_metrics: dict[str, Any] | None = None

    def record(
        self,
        stage: str,
        *,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        total_tokens: int | None = None,
    ) -> None:
        """Add one call's tokens to ``stage``.

        ``total_tokens`` defaults to input + output when the provider omits it.
        """
        total = input_tokens + output_tokens if total_tokens is None else total_tokens
        with self._lock:
            entry = self._stages.setdefault(
                stage, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "model": model}
            )
            entry["input_tokens"] += int(input_tokens)
            entry["output_tokens"] += int(output_tokens)
            entry["total_tokens"] += int(total)
            entry["model"] = model

    def record_usage(self, stage: str, *, model: str, usage: dict[str, Any] | None) -> None:
        """Record a langchain ``usage_metadata`` dict (``None`` counts as zero tokens)."""
        usage = usage or {}
        self.record(
            stage,
            model=model,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            total_tokens=usage.get("total_tokens"),
        )

    def merge_stage(self, stage: str, entry: dict[str, Any]) -> None:
        """Add a stage entry recorded elsewhere (e.g. a cached answer's generation)."""
        self.record(
            stage,
            model=str(entry.get("model", "")),
            input_tokens=int(entry.get("input_tokens") or 0),
            output_tokens=int(entry.get("output_tokens") or 0),
            total_tokens=int(entry.get("total_tokens") or 0),
        )

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
        out["total"] = {key: sum(int(e[key]) for e in out.values()) for key in _COUNTS}
        return out
