"""Multi-turn scenarios: the graph model, its outcome criteria and run results.

Re-exported by :mod:`verifleet.schemas`; import from there.
"""

from ._broken import BrokenScenario
from ._conditions import Condition, primitive_from, resolve_path
from ._model import (
    END,
    HANDOVERS,
    ScenarioDefinition,
    ScenarioEdge,
    ScenarioNode,
    StateUpdate,
    ToolFilter,
)
from ._outcomes import (
    AllOfCheck,
    AnyOfCheck,
    AtLeastNCheck,
    CountTurns,
    CrossTurnCheck,
    FirstMatchIndex,
    OutcomeCheck,
    OutcomeCriterion,
    ResultCheck,
    TurnCheck,
    TurnScope,
    code_problem,
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
    "HANDOVERS",
    "AllOfCheck",
    "AnyOfCheck",
    "AtLeastNCheck",
    "BrokenScenario",
    "Condition",
    "CountTurns",
    "CrossTurnCheck",
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
    "ToolFilter",
    "TurnCheck",
    "TurnScope",
    "code_problem",
    "primitive_from",
    "resolve_path",
]
