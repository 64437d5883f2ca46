"""A small generated benchmark whose answers a fake endpoint knows, for fleet and
local-mode tests (the endpoint is the fault-injecting test double of bench/)."""

from __future__ import annotations

from typing import Any

from bench._harness import capitals
from verifleet.schemas import Benchmark


def capitals_benchmark(n: int, *, wrong_every: int = 4) -> tuple[Benchmark, dict[str, Any]]:
    """``n`` questions (ids ``q0000``...) and the endpoint's answers map: every
    ``wrong_every``-th question is answered wrongly (the benches' generator)."""
    return capitals(n, wrong_every=wrong_every, id_digits=4)


def comparable(results: Any) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """The deterministic content of results (no timestamps, timings or ids), keyed
    by unit and parsing model."""
    out = {}
    for r in results:
        m = r.metadata
        key = (m.question_id, m.answering.canonical_key, m.parsing.canonical_key, m.replicate)
        t = r.template
        out[key] = (
            m.completed_without_errors,
            t.verify_result if t else None,
            t.parsed_llm_response if t else None,
            t.parsed_gt_response if t else None,
            t.raw_llm_response if t else None,
        )
    return out
