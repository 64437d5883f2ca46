"""RubricResults: the quality view (trait scores by type, aggregation)."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Self, cast

from .frames_rubric import RubricFrameType, rubric_frame
from .result import VerificationResult
from .rubric import AgenticScore, VerificationResultRubric
from .view_base import ResultView

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = ["RubricResults"]

_SCORE_FIELDS = {
    "llm": "llm_trait_scores",
    "regex": "regex_trait_scores",
    "callable": "callable_trait_scores",
    "metric": "metric_trait_scores",
    "agentic": "agentic_trait_scores",
}


def _rubric(result: VerificationResult) -> VerificationResultRubric | None:
    rubric = result.rubric
    return rubric if rubric is not None and rubric.rubric_evaluation_performed else None


class RubricResults(ResultView):
    """Rubric trait scores of a set of results.

    Per-result accessors return ``{result_id: {trait: value}}`` for results whose
    rubric evaluation ran; aggregations return ``{group: {trait: value}}`` with groups
    and traits sorted.
    """

    def __init__(
        self, results: Iterable[VerificationResult] = (), include_deep_judgment: bool = False
    ) -> None:
        """Wrap ``results``; ``include_deep_judgment`` adds the trait reasoning,
        excerpts and hallucination-risk columns to :meth:`to_dataframe`."""
        super().__init__(results)
        self.include_deep_judgment = include_deep_judgment

    def _spawn(self, results: Iterable[VerificationResult]) -> Self:
        view = super()._spawn(results)
        view.include_deep_judgment = self.include_deep_judgment
        return view

    def to_dataframe(self, trait_type: RubricFrameType = "all") -> pd.DataFrame:
        """One row per trait per result, metric traits one row per metric.

        Raises:
            ValueError: unknown ``trait_type``.
        """
        return rubric_frame(
            self.results, trait_type, include_deep_judgment=self.include_deep_judgment
        )

    # --- per-result access ------------------------------------------------------------

    def get_results_with_rubric(self) -> list[VerificationResult]:
        """Results whose rubric evaluation ran."""
        return self._results_with(_rubric)

    def get_llm_trait_scores(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, bool | int]]:
        """``{result_id: {trait: score}}`` of LLM traits."""
        return self._per_item(_rubric, lambda r: r.llm_trait_scores, question_id, trait_name)

    def get_regex_trait_scores(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, bool]]:
        """``{result_id: {trait: passed}}`` of regex traits."""
        return self._per_item(_rubric, lambda r: r.regex_trait_scores, question_id, trait_name)

    def get_callable_trait_scores(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, bool | int | float]]:
        """``{result_id: {trait: value}}`` of callable traits."""
        return self._per_item(_rubric, lambda r: r.callable_trait_scores, question_id, trait_name)

    def get_metric_trait_scores(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, dict[str, float]]]:
        """``{result_id: {trait: {metric: value}}}`` of metric traits."""
        return self._per_item(_rubric, lambda r: r.metric_trait_scores, question_id, trait_name)

    def get_agentic_trait_scores(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, AgenticScore]]:
        """``{result_id: {trait: score}}`` of agentic traits."""
        return self._per_item(_rubric, lambda r: r.agentic_trait_scores, question_id, trait_name)

    def get_all_trait_scores(self, question_id: str | None = None) -> dict[str, dict[str, object]]:
        """``{result_id: get_all_trait_scores()}``."""
        return {
            rid: rubric.get_all_trait_scores()
            for rid, rubric in self._sections(_rubric, question_id)
        }

    def get_confusion_matrices(
        self, question_id: str | None = None, trait_name: str | None = None
    ) -> dict[str, dict[str, dict[str, list[str]]]]:
        """``{result_id: {trait: {"tp"|"fp"|"fn"|"tn": [items]}}}`` of metric traits."""
        return self._per_item(
            _rubric, lambda r: r.metric_trait_confusion_lists, question_id, trait_name
        )

    # --- summary ----------------------------------------------------------------------

    def get_trait_summary(self) -> dict[str, int | list[str]]:
        """Trait names by type over results whose rubric evaluation ran.

        Returns:
            ``num_results``, sorted ``llm_traits``, ``regex_traits``,
            ``callable_traits``, ``metric_traits``, then ``num_questions``;
            ``agentic_traits`` is added only when some result has agentic scores.
        """
        names: dict[str, set[str]] = {kind: set() for kind in _SCORE_FIELDS}
        questions: set[str] = set()
        count = 0
        for result in self.get_results_with_rubric():
            count += 1
            questions.add(result.metadata.question_id)
            for kind, field in _SCORE_FIELDS.items():
                names[kind].update(getattr(result.rubric, field) or {})
        summary: dict[str, int | list[str]] = {"num_results": count}
        for kind in ("llm", "regex", "callable", "metric"):
            summary[f"{kind}_traits"] = sorted(names[kind])
        if names["agentic"]:
            summary["agentic_traits"] = sorted(names["agentic"])
        summary["num_questions"] = len(questions)
        return summary

    # --- aggregation ------------------------------------------------------------------

    def _aggregate_traits(
        self, trait_type: RubricFrameType, strategy: str, by: str, **kwargs: object
    ) -> dict[object, dict[object, object]]:
        frame = self.to_dataframe(trait_type)
        return self._aggregate_by(frame, by, "trait_score", strategy, inner="trait_name", **kwargs)

    def aggregate_llm_traits(
        self, strategy: str = "mean", by: str = "question_id", **kwargs: object
    ) -> dict[object, dict[object, object]]:
        """Aggregate every LLM trait per group, e.g. ``{"q1": {"clarity": 3.5}}``.

        Raises:
            KeyError: unknown ``strategy`` or ``by`` column.
            ValueError: the strategy cannot handle the values (``mean`` of labels).
        """
        return self._aggregate_traits("llm", strategy, by, **kwargs)

    def aggregate_regex_traits(
        self, strategy: str = "majority_vote", by: str = "question_id", **kwargs: object
    ) -> dict[object, dict[object, object]]:
        """Aggregate every regex trait per group (majority vote by default).

        Raises:
            KeyError: unknown ``strategy`` or ``by`` column.
        """
        return self._aggregate_traits("regex", strategy, by, **kwargs)

    def aggregate_callable_traits(
        self, strategy: str = "majority_vote", by: str = "question_id", **kwargs: object
    ) -> dict[object, dict[object, object]]:
        """Aggregate every callable trait per group (majority vote by default).

        Raises:
            KeyError: unknown ``strategy`` or ``by`` column.
        """
        return self._aggregate_traits("callable", strategy, by, **kwargs)

    def aggregate_agentic_traits(
        self, strategy: str = "mean", by: str = "question_id", **kwargs: object
    ) -> dict[object, dict[object, object]]:
        """Aggregate every agentic trait per group.

        Raises:
            KeyError: unknown ``strategy`` or ``by`` column.
        """
        return self._aggregate_traits("agentic", strategy, by, **kwargs)

    def aggregate_metric_traits(
        self,
        metric_name: str | None = None,
        strategy: str = "mean",
        by: str = "question_id",
        **kwargs: object,
    ) -> dict[object, dict[object, object]]:
        """Aggregate metric traits per group.

        Returns:
            With ``metric_name``: ``{group: {trait: value}}`` for that metric;
            without: ``{group: {trait: {metric: value}}}`` for every metric.

        Raises:
            KeyError: unknown ``strategy`` or ``by`` column.
        """
        frame = self.to_dataframe("metric")
        if metric_name is not None:
            frame = frame[frame["metric_name"] == metric_name]
            return self._aggregate_by(
                frame, by, "trait_score", strategy, inner="trait_name", **kwargs
            )
        out: dict[object, dict[object, object]] = {}
        for metric, part in frame.groupby("metric_name", sort=False):
            per_metric = self._aggregate_by(
                part, by, "trait_score", strategy, inner="trait_name", **kwargs
            )
            for group, traits in per_metric.items():
                for trait, value in traits.items():
                    # Only metric dicts are stored under a trait here.
                    per_trait = out.setdefault(group, {}).setdefault(trait, {})
                    cast(dict[str, object], per_trait)[str(metric)] = value
        return out
