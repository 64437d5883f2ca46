"""TemplateResults: the correctness view (pass rates, checks, parsed fields)."""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable, Collection
from typing import TypeVar, cast

from .aggregators import MeanAggregator
from .frames_template import template_field_frame, template_regex_frame, template_usage_frame
from .result import VerificationResult
from .template import VerificationResultTemplate
from .view_base import ResultView

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = ["TemplateResults"]

# Rates are means of booleans whatever the view's "mean" has been replaced with.
_RATE = MeanAggregator()

_T = TypeVar("_T")


class _Skip(enum.Enum):
    # Returned by an accessor's picker to leave a result out of the answer.
    SKIP = enum.auto()


_SKIP = _Skip.SKIP


def _template(result: VerificationResult) -> VerificationResultTemplate | None:
    template = result.template
    return template if template is not None and template.template_verification_performed else None


class TemplateResults(ResultView):
    """Template verification outcomes of a set of results.

    Per-result accessors return ``{result_id: value}`` for results whose template
    verification ran; aggregations return ``{group: value}`` with groups sorted.
    """

    # --- DataFrames -------------------------------------------------------------------

    def to_dataframe(self) -> pd.DataFrame:
        """One row per parsed field per result; see ``TEMPLATE_FIELD_COLUMNS``."""
        return template_field_frame(self.results)

    def to_regex_dataframe(self) -> pd.DataFrame:
        """One row per regex pattern per result that ran regex validations."""
        return template_regex_frame(self.results)

    def to_usage_dataframe(self, totals_only: bool = False) -> pd.DataFrame:
        """One row per usage stage per result, or one ``total`` row per result."""
        return template_usage_frame(self.results, totals_only=totals_only)

    # --- per-result access ------------------------------------------------------------

    def get_results_with_template(self) -> list[VerificationResult]:
        """Results whose template verification ran."""
        return self._results_with(_template)

    def _collect(
        self, question_id: str | None, pick: Callable[[VerificationResultTemplate], _T | _Skip]
    ) -> dict[str, _T]:
        out: dict[str, _T] = {}
        for result_id, template in self._sections(_template, question_id):
            found = pick(template)
            if found is not _SKIP:
                out[result_id] = found
        return out

    def get_verification_results(self, question_id: str | None = None) -> dict[str, bool | None]:
        """``{result_id: verify_result}``."""
        return self._collect(question_id, lambda t: t.verify_result)

    def get_embedding_scores(self, question_id: str | None = None) -> dict[str, float | None]:
        """``{result_id: similarity}`` for results whose embedding check ran."""
        return self._collect(
            question_id,
            lambda t: t.embedding_similarity_score if t.embedding_check_performed else _SKIP,
        )

    def get_embedding_overrides(self, question_id: str | None = None) -> dict[str, bool]:
        """``{result_id: override_applied}`` for results whose embedding check ran."""
        return self._collect(
            question_id,
            lambda t: t.embedding_override_applied if t.embedding_check_performed else _SKIP,
        )

    def get_regex_results(
        self, question_id: str | None = None, pattern_name: str | None = None
    ) -> dict[str, dict[str, bool]]:
        """``{result_id: {pattern: matched}}``, optionally for one pattern only."""

        def pick(t: VerificationResultTemplate) -> dict[str, bool] | _Skip:
            found = t.regex_validation_results
            if not t.regex_validations_performed or found is None:
                return _SKIP
            if pattern_name is None:
                return dict(found)
            return {pattern_name: found[pattern_name]} if pattern_name in found else _SKIP

        return self._collect(question_id, pick)

    def get_abstention_detections(self, question_id: str | None = None) -> dict[str, bool | None]:
        """``{result_id: abstention_detected}`` for results whose abstention check ran."""
        return self._collect(
            question_id,
            lambda t: t.abstention_detected if t.abstention_check_performed else _SKIP,
        )

    def get_sufficiency_detections(self, question_id: str | None = None) -> dict[str, bool | None]:
        """``{result_id: sufficiency_detected}`` for results whose sufficiency check ran."""
        return self._collect(
            question_id,
            lambda t: t.sufficiency_detected if t.sufficiency_check_performed else _SKIP,
        )

    def get_mcp_usage(self, question_id: str | None = None) -> dict[str, dict[str, object]]:
        """``{result_id: {"servers": [...], "metrics": {...}}}``."""
        return self._collect(
            question_id,
            lambda t: {"servers": t.answering_mcp_servers or [], "metrics": t.agent_metrics or {}},
        )

    def get_parsed_responses(
        self, question_id: str | None = None
    ) -> dict[str, dict[str, dict[str, object] | None]]:
        """``{result_id: {"llm": parsed_llm_response, "ground_truth": parsed_gt_response}}``."""
        return self._collect(
            question_id,
            lambda t: {"llm": t.parsed_llm_response, "ground_truth": t.parsed_gt_response},
        )

    # --- filtering and summary --------------------------------------------------------

    def filter(
        self,
        question_ids: Collection[str] | None = None,
        answering_models: Collection[str] | None = None,
        parsing_models: Collection[str] | None = None,
        replicates: Collection[int | None] | None = None,
        passed_only: bool = False,
        failed_only: bool = False,
    ) -> TemplateResults:
        """A view of the matching results (criteria left at None do not filter).

        ``passed_only``/``failed_only`` keep results whose ``verify_result`` is exactly
        True/False; setting both yields an empty view.
        """

        def verdict_ok(result: VerificationResult) -> bool:
            verdict = result.template.verify_result if result.template else None
            return not (passed_only and verdict is not True) and not (
                failed_only and verdict is not False
            )

        return self._select(
            question_ids=question_ids,
            answering_models=answering_models,
            parsing_models=parsing_models,
            replicates=replicates,
            extra=verdict_ok if passed_only or failed_only else None,
        )

    def get_template_summary(self) -> dict[str, int | float]:
        """Counts over results whose template verification ran.

        Returns:
            ``num_results``, ``num_passed``, ``num_failed``, ``pass_rate`` (0.0 when
            there are no results), ``num_with_embedding``, ``num_with_regex``,
            ``num_with_abstention``, ``num_questions``.
        """
        performed = self.get_results_with_template()
        templates = [r.template for r in performed if r.template is not None]
        passed = sum(t.verify_result is True for t in templates)
        return {
            "num_results": len(performed),
            "num_passed": passed,
            "num_failed": sum(t.verify_result is False for t in templates),
            "pass_rate": passed / len(performed) if performed else 0.0,
            "num_with_embedding": sum(t.embedding_check_performed for t in templates),
            "num_with_regex": sum(t.regex_validations_performed for t in templates),
            "num_with_abstention": sum(t.abstention_check_performed for t in templates),
            "num_questions": len({r.metadata.question_id for r in performed}),
        }

    # --- aggregation ------------------------------------------------------------------

    def _per_result_frame(self) -> pd.DataFrame:
        # The field frame repeats result columns once per field; aggregate per result.
        return self.to_dataframe().drop_duplicates(subset=["result_index"])

    def aggregate_pass_rate(self, by: str = "question_id") -> dict[object, float]:
        """Share of results with ``verify_result`` True per group (None verdicts skipped).

        Raises:
            KeyError: ``by`` is not a column of :meth:`to_dataframe`.
        """
        frame = self._per_result_frame()
        frame = frame[frame["verify_result"].notna()]
        # _RATE is the plain mean: a float for every group (groups are never empty).
        return cast(dict[object, float], self._aggregate_by(frame, by, "verify_result", _RATE))

    def aggregate_embedding_scores(
        self, strategy: str = "mean", by: str = "question_id", **kwargs: object
    ) -> dict[object, object]:
        """Aggregate embedding similarity per group over results whose check ran.

        Raises:
            KeyError: unknown ``strategy`` or ``by`` column.
        """
        frame = self._per_result_frame()
        frame = frame[
            frame["embedding_check_performed"].astype(bool)
            & frame["embedding_similarity_score"].notna()
        ]
        # inner passed positionally, so that no strategy option can take its place
        return self._aggregate_by(frame, by, "embedding_similarity_score", strategy, None, **kwargs)

    def aggregate_abstention_rate(self, by: str = "question_id") -> dict[object, float]:
        """Share of abstentions per group over results whose abstention check ran.

        Raises:
            KeyError: ``by`` is not a column of :meth:`to_dataframe`.
        """
        frame = self._per_result_frame()
        frame = frame[
            frame["abstention_check_performed"].astype(bool) & frame["abstention_detected"].notna()
        ]
        return cast(
            dict[object, float], self._aggregate_by(frame, by, "abstention_detected", _RATE)
        )

    def aggregate_regex_success_rate(
        self, pattern_name: str | None = None, by: str = "question_id"
    ) -> dict[object, float] | dict[object, dict[object, float]]:
        """Share of matched patterns per group: ``{group: rate}`` for one pattern,
        otherwise ``{group: {pattern: rate}}``.

        Raises:
            KeyError: ``by`` is not a column of :meth:`to_regex_dataframe`.
        """
        frame = self.to_regex_dataframe()
        if pattern_name is not None:
            frame = frame[frame["pattern_name"] == pattern_name]
            return cast(dict[object, float], self._aggregate_by(frame, by, "matched", _RATE))
        return cast(
            dict[object, dict[object, float]],
            self._aggregate_by(frame, by, "matched", _RATE, inner="pattern_name"),
        )
