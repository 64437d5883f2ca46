"""Evaluating outcome criteria over a finished scenario run."""

from __future__ import annotations

import logging
import operator
import re
import string
from collections.abc import Callable
from typing import Any

from verifleet.schemas import (
    AllOfCheck,
    AnyOfCheck,
    AtLeastNCheck,
    CountTurns,
    CrossTurnCheck,
    FirstMatchIndex,
    OutcomeCheck,
    OutcomeCriterion,
    ResultCheck,
    ScenarioExecutionResult,
    ScenarioTurnRecord,
    TurnCheck,
    resolve_path,
)

from ._code import ScenarioCode

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
    return _selected_scope(check.scope, history)


def _selected_scope(scope: Any, history: list[ScenarioTurnRecord]) -> list[ScenarioTurnRecord]:
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


#: ``target <op> source``, as the original framework compares them.
_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "neq": operator.ne,
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
    "contains": lambda target, source: str(source) in str(target),
}

_PUNCTUATION = str.maketrans("", "", string.punctuation)


def _normalized(check: CrossTurnCheck, value: Any) -> Any:
    """The value as text through each normalizer (the value itself without any)."""
    if not check.normalize:
        return value
    text = str(value)
    for step in check.normalize:
        if not isinstance(step, str):
            text = step.mapping.get(text, text)
        elif step == "lowercase":
            text = text.lower()
        elif step == "strip":
            text = text.strip()
        elif step == "remove_punctuation":
            text = text.translate(_PUNCTUATION)
        else:  # collapse_whitespace (the model admits no other name)
            text = re.sub(r"\s+", " ", text).strip()
    return text


def _one_turn(scope: Any, history: list[ScenarioTurnRecord]) -> ScenarioTurnRecord | None:
    """The single turn a cross-turn scope names; None when there is none, or
    for ``any_turn`` / ``all_turns``, which name no single turn."""
    if scope.type in ("any_turn", "all_turns"):
        return None
    found = _selected_scope(scope, history)
    return found[0] if found else None


def _cross_turn(check: CrossTurnCheck, run: ScenarioExecutionResult) -> bool:
    source = _one_turn(check.source_turn, run.history)
    target = _one_turn(check.target_turn, run.history)
    if source is None or target is None:
        return False
    source_value = _normalized(check, resolve_path(_turn_view(source), check.source_field))
    target_value = _normalized(check, resolve_path(_turn_view(target), check.target_field))
    try:
        return bool(_COMPARE[check.comparison](target_value, source_value))
    except (TypeError, ValueError):
        # Values of kinds that do not compare (None > 3): the check does not hold.
        return False


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
    if isinstance(check, CrossTurnCheck):
        return _cross_turn(check, run)
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
    criteria: list[OutcomeCriterion],
    run: ScenarioExecutionResult,
    code: ScenarioCode | None = None,
) -> dict[str, bool | int | float]:
    """Each criterion's value over ``run``: a verdict, or a count for counting
    checks; outcome code (``evaluate_source``, when there is no check) runs in
    the sandbox through ``code``. A criterion that raises (a bug) is logged and
    recorded as False, so one bad criterion does not hide the others."""
    values: dict[str, bool | int | float] = {}
    dumped: dict[str, Any] | None = None
    for criterion in criteria:
        try:
            if criterion.check is None:
                assert criterion.evaluate_source is not None and code is not None
                dumped = dumped or run.model_dump(mode="json")
                values[criterion.name] = code.evaluate(
                    criterion.name, criterion.evaluate_source, dumped
                )
                continue
            values[criterion.name] = _evaluate(criterion.check, run)
        except Exception:
            _log.warning("outcome criterion %r raised", criterion.name, exc_info=True)
            values[criterion.name] = False
    return values
