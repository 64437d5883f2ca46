"""Evaluating outcome criteria over a finished scenario run."""

from __future__ import annotations

import logging
from typing import Any

from verifleet.schemas import (
    AllOfCheck,
    AnyOfCheck,
    AtLeastNCheck,
    CountTurns,
    FirstMatchIndex,
    OutcomeCheck,
    OutcomeCriterion,
    ResultCheck,
    ScenarioExecutionResult,
    ScenarioTurnRecord,
    TurnCheck,
    resolve_path,
)

__all__ = ["evaluate_outcomes"]

_log = logging.getLogger(__name__)


def _turn_view(turn: ScenarioTurnRecord) -> dict[str, Any]:
    """The fields a turn check can read (``parsed.<x>``, ``rubric.<trait>`` ...)."""
    return {
        "turn": turn.turn,
        "node_id": turn.node_id,
        "question_id": turn.question_id,
        "question_text": turn.question_text,
        "raw_response": turn.raw_response,
        "verify_result": turn.verify_result,
        "parsed": turn.parsed_fields,
        "rubric": turn.rubric_scores,
        "error": turn.error,
    }


def _matches_node(turn: ScenarioTurnRecord, node_id: str | list[str] | None) -> bool:
    if node_id is None:
        return True
    return turn.node_id in ([node_id] if isinstance(node_id, str) else node_id)


def _selected(check: TurnCheck, history: list[ScenarioTurnRecord]) -> list[ScenarioTurnRecord]:
    scope = check.scope
    if scope.type == "last_turn":
        return history[-1:]
    if scope.type == "first_turn":
        return history[:1]
    if scope.type == "turn_at":
        index = scope.index or 0
        return [history[index]] if -len(history) <= index < len(history) else []
    return [t for t in history if _matches_node(t, scope.node_id)]


def _filtered(check: CountTurns | FirstMatchIndex, history: list[ScenarioTurnRecord]) -> list[int]:
    return [
        i
        for i, t in enumerate(history)
        if _matches_node(t, check.node_id)
        and (check.verify_result is None or t.verify_result is check.verify_result)
    ]


def _evaluate(check: OutcomeCheck, run: ScenarioExecutionResult) -> bool | int:
    if isinstance(check, CountTurns):
        return len(_filtered(check, run.history))
    if isinstance(check, FirstMatchIndex):
        found = _filtered(check, run.history)
        return found[0] if found else -1
    if isinstance(check, TurnCheck):
        turns = _selected(check, run.history)
        condition = check.condition()
        verdicts = [condition.check(_turn_view(t)) for t in turns]
        # No selected turn means nothing to vouch for: neither "any" nor "all" holds.
        if not verdicts:
            return False
        return all(verdicts) if check.scope.type == "all_turns" else any(verdicts)
    if isinstance(check, ResultCheck):
        root = {
            "status": run.status,
            "turn_count": run.turn_count,
            "path": run.path,
            "scenario_id": run.scenario_id,
            "state": run.final_state,
        }
        return check.condition().holds(resolve_path(root, check.field))
    verdicts = [bool(_evaluate(c, run)) for c in check.conditions]
    if isinstance(check, AllOfCheck):
        return all(verdicts)
    if isinstance(check, AnyOfCheck):
        return any(verdicts)
    assert isinstance(check, AtLeastNCheck)
    return sum(verdicts) >= check.n


def evaluate_outcomes(
    criteria: list[OutcomeCriterion], run: ScenarioExecutionResult
) -> dict[str, bool | int | float]:
    """Each criterion's value over ``run``: a verdict, or a count for counting
    checks. A criterion that raises (a bug) is logged and recorded as False, so
    one bad criterion does not hide the others."""
    values: dict[str, bool | int | float] = {}
    for criterion in criteria:
        try:
            values[criterion.name] = _evaluate(criterion.check, run)
        except Exception:
            _log.warning("outcome criterion %r raised", criterion.name, exc_info=True)
            values[criterion.name] = False
    return values
