"""The fleet's cost ledger counts no negative or non-finite amount (issue 34,
item 4): a unit whose results claim a negative cost cannot reopen a budget."""

from __future__ import annotations

import math

import pytest
import redis

from verifleet.store import CostLedger

pytestmark = pytest.mark.integration


def test_negative_costs_do_not_reopen_a_budget(redis_url: str) -> None:
    ledger = CostLedger(redis.Redis.from_url(redis_url), prefix="vfclamp")
    assert ledger.add("j", "u1", {"judge": 0.04, "answerer": 0.02})
    assert not ledger.admit("j", "u2", 0.05), "the control: $0.06 spent reaches $0.05"
    ledger.add("j", "u3", {"judge": -100_000.0, "answerer": math.nan}, cache_hits=-4)
    ledger.add("j", "u4", {"judge": -math.inf})
    cost = ledger.read("j")
    assert cost.total_usd == pytest.approx(0.06)
    assert cost.models == {"judge": pytest.approx(0.04), "answerer": pytest.approx(0.02)}
    assert cost.cache_hits == 0 and cost.units == 3
    assert not ledger.admit("j", "u5", 0.05)
