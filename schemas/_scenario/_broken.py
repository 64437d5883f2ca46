"""A scenario that failed validation: kept beside the runnable ones so that it
fails alone (its runs record the problem) while the others run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from .._unit import scenario_key
from ._result import ScenarioExecutionResult, ScenarioTerminalFailure

if TYPE_CHECKING:
    from .._identity import ModelIdentity

__all__ = ["BrokenScenario"]

VALIDATION_STAGE = "validation"
"""``terminal_failure.stage`` of a run that never started: its scenario is broken."""


class BrokenScenario(BaseModel):
    """A scenario that cannot run: its id and why (the node or edge at fault).

    Loading keeps it in :attr:`Benchmark.broken_scenarios` instead of refusing
    the whole benchmark; every run of it ends with status ``error`` and this
    problem, and ``--strict`` rejects the job instead.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    problem: str

    @classmethod
    def from_error(cls, scenario_id: str, error: object) -> BrokenScenario:
        """Keep ``error``'s text without a leading ``scenario '<id>': `` (the
        message names the scenario itself)."""
        text = str(error)
        for prefix in (f"scenario {scenario_id!r}: ", f"scenario {scenario_id}: "):
            text = text.removeprefix(prefix)
        return cls(id=scenario_id, problem=text)

    @property
    def message(self) -> str:
        """How every report words it: ``scenario 'id': problem``."""
        return f"scenario {self.id!r}: {self.problem}"

    def unit_key(self, answering: ModelIdentity, replicate: int | None, job_id: str = "") -> str:
        """The key of this scenario's unit with ``answering`` and ``replicate``
        (:func:`~verifleet.schemas.scenario_key`, over the problem's digest)."""
        return scenario_key(self, answering, replicate, job_id=job_id)

    def failed_run(
        self, answering: ModelIdentity, replicate: int | None, run_name: str | None = None
    ) -> ScenarioExecutionResult:
        """The run of this scenario with ``answering`` and ``replicate``: no turns,
        status ``error``, the problem as its terminal failure."""
        return ScenarioExecutionResult(
            scenario_id=self.id,
            status="error",
            terminal_failure=ScenarioTerminalFailure(
                node_id=None, stage=VALIDATION_STAGE, reason=self.message
            ),
            answering_model=answering.display_string,
            replicate=replicate,
            run_name=run_name,
            unit_key=self.unit_key(answering, replicate),
        )
