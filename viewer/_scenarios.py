"""The scenario page: each scenario run with its turns and their provenance
(which agent answered, which handover led there, the question as sent)."""

from __future__ import annotations

from collections.abc import Iterable

from verifleet.schemas import ScenarioExecutionResult

__all__ = ["scenario_page"]


def _run(run: ScenarioExecutionResult) -> dict[str, object]:
    failure = run.terminal_failure
    return {
        "scenario_id": run.scenario_id,
        "answering_model": run.answering_model,
        "replicate": run.replicate,
        "status": run.status,
        "path": run.path,
        "turn_count": run.turn_count,
        "outcome_results": run.outcome_results,
        "trace": run.trace,
        "failure": None if failure is None else failure.model_dump(mode="json"),
        "turns": [
            {
                "turn": t.turn,
                "node_id": t.node_id,
                "agent_id": t.agent_id,
                "handover": t.handover,
                "question_text": t.question_text,
                "prompt": t.prompt,
                "raw_response": t.raw_response,
                "verify_result": t.verify_result,
                "error": t.error,
            }
            for t in run.history
        ],
    }


def scenario_page(runs: Iterable[ScenarioExecutionResult]) -> list[dict[str, object]]:
    """JSON for the scenario page, runs ordered by scenario, model and replicate."""
    ordered = sorted(runs, key=lambda r: (r.scenario_id, r.answering_model or "", r.replicate or 0))
    return [_run(r) for r in ordered]
