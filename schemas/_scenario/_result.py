"""What one scenario run produced: ``ScenarioExecutionResult`` (the spec's
``VerificationResultSet.scenario_results`` entries)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._errors import VerifleetError

__all__ = [
    "ScenarioExecutionError",
    "ScenarioExecutionResult",
    "ScenarioStatus",
    "ScenarioTerminalFailure",
    "ScenarioTurnRecord",
]

ScenarioStatus = Literal["completed", "limit_reached", "error", "timeout"]


class ScenarioExecutionError(VerifleetError):
    """A scenario run that failed: a turn's pipeline error (answer generation,
    template, judge) or an exception outside the pipeline. Recorded in
    ``VerificationResultSet.errors``; it never stops the job."""


class ScenarioTurnRecord(BaseModel):
    """One turn of a run, compactly: the full per-turn result is in
    ``VerificationResultSet.results`` under ``result_ids``."""

    model_config = ConfigDict(extra="forbid")

    turn: int
    node_id: str
    question_id: str
    question_text: str
    #: The question as sent, when a handover rewrote it (None: as written).
    prompt: str | None = None
    #: The agent that answered (the node's ``agent_identity``, else the run's).
    agent_id: str | None = None
    #: The handover that led here (a strategy name, or ``code``).
    handover: str | None = None
    raw_response: str = ""
    parsed_fields: dict[str, object] = Field(default_factory=dict)
    verify_result: bool | None = None
    rubric_scores: dict[str, object] = Field(default_factory=dict)
    result_ids: list[str] = Field(default_factory=list)
    error: str | None = None


class ScenarioTerminalFailure(BaseModel):
    """Why a run stopped with status ``error``: the node, the failing stage or
    ``"execution"`` (outside the pipeline), and the reason."""

    model_config = ConfigDict(extra="forbid")

    node_id: str | None = None
    stage: str | None = None
    reason: str


class ScenarioExecutionResult(BaseModel):
    """The trace and verdicts of one scenario × answering model × replicate.

    ``outcome_results`` maps each outcome criterion to its value (a verdict, or a
    number for counting criteria); ``final_state`` is the state after the last
    turn (``turn``, ``current_node``, ``verify_result``, ``parsed``,
    ``node_visits``, ``node_results``, ``accumulated``).
    """

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    status: ScenarioStatus
    path: list[str] = Field(default_factory=list)
    turn_count: int = 0
    history: list[ScenarioTurnRecord] = Field(default_factory=list)
    outcome_results: dict[str, bool | int | float] = Field(default_factory=dict)
    final_state: dict[str, object] = Field(default_factory=dict)
    terminal_failure: ScenarioTerminalFailure | None = None
    answering_model: str | None = None
    replicate: int | None = None
    run_name: str | None = None
    #: The unit's ``scenario_key`` (scenario and a digest of its definition,
    #: answering model, replicate; no job): a resume counts the run done only
    #: while the scenario is unchanged. None in runs that predate it or were
    #: read from the original's export (they run again on a resume).
    unit_key: str | None = None
    #: What the scenario's code did that the turns do not show (a condition or
    #: state update that raised, outcome code that failed), in order.
    trace: list[str] = Field(default_factory=list)

    @property
    def outcomes_passed(self) -> bool:
        """Every boolean outcome criterion holds (counts are not verdicts)."""
        return all(v for v in self.outcome_results.values() if isinstance(v, bool))

    def describe(self) -> str:
        """How ``errors`` names this run: scenario, model and replicate."""
        parts = [f"scenario {self.scenario_id}"]
        if self.answering_model:
            parts.append(f"model {self.answering_model}")
        if self.replicate is not None:
            parts.append(f"replicate {self.replicate}")
        return ", ".join(parts)

    def error(self) -> tuple[str, ScenarioExecutionError] | None:
        """The ``errors`` entry of a failed run (status ``error``), else None."""
        if self.status != "error":
            return None
        failure = self.terminal_failure
        where = f" at node {failure.node_id}" if failure and failure.node_id else ""
        reason = failure.reason if failure else "failed"
        return self.describe(), ScenarioExecutionError(f"{reason}{where}")
