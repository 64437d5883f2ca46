"""Deep-judgment views: template attributes (JudgmentResults) and rubric traits
(RubricJudgmentResults), each exploded one row per excerpt in its DataFrame."""

from __future__ import annotations

import typing
from collections.abc import Collection
from typing import TypedDict

from .deep_judgment import VerificationResultDeepJudgment, VerificationResultDeepJudgmentRubric
from .frames_judgment import judgment_frame, rubric_judgment_frame
from .result import VerificationResult
from .view_base import ResultView

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = ["JudgmentResults", "RetrySummary", "RubricJudgmentResults"]


class RetrySummary(TypedDict):
    """:meth:`RubricJudgmentResults.get_retry_summary`'s answer."""

    total_excerpt_retries: int
    total_model_calls: int
    traits_without_valid_excerpts: dict[str, int]


def _template_judgment(result: VerificationResult) -> VerificationResultDeepJudgment | None:
    dj = result.deep_judgment
    return dj if dj is not None and dj.deep_judgment_performed else None


def _rubric_judgment(result: VerificationResult) -> VerificationResultDeepJudgmentRubric | None:
    dj = result.deep_judgment_rubric
    return dj if dj is not None and dj.deep_judgment_rubric_performed else None


class JudgmentResults(ResultView):
    """Template deep judgment: excerpts, reasoning and hallucination risk per attribute.

    Per-result accessors return ``{result_id: ...}`` for results whose deep judgment
    was performed.
    """

    def to_dataframe(self) -> pd.DataFrame:
        """One row per excerpt per attribute; see ``JUDGMENT_COLUMNS``."""
        return judgment_frame(self.results)

    def _judged(self, question_id: str | None) -> list[tuple[str, VerificationResultDeepJudgment]]:
        return self._sections(_template_judgment, question_id)

    def get_results_with_judgment(self) -> list[VerificationResult]:
        """Results whose template deep judgment was performed."""
        return self._results_with(_template_judgment)

    def get_extracted_excerpts(
        self, question_id: str | None = None, attribute_name: str | None = None
    ) -> dict[str, dict[str, list[dict[str, object]]]]:
        """``{result_id: {attribute: [excerpt, ...]}}``."""
        return self._per_item(
            _template_judgment, lambda dj: dj.extracted_excerpts, question_id, attribute_name
        )

    def get_attribute_reasoning(
        self, question_id: str | None = None, attribute_name: str | None = None
    ) -> dict[str, dict[str, str]]:
        """``{result_id: {attribute: reasoning}}``."""
        return self._per_item(
            _template_judgment, lambda dj: dj.attribute_reasoning, question_id, attribute_name
        )

    def get_hallucination_risks(
        self, question_id: str | None = None, attribute_name: str | None = None
    ) -> dict[str, dict[str, str]]:
        """``{result_id: {attribute: "none"|"low"|"medium"|"high"}}``."""
        return self._per_item(
            _template_judgment,
            lambda dj: dj.hallucination_risk_assessment,
            question_id,
            attribute_name,
        )

    def get_attributes_without_excerpts(
        self, question_id: str | None = None
    ) -> dict[str, list[str]]:
        """``{result_id: [attribute, ...]}`` for results with such attributes."""
        return {
            rid: list(dj.attributes_without_excerpts)
            for rid, dj in self._judged(question_id)
            if dj.attributes_without_excerpts
        }

    def get_processing_metrics(
        self, question_id: str | None = None
    ) -> dict[str, dict[str, list[str] | int | bool]]:
        """``{result_id: {stages_completed, model_calls, retry_count, search_enabled}}``."""
        return {
            rid: {
                "stages_completed": list(dj.deep_judgment_stages_completed or []),
                "model_calls": dj.deep_judgment_model_calls,
                "retry_count": dj.deep_judgment_excerpt_retry_count,
                "search_enabled": dj.deep_judgment_search_enabled,
            }
            for rid, dj in self._judged(question_id)
        }

    def filter(
        self,
        question_ids: Collection[str] | None = None,
        answering_models: Collection[str] | None = None,
        parsing_models: Collection[str] | None = None,
        replicates: Collection[int | None] | None = None,
        with_search_only: bool = False,
    ) -> JudgmentResults:
        """A view of the matching results; ``with_search_only`` keeps search-enhanced ones."""
        return self._select(
            question_ids=question_ids,
            answering_models=answering_models,
            parsing_models=parsing_models,
            replicates=replicates,
            extra=(
                (
                    lambda r: (
                        r.deep_judgment is not None and r.deep_judgment.deep_judgment_search_enabled
                    )
                )
                if with_search_only
                else None
            ),
        )

    def get_judgment_summary(self) -> dict[str, int]:
        """Counts: ``num_results``, ``num_with_search``, ``num_attributes`` (distinct),
        ``num_excerpts``, ``num_attributes_without_excerpts``, ``total_model_calls``,
        ``num_questions``."""
        judged = self.get_results_with_judgment()
        attributes: set[str] = set()
        excerpts = without = calls = search = 0
        for result in judged:
            dj = result.deep_judgment
            if dj is None:
                continue
            found = dj.extracted_excerpts or {}
            attributes.update(found)
            excerpts += sum(len(items) for items in found.values())
            without += len(dj.attributes_without_excerpts or [])
            calls += dj.deep_judgment_model_calls
            search += dj.deep_judgment_search_enabled
        return {
            "num_results": len(judged),
            "num_with_search": search,
            "num_attributes": len(attributes),
            "num_excerpts": excerpts,
            "num_attributes_without_excerpts": without,
            "total_model_calls": calls,
            "num_questions": len({r.metadata.question_id for r in judged}),
        }

    def aggregate_excerpt_counts(
        self, strategy: str = "mean", by: str = "question_id", **kwargs: object
    ) -> dict[object, dict[object, object]]:
        """Excerpts per attribute per result, aggregated per group:
        ``{group: {attribute: value}}`` (an attribute without excerpts counts 0).

        Raises:
            KeyError: unknown ``strategy`` or ``by`` column.
        """
        frame = self.to_dataframe()
        frame = frame[frame["attribute_name"].notna()]
        if frame.empty:
            return {}
        counts = (
            frame.groupby([by, "attribute_name", "result_index"], sort=True)[
                "attribute_has_excerpts"
            ]
            .agg(lambda flags: int(flags.astype(bool).sum()))
            .rename("excerpt_count")
            .reset_index()
        )
        return self._aggregate_by(
            counts, by, "excerpt_count", strategy, inner="attribute_name", **kwargs
        )

    def aggregate_hallucination_risk(
        self, by: str = "question_id"
    ) -> dict[object, dict[object, object]]:
        """Distribution of attribute risk levels per group:
        ``{group: {attribute: {risk: count}}}``, counted once per result.

        Raises:
            KeyError: ``by`` is not a column of :meth:`to_dataframe`.
        """
        frame = self.to_dataframe().drop_duplicates(subset=["result_index", "attribute_name"])
        frame = frame[frame["attribute_overall_risk"].notna()]
        return self._aggregate_by(
            frame, by, "attribute_overall_risk", "count", inner="attribute_name"
        )


class RubricJudgmentResults(ResultView):
    """Rubric deep judgment: per-trait excerpts, reasoning, scores and retries."""

    def to_dataframe(self) -> pd.DataFrame:
        """One row per excerpt per deep-judged trait; see ``RUBRIC_JUDGMENT_COLUMNS``."""
        return rubric_judgment_frame(self.results)

    def _judged(
        self, question_id: str | None
    ) -> list[tuple[str, VerificationResultDeepJudgmentRubric]]:
        return self._sections(_rubric_judgment, question_id)

    def get_results_with_rubric_judgment(self) -> list[VerificationResult]:
        """Results whose rubric deep judgment was performed."""
        return self._results_with(_rubric_judgment)

    def get_trait_excerpts(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, list[dict[str, object]]]]:
        """``{result_id: {trait: [excerpt, ...]}}``."""
        return self._per_item(
            _rubric_judgment, lambda dj: dj.extracted_rubric_excerpts, question_id, trait_name
        )

    def get_trait_reasoning(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, str]]:
        """``{result_id: {trait: reasoning}}``."""
        return self._per_item(
            _rubric_judgment, lambda dj: dj.rubric_trait_reasoning, question_id, trait_name
        )

    def get_trait_scores(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, bool | int]]:
        """``{result_id: {trait: score}}`` of deep-judged traits."""
        return self._per_item(
            _rubric_judgment, lambda dj: dj.deep_judgment_rubric_scores, question_id, trait_name
        )

    def get_excerpt_count_summary(self) -> dict[str, dict[str, float]]:
        """Per trait: ``{"mean": ..., "min": ..., "max": ..., "total": ...}`` excerpts."""
        counts: dict[str, list[int]] = {}
        for _, dj in self._judged(None):
            for trait, excerpts in (dj.extracted_rubric_excerpts or {}).items():
                counts.setdefault(trait, []).append(len(excerpts))
        return {
            trait: {
                "mean": sum(values) / len(values),
                "min": min(values),
                "max": max(values),
                "total": sum(values),
            }
            for trait, values in sorted(counts.items())
        }

    def get_retry_summary(self) -> RetrySummary:
        """Retry totals: ``total_excerpt_retries``, ``total_model_calls``,
        ``traits_without_valid_excerpts`` (``{trait: number of results}``)."""
        retries = calls = 0
        failed: dict[str, int] = {}
        for _, dj in self._judged(None):
            retries += dj.total_excerpt_retries
            calls += dj.total_deep_judgment_model_calls
            for trait in dj.traits_without_valid_excerpts or []:
                failed[trait] = failed.get(trait, 0) + 1
        return RetrySummary(
            total_excerpt_retries=retries,
            total_model_calls=calls,
            traits_without_valid_excerpts=dict(sorted(failed.items())),
        )
