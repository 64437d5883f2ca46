"""Token counts and costs read from endpoints are clamped (issue 34, item 4):
finite, non-negative integers and amounts, whatever a reply claims."""

from __future__ import annotations

import math

import pytest

from verifleet.pipeline import UsageTracker
from verifleet.pipeline._llm._gate import usage_tokens
from verifleet.schemas import MAX_TOKENS, ModelPrice, PriceTable, token_count, usd_amount

PRICES = PriceTable.model_validate({"judge": {"input": 1.0, "output": 2.0}})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (12, 12),
        (12.9, 12),
        (0, 0),
        (-10_000_000, 0),
        (math.nan, 0),
        (-math.inf, 0),
        (math.inf, MAX_TOKENS),
        (10**30, MAX_TOKENS),
        ("-1e9", 0),
        ("12", 0),
        (None, 0),
        (True, 0),
        ([5], 0),
    ],
)
def test_token_count(value: object, expected: int) -> None:
    assert token_count(value) == expected
    assert isinstance(token_count(value), int)


def test_usd_amount() -> None:
    assert usd_amount(0.25) == 0.25
    assert [usd_amount(v) for v in (-1.0, math.nan, math.inf, "1", None, True)] == [0.0] * 6


def test_a_lying_usage_block_adds_nothing_and_costs_nothing_negative() -> None:
    tracker = UsageTracker(pricing=PRICES)
    tracker.record_usage("parsing", model="judge", usage={"input_tokens": 100, "output_tokens": 10})
    honest = tracker.summary()
    assert honest is not None and honest["total"]["cost_usd"] == pytest.approx(120 / 1e6)
    for lie in (
        {"input_tokens": -10_000_000, "output_tokens": 0},
        {"input_tokens": math.nan, "output_tokens": "9", "total_tokens": -5},
        {"input_tokens": 0, "output_tokens": -1, "input_token_details": {"cache_read": -7}},
    ):
        tracker.record_usage("parsing", model="judge", usage=lie)
    # merge_stage (cache hits, shared answers) and an explicit negative cost too.
    tracker.merge_stage("parsing", {"model": "judge", "input_tokens": -5, "cost_usd": -3.0})
    tracker.record("parsing", model="judge", cost_usd=-1.0)
    total = tracker.summary()["total"]  # type: ignore[index]
    # The control above: the honest call alone is what was spent and counted.
    assert total["cost_usd"] == pytest.approx(honest["total"]["cost_usd"])
    assert (total["input_tokens"], total["output_tokens"]) == (100, 10)
    assert total["total_tokens"] == 110


def test_prices_and_the_limiter_never_go_negative() -> None:
    price = ModelPrice(input=1.0, output=2.0)
    assert price.cost(-10_000_000, 5) == pytest.approx(10 / 1e6)
    assert price.cost(100, 0, cached_input_tokens=-50) == pytest.approx(100 / 1e6)
    assert usage_tokens({"prompt_tokens": -10_000_000, "completion_tokens": 7}) == 7
    assert usage_tokens({"input_tokens": math.nan, "output_tokens": None}) == 0
    assert usage_tokens({"prompt_tokens": 3, "completion_tokens": 4}) == 7
