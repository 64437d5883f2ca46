"""Multi-turn scenarios: the graph model, its outcome criteria and run results.

Re-exported by :mod:`verifleet.schemas`; import from there.
"""

from ._broken import BrokenScenario
from ._conditions import Condition, primitive_from, resolve_path
from ._model import END, ScenarioDefinition, ScenarioEdge, ScenarioNode, StateUpdate
from ._outcomes import (
    AllOfCheck,
    AnyOfCheck,
    AtLeastNCheck,
    CountTurns,
    FirstMatchIndex,
    OutcomeCheck,
    OutcomeCriterion,
    ResultCheck,
    TurnCheck,
    TurnScope,
)
from ._result import (
    ScenarioExecutionError,
    ScenarioExecutionResult,
    ScenarioStatus,
    ScenarioTerminalFailure,
    ScenarioTurnRecord,
)

__all__ = [
    "END",
    "AllOfCheck",
    "AnyOfCheck",
    "AtLeastNCheck",
    "BrokenScenario",
    "Condition",
    "CountTurns",
    "FirstMatchIndex",
    "OutcomeCheck",
    "OutcomeCriterion",
    "ResultCheck",
    "ScenarioDefinition",
    "ScenarioEdge",
    "ScenarioExecutionError",
    "ScenarioExecutionResult",
    "ScenarioNode",
    "ScenarioStatus",
    "ScenarioTerminalFailure",
    "ScenarioTurnRecord",
    "StateUpdate",
    "TurnCheck",
    "TurnScope",
    "primitive_from",
    "resolve_path",
]
