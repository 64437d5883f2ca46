"""Metadata section of a verification result: who, what, when, and how it went."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .._identity import ModelIdentity
from .failure import ResultFailure
from .fingerprint import ResultFingerprint

__all__ = ["VerificationResultMetadata"]


class VerificationResultMetadata(BaseModel):
    """Identification and execution context of one result; always present.

    ``result_id`` may be omitted when constructing: it is then derived with
    :meth:`compute_result_id` from the question, both models, the timestamp and the
    replicate. Unknown field names are rejected (``extra="forbid"``) so that a typo in
    a pipeline stage fails loudly instead of silently dropping data.

    Raises:
        pydantic.ValidationError: a required field is missing or has the wrong type.
    """

    model_config = ConfigDict(extra="forbid")

    # Identification
    question_id: str
    template_id: str
    result_id: str = Field(default="", description="16 hex chars, see compute_result_id")
    question_text: str
    raw_answer: str | None = None
    keywords: list[str] | None = None
    run_name: str | None = None
    replicate: int | None = None

    # Models
    answering: ModelIdentity
    parsing: ModelIdentity
    answering_system_prompt: str | None = None
    parsing_system_prompt: str | None = None

    # Execution
    completed_without_errors: bool
    error: str | None = None
    # Why the result did not pass (None: it passed) and non-fatal observations,
    # as the original framework records them (see failure.py).
    failure: ResultFailure | None = None
    caveats: list[str] = Field(default_factory=list)
    execution_time: float
    timestamp: str

    # Provenance
    few_shot_enabled: bool = False
    few_shot_example_count: int = 0
    evaluation_mode: str | None = None

    # Re-verification (verifleet reverify): the stored result this one re-judges,
    # as "<run>#<result_id>" (run: a results file or "job:<id>"); None otherwise.
    derived_from: str | None = None
    # What decided the verdict, part by part (fingerprint.py); None for results
    # written before fingerprints existed.
    fingerprint: ResultFingerprint | None = None

    # Scenario linking; all None for standalone questions
    scenario_id: str | None = None
    scenario_node: str | None = None
    scenario_turn: int | None = None
    scenario_path: list[str] | None = None

    @field_validator("failure", "fingerprint", mode="before")
    @classmethod
    def _null_failure(cls, value: object) -> object:
        # A columnar file reads an absent failure back as a struct of nulls.
        if isinstance(value, dict) and all(v is None for v in value.values()):
            return None
        return value

    @model_validator(mode="before")
    @classmethod
    def _fill_result_id(cls, data: object) -> object:
        # Only raw mappings that lack an id get one; a given id is kept verbatim so a
        # stored result reads back unchanged.
        if not isinstance(data, dict) or data.get("result_id"):
            return data
        try:
            answering = ModelIdentity.model_validate(data["answering"])
            parsing = ModelIdentity.model_validate(data["parsing"])
            question_id = data["question_id"]
            timestamp = data["timestamp"]
        except (KeyError, ValueError, TypeError):
            return data  # field validation reports what is missing or wrong
        return {
            **data,
            "result_id": cls.compute_result_id(
                question_id, answering, parsing, timestamp, data.get("replicate")
            ),
        }

    @property
    def answering_model(self) -> str:
        """Display string of the answering model, e.g. ``langchain:gpt-4.1-mini``."""
        return self.answering.display_string

    @property
    def parsing_model(self) -> str:
        """Display string of the parsing (judge) model."""
        return self.parsing.display_string

    @staticmethod
    def compute_result_id(
        question_id: str,
        answering: ModelIdentity,
        parsing: ModelIdentity,
        timestamp: str,
        replicate: int | None = None,
    ) -> str:
        """Deterministic result id: the same inputs always give the same id.

        The inputs are serialised as key-sorted ASCII JSON (models by their
        ``canonical_key``) and hashed with SHA-256.

        Returns:
            The first 16 hex characters of the digest.
        """
        payload = {
            "answering": answering.canonical_key,
            "parsing": parsing.canonical_key,
            "question_id": question_id,
            "replicate": replicate,
            "timestamp": timestamp,
        }
        text = json.dumps(payload, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
