"""Behaviour shared by the result views: container protocol, filtering, grouping,
aggregator registries and grouped aggregation over a DataFrame."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Self, overload

import pandas as pd

from .aggregators import AggregatorRegistry, ResultAggregator, default_registry, to_native
from .result import VerificationResult
from .selection import ModelGrouping, group_results, model_key, select_results

__all__ = ["ResultView"]


class ResultView:
    """A read-only window on a list of results with its own aggregator registry.

    Views are cheap: they hold a reference list, never copies of results. Filtering and
    grouping return new views of the same class that keep this view's aggregators.
    """

    def __init__(self, results: Iterable[VerificationResult] = ()) -> None:
        """Wrap ``results`` (materialised into a list)."""
        self.results: list[VerificationResult] = list(results)
        self._registry: AggregatorRegistry = default_registry.copy()

    # --- container protocol ----------------------------------------------------------

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[VerificationResult]:
        return iter(self.results)

    @overload
    def __getitem__(self, index: int) -> VerificationResult: ...
    @overload
    def __getitem__(self, index: slice) -> Self: ...
    def __getitem__(self, index: int | slice) -> VerificationResult | Self:
        """A result by position, or a view of a slice.

        Raises:
            IndexError: position out of range.
        """
        if isinstance(index, slice):
            return self._spawn(self.results[index])
        return self.results[index]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.results)} results)"

    # --- aggregators ------------------------------------------------------------------

    def register_aggregator(
        self, name: str, aggregator: ResultAggregator, *, replace: bool = False
    ) -> None:
        """Make ``aggregator`` available as ``strategy=name`` on this view.

        Raises:
            ValueError: ``name`` is taken and ``replace`` is False.
            TypeError: ``aggregator`` has no ``aggregate`` method.
        """
        self._registry.register(name, aggregator, replace=replace)

    def list_aggregators(self) -> list[str]:
        """Strategy names usable on this view, built-ins first."""
        return self._registry.names()

    # --- selection --------------------------------------------------------------------

    def _spawn(self, results: Iterable[VerificationResult]) -> Self:
        view = type(self)(results)
        view._registry = self._registry.copy()
        return view

    def _select(
        self,
        *,
        question_ids: Collection[str] | None = None,
        answering_models: Collection[str] | None = None,
        parsing_models: Collection[str] | None = None,
        replicates: Collection[int | None] | None = None,
        extra: Callable[[VerificationResult], bool] | None = None,
    ) -> Self:
        return self._spawn(
            select_results(
                self.results,
                question_ids=question_ids,
                answering_models=answering_models,
                parsing_models=parsing_models,
                replicates=replicates,
                extra=extra,
            )
        )

    def group_by_question(self) -> dict[str, Self]:
        """Views per question id, in first-seen order."""
        groups = group_results(self.results, lambda r: r.metadata.question_id)
        return {key: self._spawn(items) for key, items in groups.items()}

    def group_by_model(self, by: ModelGrouping = "answering") -> dict[str, Self]:
        """Views per model display string (answering by default).

        Raises:
            ValueError: ``by`` is not answering, parsing or both.
        """
        groups = group_results(self.results, lambda r: model_key(r, by))
        return {key: self._spawn(items) for key, items in groups.items()}

    def group_by_replicate(self) -> dict[int | None, Self]:
        """Views per replicate number; results without one are under None."""
        groups = group_results(self.results, lambda r: r.metadata.replicate)
        return {key: self._spawn(items) for key, items in groups.items()}

    # --- grouped aggregation ----------------------------------------------------------

    def _aggregate_by(
        self,
        frame: pd.DataFrame,
        by: str,
        value: str,
        strategy: str | ResultAggregator,
        inner: str | None = None,
        **kwargs: Any,
    ) -> dict[Any, Any]:
        """``{group: aggregate}`` or, with ``inner``, ``{group: {inner_key: aggregate}}``.

        ``strategy`` is a registered name or an aggregator. Rows whose group (or
        inner) key is null are skipped; groups are sorted.

        Raises:
            KeyError: unknown ``strategy``, or ``by`` is not a column of the frame.
        """
        aggregator = self._registry.get(strategy) if isinstance(strategy, str) else strategy
        if frame.empty:
            return {}
        if by not in frame.columns:
            raise KeyError(f"cannot group by {by!r}; columns: {list(frame.columns)}")
        keys = [by] if inner is None else [by, inner]
        out: dict[Any, Any] = {}
        for key, group in frame.groupby(keys, sort=True, dropna=True)[value]:
            parts = key if isinstance(key, tuple) else (key,)
            result = to_native(aggregator.aggregate(group, **kwargs))
            if inner is None:
                out[to_native(parts[0])] = result
            else:
                out.setdefault(to_native(parts[0]), {})[to_native(parts[1])] = result
        return out
