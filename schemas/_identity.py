"""Model identity and the deterministic keys that name units and results."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ModelIdentity", "compute_unit_key", "md5_hex"]


def md5_hex(text: str) -> str:
    """MD5 hex digest of ``text`` encoded as UTF-8 (question and template ids)."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


class ModelIdentity(BaseModel):
    """Who produced or judged an answer: interface, model name and MCP tools.

    ``tools`` is kept sorted so that two identities with the same tool set compare
    equal and share a canonical key. Parsing models always have no tools.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    interface: str = "langchain"
    model_name: str
    tools: list[str] = Field(default_factory=list)

    @field_validator("tools")
    @classmethod
    def _sorted_tools(cls, value: list[str]) -> list[str]:
        return sorted(value)

    @property
    def display_string(self) -> str:
        """``interface:model_name``, or ``interface:model_name +[tool1, tool2]``."""
        base = f"{self.interface}:{self.model_name}"
        return f"{base} +[{', '.join(self.tools)}]" if self.tools else base

    @property
    def canonical_key(self) -> str:
        """``interface:model_name:tool1|tool2`` — stable across runs and machines."""
        return f"{self.interface}:{self.model_name}:{'|'.join(self.tools)}"


def compute_unit_key(
    *,
    job_id: str,
    question_id: str,
    template_id: str,
    answering_key: str,
    parsing_key: str,
    replicate: int | None,
) -> str:
    """Deterministic key of one result: no timestamp, so a re-run finds it again.

    Used for idempotent writes, resume and deduplication (the job id, question,
    template, both models and the replicate name a result). ``metadata.result_id`` is a different, spec-defined id.

    Returns:
        24 hex characters of SHA-256 over the joined fields.
    """
    raw = "\x1f".join(
        [job_id, question_id, template_id, answering_key, parsing_key, str(replicate)]
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:24]
