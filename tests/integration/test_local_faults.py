"""A whole local run against an endpoint that injects 500s, 429s and slow replies:
retries with backoff recover what they can, the rest ends as errored results, and
the run finishes with every unit accounted for. The endpoint is the
fault-injecting double of ``bench/endpoint.py``: no real model fails on demand."""

from __future__ import annotations

import pytest
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import ModelConfig, VerificationConfig

pytestmark = pytest.mark.integration

FAST_RETRIES = {"max_attempts": 3, "initial_delay": 0.05, "max_delay": 0.2, "jitter": 0.1}


def _run(faults: dict[str, object], **config: object) -> tuple[list, object]:
    bench, answers = capitals_benchmark(16, wrong_every=0)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, **faults)) as ep:
        model = ModelConfig.parse(f"{ep.base_url}#m")
        cfg = VerificationConfig.build(
            answering_models=[model], parsing_models=[model], retry_policy=FAST_RETRIES, **config
        )
        results = [r for _u, rs in LocalRunner(bench, cfg).run() for r in rs]
        return results, ep.stats()


def test_transient_500s_are_retried_until_they_succeed() -> None:
    results, stats = _run({"fail_first": 2})
    assert len(results) == 16
    assert all(r.metadata.completed_without_errors for r in results)
    assert all(r.template and r.template.verify_result for r in results)
    # Two answer prompts' and two judge prompts' failures per unit, then success.
    assert stats.by_status.get("500", 0) == 16 * 2 * 2
    assert stats.calls == 16 * 2 * 3


def test_exhausted_retries_become_errored_results_in_a_finished_run() -> None:
    results, stats = _run({"rate_429": 0.35, "retry_after_s": 0, "seed": 3})
    assert len(results) == 16, "every unit has a result"
    errored = [r for r in results if not r.metadata.completed_without_errors]
    passed = [r for r in results if r.metadata.completed_without_errors]
    assert errored and passed
    for r in errored:
        assert "429 Too Many Requests after 3 attempts" in (r.metadata.error or "")
    assert stats.sent_429 > len(errored) * 3 - 1


def test_slow_replies_time_out_and_are_recorded() -> None:
    results, _stats = _run({"timeout_rate": 0.7, "slow_ms": 5000, "seed": 11}, request_timeout=0.5)
    assert len(results) == 16
    timed_out = [r for r in results if "timed out" in (r.metadata.error or "").lower()]
    assert timed_out, [r.metadata.error for r in results]
    assert all(not r.metadata.completed_without_errors for r in timed_out)
    assert any(r.metadata.completed_without_errors for r in results)
