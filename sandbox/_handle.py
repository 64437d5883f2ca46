"""What the host knows about a template: plain data copied out of an executor."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from verifleet.templates import RegexOutcome

from ._protocol import source_digest

__all__ = ["TemplateEvaluation", "TemplateHandle", "TemplateVerification"]


@dataclass(frozen=True)
class TemplateHandle:
    """A validated template bound to one question, as seen from the host.

    Everything here was computed inside an executor and crossed as JSON; the
    host never holds the template's class. Hand it back to
    :meth:`SandboxPool.evaluate` to parse and verify a judge's output.

    Attributes:
        template_id: MD5 of the normalised source.
        question_id: The question the class is bound to.
        source: The template source (re-sent to an executor that lacks it).
        class_name: Name of the answer class (the judge schema's name).
        judge_fields: Fields the judge fills, in declaration order; empty for a
            regex/trace-only template.
        composition_strategy: Label of the composition strategy, if any.
        defines_granular: Whether the class defines ``verify_granular``.
        digest: SHA-256 of the exact source (what executors key templates by).
    """

    template_id: str
    question_id: str
    source: str = field(repr=False)
    class_name: str
    judge_fields: tuple[str, ...]
    composition_strategy: str | None
    defines_granular: bool
    _judge_schema: dict[str, Any] = field(repr=False)
    _ground_truth: dict[str, Any] | None = field(repr=False)
    digest: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", source_digest(self.source))

    def judge_schema(self) -> dict[str, Any]:
        """The JSON schema the judge fills (a fresh copy per call)."""
        return copy.deepcopy(self._judge_schema)

    def ground_truth(self) -> dict[str, Any] | None:
        """The JSON-safe ground truth (``parsed_gt_response``; a fresh copy)."""
        return copy.deepcopy(self._ground_truth)

    def description(self) -> dict[str, Any]:
        """What the executor said of the template, as JSON-safe data: nothing of
        it depends on the question, so another process can take it up with
        :meth:`SandboxPool.prime` instead of asking an executor again."""
        return {
            "class_name": self.class_name,
            "judge_fields": list(self.judge_fields),
            "composition_strategy": self.composition_strategy,
            "defines_granular": self.defines_granular,
            "judge_schema": self._judge_schema,
            "ground_truth": self._ground_truth,
        }

    @classmethod
    def from_description(
        cls, description: dict[str, Any], *, template_id: str, question_id: str, source: str
    ) -> TemplateHandle:
        """The handle :meth:`description` came from, for ``question_id``.

        Raises:
            KeyError, TypeError, ValueError: ``description`` is not one.
        """
        return cls(
            template_id=template_id,
            question_id=question_id,
            source=source,
            class_name=str(description["class_name"]),
            judge_fields=tuple(str(f) for f in description["judge_fields"]),
            composition_strategy=description["composition_strategy"],
            defines_granular=bool(description["defines_granular"]),
            _judge_schema=dict(description["judge_schema"]),
            _ground_truth=description["ground_truth"],
        )


@dataclass(frozen=True)
class TemplateVerification:
    """The template's own verification of one parsed answer.

    Attributes:
        field_ok: ``verify()``'s verdict (False when it raised).
        error: ``"<Type>: <message>"`` when ``verify()`` raised.
        field_results: Per-field results, None when the template has none or
            ``field_results()`` raised (then ``field_results_error`` says why).
        regex: Outcome of the template's regex checks on the raw response (None
            when they raised; ``regex_error`` then says how, and the template's
            verification fails as a stage error).
        granular: ``verify_granular()``'s score (None when not defined, when it
            raised, or when ``verify()`` raised).
        composition_strategy: The class's composition strategy label.
    """

    field_ok: bool
    error: str | None
    field_results: dict[str, bool] | None
    field_results_error: str | None
    regex: RegexOutcome | None
    regex_error: str | None
    granular: Any
    granular_error: str | None
    composition_strategy: str | None

    @property
    def verify_result(self) -> bool:
        """``verify() AND regex checks``."""
        return self.field_ok and self.regex is not None and self.regex.passed


@dataclass(frozen=True)
class TemplateEvaluation:
    """One round trip: the judge's output validated into the template, then verified.

    Attributes:
        invalid: The first validation errors when the output does not fit the
            template (then ``parsed`` and ``verification`` are None).
        parsed: The judge's values, JSON-safe (``parsed_llm_response``).
        verification: The template's verdict on them.
    """

    invalid: str | None = None
    parsed: dict[str, Any] | None = None
    verification: TemplateVerification | None = None
