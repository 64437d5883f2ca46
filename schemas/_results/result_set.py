"""VerificationResultSet: every result of a run, with filtering, grouping and views."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Annotated, Any, Self, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_serializer,
    field_validator,
)

from verifleet.errors import VerifleetError

from .._scenario import ScenarioExecutionResult
from .judgment_view import JudgmentResults, RubricJudgmentResults
from .result import VerificationResult
from .rubric_view import RubricResults
from .selection import ResultCollection
from .summary import summarize
from .template_view import TemplateResults

__all__ = ["RecordedError", "VerificationResultSet"]


class RecordedError(VerifleetError):
    """An error restored from a serialised result set; its message is
    ``"TypeName: message"`` of the original exception."""


# On the wire an error is its "TypeName: message" text; say so in JSON schemas (an API
# response model would otherwise fail to build a schema for BaseException).
_Error = Annotated[
    BaseException, WithJsonSchema({"type": "string", "description": "TypeName: message"})
]


class VerificationResultSet(ResultCollection, BaseModel):
    """All results of a run (in any order), plus scenario data when there is any.

    Build it whole (``VerificationResultSet(results=[...])``) or incrementally with
    :meth:`add` / :meth:`extend`, which append without re-validating, so a collector
    can assemble 100k results cheaply. Iteration, ``len`` and indexing work on
    ``results``; slicing, :meth:`filter` and the ``group_by_*`` methods give new sets.
    ``errors`` holds ``(description, exception)`` pairs; through JSON an
    exception travels as ``"TypeName: message"`` and comes back as a :class:`RecordedError`.

    Raises:
        pydantic.ValidationError: a result (or an entry of ``errors``) is malformed.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    results: list[VerificationResult] = Field(default_factory=list)
    scenario_results: list[ScenarioExecutionResult] | None = None
    errors: list[tuple[str, _Error]] | None = None

    @field_validator("errors", mode="before")
    @classmethod
    def _restore_errors(cls, value: Any) -> object:
        if value is None:
            return None
        return [
            (desc, exc if isinstance(exc, BaseException) else RecordedError(str(exc)))
            for desc, exc in value
        ]

    @field_serializer("errors")
    def _dump_errors(
        self, value: list[tuple[str, BaseException]] | None
    ) -> list[tuple[str, str]] | None:
        if value is None:
            return None
        return [
            (desc, str(exc) if isinstance(exc, RecordedError) else f"{type(exc).__name__}: {exc}")
            for desc, exc in value
        ]

    def _spawn(self, results: list[VerificationResult]) -> Self:
        # Results are already validated models; skip a second validation pass. Scenario
        # data and errors describe the whole run, so a subset does not carry them.
        # (pydantic's mypy plugin types model_construct as returning this class, not Self.)
        return cast(Self, type(self).model_construct(results=results))

    # --- container protocol ----------------------------------------------------------

    def __iter__(self) -> Iterator[VerificationResult]:  # type: ignore[override]
        """Iterate over results (not over fields, unlike a plain pydantic model)."""
        return iter(self.results)

    def add(self, result: VerificationResult) -> None:
        """Append one result.

        Raises:
            TypeError: ``result`` is not a VerificationResult.
        """
        if not isinstance(result, VerificationResult):
            raise TypeError(f"expected VerificationResult, got {type(result).__name__}")
        self.results.append(result)

    def extend(self, results: Iterable[VerificationResult]) -> None:
        """Append many results; nothing is appended if any item has the wrong type.

        Raises:
            TypeError: an item is not a VerificationResult.
        """
        batch = list(results)
        for item in batch:
            if not isinstance(item, VerificationResult):
                raise TypeError(f"expected VerificationResult, got {type(item).__name__}")
        self.results.extend(batch)

    # --- views -------------------------------------------------------------------------

    def get_template_results(self) -> TemplateResults:
        """Template view over all results."""
        return TemplateResults(self.results)

    def get_rubrics_results(self, include_deep_judgment: bool = False) -> RubricResults:
        """Rubric view over all results; optionally with deep-judgment columns."""
        return RubricResults(self.results, include_deep_judgment=include_deep_judgment)

    def get_judgment_results(self) -> JudgmentResults:
        """Template deep-judgment view over all results."""
        return JudgmentResults(self.results)

    def get_rubric_judgments_results(self) -> RubricJudgmentResults:
        """Rubric deep-judgment view (one row per trait per excerpt) over all results."""
        return RubricJudgmentResults(self.results)

    # --- filtering (grouping comes from ResultCollection) ----------------------------------------------------

    def filter(
        self,
        question_ids: Collection[str] | None = None,
        answering_models: Collection[str] | None = None,
        parsing_models: Collection[str] | None = None,
        replicates: Collection[int | None] | None = None,
        completed_only: bool = False,
        has_template: bool = False,
        has_rubric: bool = False,
        has_judgment: bool = False,
    ) -> VerificationResultSet:
        """A new set of the results matching every criterion, order kept.

        Criteria left at None do not filter; an empty collection matches nothing.
        Models match by display string or bare model name. ``has_template``,
        ``has_rubric`` and ``has_judgment`` keep results where that evaluation ran.
        Scenario data and errors are not carried over.
        """

        def sections_ok(result: VerificationResult) -> bool:
            if has_template and not (
                result.template and result.template.template_verification_performed
            ):
                return False
            if has_rubric and not (result.rubric and result.rubric.rubric_evaluation_performed):
                return False
            return not has_judgment or bool(
                result.deep_judgment and result.deep_judgment.deep_judgment_performed
            )

        return self._select(
            question_ids=question_ids,
            answering_models=answering_models,
            parsing_models=parsing_models,
            replicates=replicates,
            completed_only=completed_only,
            extra=sections_ok if has_template or has_rubric or has_judgment else None,
        )

    # --- summaries ---------------------------------------------------------------------

    def get_summary(self) -> dict[str, object]:
        """Run statistics; see :func:`verifleet.schemas._results.summary.summarize`."""
        return summarize(self.results)

    def get_question_ids(self) -> list[str]:
        """Distinct question ids, sorted."""
        return sorted({r.metadata.question_id for r in self.results})

    def get_model_names(self) -> list[str]:
        """Distinct answering model display strings, sorted."""
        return sorted({r.metadata.answering_model for r in self.results})
