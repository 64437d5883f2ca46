"""What the orchestrator and the workers agree on: the task name, the queue and the
shape of a unit reference. The orchestrator sends work by task *name* only."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["DEFAULT_QUEUE", "SCENARIO_TASK_NAME", "TASK_NAME", "TASK_NAMES", "UnitRef"]

TASK_NAME = "verifleet.run_unit"
SCENARIO_TASK_NAME = "verifleet.run_scenario"
TASK_NAMES = frozenset({TASK_NAME, SCENARIO_TASK_NAME})
"""Every task that runs a unit of a job (its first argument is the job id)."""
DEFAULT_QUEUE = "verifleet"


class UnitRef(BaseModel):
    """A unit by position in the stored job: tasks carry keys, not payloads.

    A scenario unit (``kind="scenario"``) has the scenario's position in
    ``question_index`` and goes to :data:`SCENARIO_TASK_NAME`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    question_index: int
    answering_index: int
    replicate: int
    kind: Literal["question", "scenario"] = "question"

    @property
    def task_name(self) -> str:
        """The task that runs this unit."""
        return SCENARIO_TASK_NAME if self.kind == "scenario" else TASK_NAME

    def task_args(self) -> list[object]:
        """Positional arguments of the task message."""
        return [self.job_id, self.question_index, self.answering_index, self.replicate]
