"""Built-in aggregation strategies and the aggregator registries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from verifleet.schemas import (
    AggregatorRegistry,
    RubricResults,
    TemplateResults,
    list_aggregators,
    register_aggregator,
)
from verifleet.schemas._results.aggregators import (
    CountAggregator,
    FirstAggregator,
    MajorityVoteAggregator,
    MeanAggregator,
    MedianAggregator,
    ModeAggregator,
    default_registry,
)


def s(*values: Any) -> pd.Series:
    return pd.Series(list(values), dtype=object)


def test_mean_counts_booleans_and_skips_nulls() -> None:
    assert MeanAggregator().aggregate(s(True, False, None, True, 4)) == 1.5
    assert MeanAggregator().aggregate(s(None)) is None


def test_mean_of_text_raises_value_error() -> None:
    with pytest.raises(ValueError):
        MeanAggregator().aggregate(s("Factual", "Opinion"))


def test_median() -> None:
    assert MedianAggregator().aggregate(s(1, 9, 2, None)) == 2.0
    assert MedianAggregator().aggregate(s()) is None


def test_mode_breaks_ties_by_first_seen() -> None:
    assert ModeAggregator().aggregate(s("b", "a", "a", "b", "c")) == "b"
    assert ModeAggregator().aggregate(s(3, 3, 1)) == 3
    assert ModeAggregator().aggregate(s(None)) is None


def test_majority_vote_is_strictly_above_threshold() -> None:
    vote = MajorityVoteAggregator()
    assert vote.aggregate(s(True, False)) is False
    assert vote.aggregate(s(True, True, False)) is True
    assert vote.aggregate(s(True, False, False), threshold=0.3) is True
    assert vote.aggregate(s(True, None, None)) is True  # nulls do not vote
    assert vote.aggregate(s(None)) is None


def test_first_returns_first_non_null_as_python_value() -> None:
    value = FirstAggregator().aggregate(pd.Series([None, 2.5, 3.0]))
    assert value == 2.5 and type(value) is float
    assert FirstAggregator().aggregate(s(None, None)) is None


def test_count_keeps_first_seen_order_and_optional_nulls() -> None:
    assert CountAggregator().aggregate(s("x", "y", "x", None)) == {"x": 2, "y": 1}
    assert CountAggregator().aggregate(s("x", None, None), include_none=True) == {"x": 1, None: 2}


def test_registry_rejects_duplicates_and_non_aggregators() -> None:
    registry = AggregatorRegistry({"mean": MeanAggregator()})
    with pytest.raises(ValueError, match="already registered"):
        registry.register("mean", MedianAggregator())
    registry.register("mean", MedianAggregator(), replace=True)
    assert isinstance(registry.get("mean"), MedianAggregator)
    with pytest.raises(TypeError, match="aggregate"):
        registry.register("bad", object())  # type: ignore[arg-type]
    with pytest.raises(KeyError, match=r"unknown aggregator 'nope'; available: \['mean'\]"):
        registry.get("nope")
    registry.unregister("mean")
    assert registry.names() == []


def test_unknown_strategy_on_a_view_raises_key_error() -> None:
    with pytest.raises(KeyError, match="unknown aggregator 'geometric'"):
        RubricResults([]).aggregate_llm_traits(strategy="geometric")


class _Spread:
    def aggregate(self, series: pd.Series, **kwargs: Any) -> float:
        values = series.astype(float)
        return float(values.max() - values.min())


@pytest.fixture
def global_spread() -> Iterator[None]:
    # The default registry is process-wide state; take the entry out again.
    register_aggregator("spread", _Spread())
    yield
    default_registry.unregister("spread")


@pytest.mark.usefixtures("global_spread")
def test_module_level_registration_reaches_new_views_only() -> None:
    assert list_aggregators()[-1] == "spread"
    assert "spread" in TemplateResults([]).list_aggregators()


def test_module_level_registration_does_not_reach_existing_views() -> None:
    view = TemplateResults([])
    register_aggregator("late", _Spread())
    try:
        assert "late" not in view.list_aggregators()
    finally:
        default_registry.unregister("late")
    assert list_aggregators() == ["mean", "median", "mode", "majority_vote", "first", "count"]
