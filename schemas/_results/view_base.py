"""Behaviour shared by the result views: per-result access to a section, filtering and
grouping (from :class:`ResultCollection`), aggregator registries and grouped
aggregation over a DataFrame."""

from __future__ import annotations

import typing
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Self, TypeVar, overload

from .aggregators import AggregatorRegistry, ResultAggregator, default_registry, to_native
from .result import VerificationResult
from .selection import ResultCollection

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = ["ResultView"]

_Section = TypeVar("_Section")
_Value = TypeVar("_Value")


def _pick_items(data: Mapping[str, _Value] | None, name: str | None) -> dict[str, _Value] | None:
    # None leaves the result out: nothing recorded, or not the item asked for.
    if not data:
        return None
    if name is None:
        return dict(data)
    return {name: data[name]} if name in data else None


class ResultView(ResultCollection):
    """A read-only window on a list of results with its own aggregator registry.

    Views are cheap: they hold a reference list, never copies of results. Filtering and
    grouping return new views of the same class that keep this view's aggregators.
    """

    def __init__(self, results: Iterable[VerificationResult] = ()) -> None:
        """Wrap ``results`` (materialised into a list)."""
        self.results: list[VerificationResult] = list(results)
        self._registry: AggregatorRegistry = default_registry.copy()

    def __iter__(self) -> Iterator[VerificationResult]:
        return iter(self.results)

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

    def filter(
        self,
        question_ids: Collection[str] | None = None,
        answering_models: Collection[str] | None = None,
        parsing_models: Collection[str] | None = None,
        replicates: Collection[int | None] | None = None,
    ) -> Self:
        """A view of the matching results (criteria left at None do not filter).

        An empty collection matches nothing; models match by display string or bare
        model name.
        """
        return self._select(
            question_ids=question_ids,
            answering_models=answering_models,
            parsing_models=parsing_models,
            replicates=replicates,
        )

    # --- per-result access ------------------------------------------------------------

    def _results_with(
        self, section: Callable[[VerificationResult], object | None]
    ) -> list[VerificationResult]:
        """Results for which ``section`` gives a section (it returns None for the rest)."""
        return [r for r in self.results if section(r) is not None]

    def _sections(
        self,
        section: Callable[[VerificationResult], _Section | None],
        question_id: str | None,
    ) -> list[tuple[str, _Section]]:
        """``(result_id, section)`` of each result for which ``section`` gives one,
        only of ``question_id`` unless it is None."""
        out: list[tuple[str, _Section]] = []
        for result in self.results:
            if question_id is not None and result.metadata.question_id != question_id:
                continue
            found = section(result)
            if found is not None:
                out.append((result.metadata.result_id, found))
        return out

    def _per_item(
        self,
        section: Callable[[VerificationResult], _Section | None],
        field: Callable[[_Section], Mapping[str, _Value] | None],
        question_id: str | None,
        item_name: str | None,
    ) -> dict[str, dict[str, _Value]]:
        """``{result_id: {item: value}}`` from the mapping ``field`` of each section.

        With ``item_name`` only that item is kept; a result whose mapping is empty (or
        lacks ``item_name``) is left out.
        """
        out: dict[str, dict[str, _Value]] = {}
        for result_id, found in self._sections(section, question_id):
            picked = _pick_items(field(found), item_name)
            if picked is not None:
                out[result_id] = picked
        return out

    # --- grouped aggregation ----------------------------------------------------------

    @overload
    def _aggregate_by(
        self,
        frame: pd.DataFrame,
        by: str,
        value: str,
        strategy: str | ResultAggregator,
        inner: None = None,
        **kwargs: object,
    ) -> dict[object, object]: ...

    @overload
    def _aggregate_by(
        self,
        frame: pd.DataFrame,
        by: str,
        value: str,
        strategy: str | ResultAggregator,
        inner: str,
        **kwargs: object,
    ) -> dict[object, dict[object, object]]: ...

    def _aggregate_by(
        self,
        frame: pd.DataFrame,
        by: str,
        value: str,
        strategy: str | ResultAggregator,
        inner: str | None = None,
        **kwargs: object,
    ) -> dict[object, object] | dict[object, dict[object, object]]:
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
        flat: dict[object, object] = {}
        nested: dict[object, dict[object, object]] = {}
        for key, group in frame.groupby(keys, sort=True, dropna=True)[value]:
            parts = key if isinstance(key, tuple) else (key,)
            result = to_native(aggregator.aggregate(group, **kwargs))
            if inner is None:
                flat[to_native(parts[0])] = result
            else:
                nested.setdefault(to_native(parts[0]), {})[to_native(parts[1])] = result
        return flat if inner is None else nested
