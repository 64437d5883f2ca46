"""A call cache that fails is a saving lost, never a verdict.

Against the scripted OpenAI-compatible endpoint (its ``/stats`` counts the calls
that reached it). The broken store is a stand-in on purpose: a real store that
fails on demand (a locked SQLite file, Redis going away mid-call) cannot be had
at the moment of one lookup; the race that locked a real file once made a
reward run score a correct rollout 0.0 (see test_disk_call_cache.py).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.pipeline import PipelineResources, call_cache_failures
from verifleet.pipeline._llm._usage import UsageTracker
from verifleet.schemas import ModelConfig, VerificationConfig

pytestmark = pytest.mark.integration


class BrokenStore:
    """Every read and write fails as a locked SQLite file does."""

    def __init__(self) -> None:
        self.reads = self.writes = 0

    def get(self, key: str) -> bytes | None:
        self.reads += 1
        raise sqlite3.OperationalError("database is locked")

    def put(self, key: str, value: bytes) -> bytes:
        self.writes += 1
        raise sqlite3.OperationalError("database is locked")

    def stats(self) -> dict[str, Any]:
        return {}

    def clear(self) -> int:
        return 0


def test_a_cache_that_fails_to_read_or_write_calls_the_model_instead() -> None:
    store = BrokenStore()
    failures = call_cache_failures()
    with run_endpoint_in_thread(EndpointConfig(answers={})) as ep:
        model = ModelConfig.parse(f"{ep.base_url}#judge")
        config = VerificationConfig.build(
            answering_models=[model], parsing_models=[model], cache=True
        )
        resources = PipelineResources(call_cache=store)
        caller = resources.caller(model, tracker=UsageTracker(), config=config)
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        first = caller.invoke(messages, stage="answer_generation")
        second = caller.invoke(messages, stage="answer_generation")
        calls = ep.stats().calls
    assert first and second  # real replies, not failures
    assert calls == 2  # nothing was kept, so both reached the model
    assert store.reads == 2 and store.writes == 2
    assert call_cache_failures() == failures + 4, "each failed read and write is counted"
