"""Filtering and grouping of results, shared by the result set and every view."""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable
from typing import TYPE_CHECKING, Literal, Self, TypeVar, overload

from .._identity import ModelIdentity
from .result import VerificationResult

__all__ = ["ModelGrouping", "ResultCollection", "group_results", "model_key", "select_results"]

K = TypeVar("K", bound=Hashable)
ModelGrouping = Literal["answering", "parsing", "both"]


def _model_in(identity: ModelIdentity, wanted: Collection[str]) -> bool:
    # Display strings are the documented key; bare model names are accepted too
    # because that is what users type.
    return identity.display_string in wanted or identity.model_name in wanted


def select_results(
    results: Iterable[VerificationResult],
    *,
    question_ids: Collection[str] | None = None,
    answering_models: Collection[str] | None = None,
    parsing_models: Collection[str] | None = None,
    replicates: Collection[int | None] | None = None,
    completed_only: bool = False,
    extra: Callable[[VerificationResult], bool] | None = None,
) -> list[VerificationResult]:
    """Results matching every given criterion, in their original order.

    A criterion left at None does not filter; an empty collection matches nothing.
    Models match by display string (``langchain:gpt-4.1-mini``) or bare model name.
    """
    qids = set(question_ids) if question_ids is not None else None
    reps = set(replicates) if replicates is not None else None
    answering = set(answering_models) if answering_models is not None else None
    parsing = set(parsing_models) if parsing_models is not None else None
    selected: list[VerificationResult] = []
    for result in results:
        meta = result.metadata
        if qids is not None and meta.question_id not in qids:
            continue
        if reps is not None and meta.replicate not in reps:
            continue
        if answering is not None and not _model_in(meta.answering, answering):
            continue
        if parsing is not None and not _model_in(meta.parsing, parsing):
            continue
        if completed_only and not meta.completed_without_errors:
            continue
        if extra is not None and not extra(result):
            continue
        selected.append(result)
    return selected


def model_key(result: VerificationResult, by: ModelGrouping = "answering") -> str:
    """Grouping key of a result's models: display strings, ``"<answering> / <parsing>"``.

    Raises:
        ValueError: ``by`` is not answering, parsing or both.
    """
    meta = result.metadata
    if by == "answering":
        return meta.answering_model
    if by == "parsing":
        return meta.parsing_model
    if by == "both":
        return f"{meta.answering_model} / {meta.parsing_model}"
    raise ValueError(f"by must be 'answering', 'parsing' or 'both', not {by!r}")


def group_results(
    results: Iterable[VerificationResult], key: Callable[[VerificationResult], K]
) -> dict[K, list[VerificationResult]]:
    """Results grouped by ``key`` in one pass; groups keep first-seen order."""
    groups: dict[K, list[VerificationResult]] = {}
    for result in results:
        groups.setdefault(key(result), []).append(result)
    return groups


class ResultCollection:
    """Length, indexing, selection and grouping for a class holding ``results``.

    The result set and every view inherit it so that each of them answers the same way;
    a subclass says how to build a subset of itself in :meth:`_spawn`, and every method
    here that returns results returns such a subset (of the subclass's own type).
    """

    if TYPE_CHECKING:
        # Declared for the type checker only: the result set is a pydantic model whose
        # own field declares it, and a class annotation here would interfere with that.
        results: list[VerificationResult]

    def _spawn(self, results: list[VerificationResult]) -> Self:
        """A new collection of this type over ``results``.

        Raises:
            NotImplementedError: the subclass does not say how.
        """
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.results)

    @overload
    def __getitem__(self, index: int) -> VerificationResult: ...
    @overload
    def __getitem__(self, index: slice) -> Self: ...
    def __getitem__(self, index: int | slice) -> VerificationResult | Self:
        """A result by position, or a collection of a slice.

        Raises:
            IndexError: position out of range.
        """
        if isinstance(index, slice):
            return self._spawn(self.results[index])
        return self.results[index]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.results)} results)"

    def _select(
        self,
        *,
        question_ids: Collection[str] | None = None,
        answering_models: Collection[str] | None = None,
        parsing_models: Collection[str] | None = None,
        replicates: Collection[int | None] | None = None,
        completed_only: bool = False,
        extra: Callable[[VerificationResult], bool] | None = None,
    ) -> Self:
        # The public filter methods differ only in their extra criteria; see select_results.
        return self._spawn(
            select_results(
                self.results,
                question_ids=question_ids,
                answering_models=answering_models,
                parsing_models=parsing_models,
                replicates=replicates,
                completed_only=completed_only,
                extra=extra,
            )
        )

    def _group(self, key: Callable[[VerificationResult], K]) -> dict[K, Self]:
        return {k: self._spawn(items) for k, items in group_results(self.results, key).items()}

    def group_by_question(self) -> dict[str, Self]:
        """Subsets per question id, in first-seen order."""
        return self._group(lambda r: r.metadata.question_id)

    def group_by_model(self, by: ModelGrouping = "answering") -> dict[str, Self]:
        """Subsets per model display string (answering model by default), in
        first-seen order.

        Raises:
            ValueError: ``by`` is not answering, parsing or both.
        """
        return self._group(lambda r: model_key(r, by))

    def group_by_replicate(self) -> dict[int | None, Self]:
        """Subsets per replicate number, in first-seen order; results without one are
        under None."""
        return self._group(lambda r: r.metadata.replicate)
