"""What the orchestrator and the workers agree on: the task name, the queue and the
shape of a unit reference. The orchestrator sends work by task *name* only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["DEFAULT_QUEUE", "TASK_NAME", "UnitRef"]

TASK_NAME = "verifleet.run_unit"
DEFAULT_QUEUE = "verifleet"


class UnitRef(BaseModel):
    """A unit by position in the stored job: tasks carry keys, not payloads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job_id: str
    question_index: int
    answering_index: int
    replicate: int

    def task_args(self) -> list[object]:
        """Positional arguments of the task message."""
        return [self.job_id, self.question_index, self.answering_index, self.replicate]
