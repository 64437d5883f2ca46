"""Tests of the scripted models (tests/_support/pipeline_fakes.py)."""

from __future__ import annotations

import pytest
from _support.pipeline_fakes import (
    JUDGE,
    ScriptedModels,
    make_config,
)

from verifleet.pipeline import UsageTracker


def test_script_repeats_a_single_reply_and_records_calls() -> None:
    script = ScriptedModels({"judge": {"parsing": [{"gene": "BCL2"}]}})
    caller = script.factory(JUDGE, tracker=UsageTracker(), config=make_config(), deadline=None)
    for _ in range(2):
        assert caller.invoke_json([], stage="parsing", schema={}) == {"gene": "BCL2"}
    assert script.stages_called("judge") == ["parsing", "parsing"]


def test_script_refuses_unexpected_calls() -> None:
    script = ScriptedModels({})
    caller = script.factory(JUDGE, tracker=UsageTracker(), config=make_config(), deadline=None)
    with pytest.raises(AssertionError, match="unexpected call"):
        caller.invoke([], stage="parsing")
