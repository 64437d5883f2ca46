"""Poison units on a real fleet: a unit whose run freezes its worker process (a
thread stuck in C code with the GIL held: no heartbeat) or kills it (as the OOM
killer would) is tried three times (after its first try, alone in the process
that runs it, so that a death is its own doing), then fails with an error that
says so; units that only shared a process with it are never quarantined; a
second tenant's job queued behind it finishes, and the frozen or killed worker
processes are replaced by their supervisors with nothing lost or duplicated.

No real template can freeze or kill a worker any more (template code runs in
sandbox executors and the host interprets nothing a template makes), so the
faults are injected with the workers' test-only hook (``VERIFLEET_TEST_FAULT``,
see ``verifleet.workers._quarantine.fault_for_tests``): it does in the worker
exactly what the judge-schema regex of issue 20 did (``re`` backtracking with
the GIL held) or what the OOM killer does (SIGKILL).
"""

from __future__ import annotations

import time

import pytest
from _support.fleet import Fleet
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import Benchmark, ModelConfig, VerificationConfig
from verifleet.store import JobStatus, expand_units

pytestmark = pytest.mark.integration

FAULTS = {
    # Supervisors replace a worker silent for 4 s; a fault hits one question of
    # the first tenant's job each.
    "VERIFLEET_TEST_FAULT": "freeze:freezes,kill:kills",
    "VERIFLEET_STUCK_AFTER": "4",
    "VERIFLEET_UNIT_DEADLINE": "30",
    # This test is about each unit's quarantine: the per-job breaker, which
    # would stop a job whose units kill workers this often, is
    # tests/integration/test_worker_breaker.py's.
    "VERIFLEET_JOB_KILLS": "1000",
}


def _expected_keys(bench: Benchmark, config: VerificationConfig, job_id: str) -> set[str]:
    return {
        key
        for unit in expand_units(bench, config)
        for key in unit.result_keys(config.parsing_models, job_id)
    }


def _stored_keys(job: Job) -> list[str]:
    return [k.decode() for k in job.store.client.hkeys(job.store.keys(job.job_id).results)]


# Every fill packed into messages of four units taken up two at a time: a poison
# unit's death takes its step-mate's start along (and a finished step-mate's
# results, when they were still to be written with the next step).
PACKED = {
    "VERIFLEET_FEED_SPREAD": "1",
    "VERIFLEET_UNITS_PER_MESSAGE": "4",
    "VERIFLEET_UNITS_PER_STEP": "2",
}


@pytest.mark.parametrize("packing", ["a unit per message", "four units per message"])
def test_units_that_freeze_or_kill_their_worker_are_quarantined_after_three_tries(
    fleet: Fleet, redis_url: str, packing: str
) -> None:
    poisoned, answers = capitals_benchmark(4)
    questions = list(poisoned.questions)
    questions[1] = questions[1].model_copy(update={"id": "freezes"})
    questions[2] = questions[2].model_copy(update={"id": "kills"})
    poisoned = poisoned.model_copy(update={"questions": questions})
    tenant, tenant_answers = capitals_benchmark(6)
    endpoint = EndpointConfig(answers=answers | tenant_answers, latency_ms=50)
    with run_endpoint_in_thread(endpoint) as ep:
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
        )
        env = {**FAULTS, **(PACKED if packing == "four units per message" else {})}
        fleet.start_worker("w1", concurrency=2, **env)
        fleet.start_worker("w2", concurrency=2, **env)
        fleet.wait_ready(["w1", "w2"])
        first = Job.submit(poisoned, config, redis_url)
        second = Job.submit(tenant, config, redis_url)
        started = time.monotonic()
        assert second.wait(timeout=400).status == JobStatus.DONE
        assert first.wait(timeout=max(30.0, 400 - (time.monotonic() - started))).status == (
            JobStatus.DONE
        )

    # The second tenant's job: every result once, none failed.
    stored = _stored_keys(second)
    assert len(stored) == len(set(stored)) == 6
    assert set(stored) == _expected_keys(tenant, config, second.job_id)
    assert second.progress().failed_units == 0

    # The first job: every result once; the two poison units failed, each
    # counted once, with an error that says what happened; the others are fine.
    stored = _stored_keys(first)
    assert len(stored) == len(set(stored)) == 4
    assert set(stored) == _expected_keys(poisoned, config, first.job_id)
    progress = first.progress()
    assert progress.failed_units == 2 and progress.pairs[0].errors == 2
    by_id = {r.metadata.question_id: r for r in first.iter_results()}
    for poison in ("freezes", "kills"):
        result = by_id[poison]
        assert result.metadata.completed_without_errors is False
        assert result.metadata.error is not None
        assert "quarantined" in result.metadata.error
        assert "started 3 times" in result.metadata.error
    for fine in ("q0000", "q0003"):
        assert by_id[fine].metadata.completed_without_errors is True
    # Tried three times, never a fourth: a first try beside other units, then
    # two alone in their process; the quarantining start is the third lone one.
    # (Its plain start count can be higher: a death while it waited to run alone
    # counts a start, never a lone run.)
    attempts = first.store.client.hgetall(first.store.keys(first.job_id).attempts)
    units = {u.question.id: u.key(first.job_id) for u in expand_units(poisoned, config)}
    for poison in ("freezes", "kills"):
        assert int(attempts[f"{units[poison]}#alone".encode()]) == 3
        assert int(attempts[units[poison].encode()]) >= 3
    # The tenant's units and the first job's good ones never ran alone more
    # than once (each at most after one death it merely shared).
    for field, count in attempts.items():
        if field.endswith(b"#alone") and not any(
            field.startswith(units[p].encode()) for p in ("freezes", "kills")
        ):
            assert int(count) == 1, (field, count)

    # Each freeze and each kill cost a worker process, which its supervisor
    # replaced. (A poison unit's try can also end with a process the other one
    # froze or killed, when one process held both: at most three of each.)
    logs = fleet.log("w1") + fleet.log("w2")
    assert ("Task verifleet.run_units[" in logs) is (packing == "four units per message")
    assert 1 <= logs.count("sent no heartbeat") <= 3, logs[-4000:]
    assert 1 <= logs.count("was killed by signal 9") <= 3, logs[-4000:]
    for name in ("w1", "w2"):
        assert fleet.workers[name].poll() is None  # the supervisors still run
