"""Aggregation strategies for result views, and the registry that names them.

A strategy turns one pandas Series (the values of one group) into one value. The
built-ins are registered in a module-level default registry; every view starts with a
copy of it, so :func:`register_aggregator` here affects views created afterwards, and
``view.register_aggregator`` affects that view only.
"""

from __future__ import annotations

import typing
from typing import Any, Protocol, runtime_checkable

if typing.TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "AggregatorRegistry",
    "CountAggregator",
    "FirstAggregator",
    "MajorityVoteAggregator",
    "MeanAggregator",
    "MedianAggregator",
    "ModeAggregator",
    "ResultAggregator",
    "default_registry",
    "list_aggregators",
    "register_aggregator",
    "to_native",
]


@runtime_checkable
class ResultAggregator(Protocol):
    """Anything with ``aggregate(series, **kwargs)`` returning one value per group."""

    # Strategy options are whatever the caller passes to the view's aggregate_*
    # method; each strategy declares the ones it reads.
    def aggregate(self, series: pd.Series, **kwargs: Any) -> object:
        """Reduce the values of one group to a single value."""
        ...


def to_native(value: object) -> object:
    """Convert numpy scalars (``np.float64``, ``np.bool_``) to plain Python values."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        return item()
    return value


def _numeric(series: pd.Series) -> pd.Series:
    # Bools in an object column (True/4 mixes) must count as 1/0, not be rejected.
    # Raises ValueError for text, which is a caller error worth surfacing.
    return series.dropna().astype(float)


class MeanAggregator:
    """Arithmetic mean; booleans count as 1/0.

    Raises:
        ValueError: a value is not numeric.
    """

    def aggregate(self, series: pd.Series, **kwargs: object) -> float | None:
        """Mean of the non-null values, or None when there are none."""
        values = _numeric(series)
        return float(values.mean()) if len(values) else None


class MedianAggregator:
    """Median; booleans count as 1/0.

    Raises:
        ValueError: a value is not numeric.
    """

    def aggregate(self, series: pd.Series, **kwargs: object) -> float | None:
        """Median of the non-null values, or None when there are none."""
        values = _numeric(series)
        return float(values.median()) if len(values) else None


class ModeAggregator:
    """Most common value; ties go to the value seen first."""

    def aggregate(self, series: pd.Series, **kwargs: object) -> object:
        """Most common non-null value, or None when there are none."""
        counts: dict[object, int] = {}
        for value in series.dropna():
            key = to_native(value)
            counts[key] = counts.get(key, 0) + 1
        if not counts:
            return None
        return max(counts, key=lambda k: counts[k])


class MajorityVoteAggregator:
    """True when the share of truthy values exceeds ``threshold`` (default 0.5)."""

    def aggregate(self, series: pd.Series, threshold: float = 0.5, **kwargs: Any) -> bool | None:
        """Majority vote over the non-null values, or None when there are none."""
        values = series.dropna()
        if not len(values):
            return None
        share = sum(bool(v) for v in values) / len(values)
        return share > threshold


class FirstAggregator:
    """First non-null value (for fields that are constant within a group)."""

    def aggregate(self, series: pd.Series, **kwargs: object) -> object:
        """The first non-null value, or None when all are null."""
        values = series.dropna()
        return to_native(values.iloc[0]) if len(values) else None


class CountAggregator:
    """Occurrences of each distinct value, in first-seen order."""

    def aggregate(
        self, series: pd.Series, include_none: bool = False, **kwargs: Any
    ) -> dict[object, int]:
        """``{value: count}``; nulls are counted under None only with ``include_none``."""
        counts: dict[object, int] = {}
        for value in series:
            key = None if _is_null(value) else to_native(value)
            if key is None and not include_none:
                continue
            counts[key] = counts.get(key, 0) + 1
        return counts


def _is_null(value: Any) -> bool:
    if value is None:
        return True
    try:
        import pandas as pd

        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists and dicts are values, never null
        return False


class AggregatorRegistry:
    """Named aggregation strategies, in registration order."""

    def __init__(self, aggregators: dict[str, ResultAggregator] | None = None) -> None:
        """Start with a copy of ``aggregators`` (empty by default)."""
        self._aggregators: dict[str, ResultAggregator] = dict(aggregators or {})

    def register(self, name: str, aggregator: ResultAggregator, *, replace: bool = False) -> None:
        """Add a strategy under ``name``.

        Raises:
            ValueError: ``name`` is taken and ``replace`` is False.
            TypeError: ``aggregator`` has no ``aggregate`` method.
        """
        if not isinstance(aggregator, ResultAggregator):
            raise TypeError(f"aggregator {name!r} has no aggregate(series, **kwargs) method")
        if name in self._aggregators and not replace:
            raise ValueError(f"aggregator {name!r} is already registered")
        self._aggregators[name] = aggregator

    def get(self, name: str) -> ResultAggregator:
        """The strategy called ``name``.

        Raises:
            KeyError: no such strategy; the message lists the available ones.
        """
        try:
            return self._aggregators[name]
        except KeyError:
            raise KeyError(
                f"unknown aggregator {name!r}; available: {list(self._aggregators)}"
            ) from None

    def unregister(self, name: str) -> None:
        """Remove the strategy called ``name``.

        Raises:
            KeyError: no such strategy.
        """
        self.get(name)
        del self._aggregators[name]

    def names(self) -> list[str]:
        """Registered names in registration order."""
        return list(self._aggregators)

    def copy(self) -> AggregatorRegistry:
        """An independent registry with the same strategies."""
        return AggregatorRegistry(self._aggregators)

    def __contains__(self, name: object) -> bool:
        return name in self._aggregators


default_registry = AggregatorRegistry(
    {
        "mean": MeanAggregator(),
        "median": MedianAggregator(),
        "mode": ModeAggregator(),
        "majority_vote": MajorityVoteAggregator(),
        "first": FirstAggregator(),
        "count": CountAggregator(),
    }
)


def register_aggregator(name: str, aggregator: ResultAggregator, *, replace: bool = False) -> None:
    """Register a strategy for every view created from now on.

    Raises:
        ValueError: ``name`` is taken and ``replace`` is False.
        TypeError: ``aggregator`` has no ``aggregate`` method.
    """
    default_registry.register(name, aggregator, replace=replace)


def list_aggregators() -> list[str]:
    """Names in the default registry, built-ins first."""
    return default_registry.names()
