"""Workers come back and jobs that kill them stop (issue 34, item 3), on real
Redis and real supervised Celery workers.

- Units that send SIGTERM to their own Celery process (a warm shutdown: the
  process exits 0) no longer stop the fleet: the supervisor restarts a process
  that ends without being asked to, and another tenant's job completes.
  Control: the same units on a worker without a supervisor leave it down.
- A job whose units keep SIGKILLing their worker is stopped by the per-job
  breaker (``VERIFLEET_JOB_KILLS``): status ``failed``, the error in
  ``verifleet status``, ``verifleet results`` and in the tripping unit's result;
  another tenant's job completes. Control: with a limit no job reaches, the same
  job runs to its end with every poison unit quarantined one by one.

The faults come from the workers' test-only hook (``VERIFLEET_TEST_FAULT``, see
``verifleet.workers._quarantine.fault_for_tests``): in seccomp mode template
code can no longer signal its worker (``tests/hostile/test_seccomp_reach.py``),
so the hook stands in for whatever would next.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.sandbox import SandboxSettings, reset_default_pool
from verifleet.schemas import Benchmark, ModelConfig, VerificationConfig
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration

POISON = ["p1", "p2", "p3", "p4"]

#: The docker-compose and Kubernetes workers' sandbox mode.
SECCOMP = {"VERIFLEET_SANDBOX": "seccomp"}


@pytest.fixture(autouse=True)
def _seccomp_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Submission validates templates in this process's sandbox: the same mode."""
    monkeypatch.setenv("VERIFLEET_SANDBOX", "seccomp")
    reset_default_pool(SandboxSettings.from_env())
    yield
    monkeypatch.delenv("VERIFLEET_SANDBOX")
    reset_default_pool(SandboxSettings.from_env()).close()


def _jobs(fault: str) -> tuple[Benchmark, Benchmark, dict[str, object], str]:
    """The attacker's four poison questions, the tenant's six, the endpoint's
    answers, and the fault setting that makes each poison unit do ``fault``."""
    attacker, answers = capitals_benchmark(4)
    questions = [
        q.model_copy(update={"id": qid}) for q, qid in zip(attacker.questions, POISON, strict=True)
    ]
    attacker = attacker.model_copy(update={"questions": questions})
    tenant, tenant_answers = capitals_benchmark(6)
    faults = ",".join(f"{fault}:{qid}" for qid in POISON)
    return attacker, tenant, answers | tenant_answers, faults


def _config(base_url: str) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{base_url}#judge")],
    )


def _tenant_complete(tenant: Job) -> None:
    progress = tenant.wait(timeout=600)
    assert progress.status == JobStatus.DONE and progress.error == ""
    assert progress.done_units == progress.total_units == 6
    assert progress.failed_units == 0


def test_units_that_sigterm_their_worker_do_not_stop_the_fleet(
    fleet: Fleet, redis_url: str
) -> None:
    attacker_bench, tenant_bench, answers, faults = _jobs("term")
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=50)) as ep:
        config = _config(ep.base_url)
        env = {**SECCOMP, "VERIFLEET_TEST_FAULT": faults}
        fleet.start_worker("w1", concurrency=2, **env)
        fleet.start_worker("w2", concurrency=2, **env)
        fleet.wait_ready(["w1", "w2"])
        attacker = Job.submit(attacker_bench, config, redis_url)
        tenant = Job.submit(tenant_bench, config, redis_url)
        _tenant_complete(tenant)
        # A warm shutdown lets the signalling unit finish: the attacker's job ends too.
        assert attacker.wait(timeout=600).status == JobStatus.DONE
    logs = fleet.log("w1") + fleet.log("w2")
    # The effect happened (Celery processes shut down warmly and exited 0) and
    # their supervisors started new ones.
    assert logs.count("exited with status 0 without being asked to") >= 1, logs[-4000:]
    for name in ("w1", "w2"):
        assert fleet.workers[name].poll() is None


def test_control_an_unsupervised_worker_stays_down_after_a_stray_sigterm(
    fleet: Fleet, redis_url: str
) -> None:
    attacker_bench, _tenant_bench, answers, faults = _jobs("term")
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=50)) as ep:
        # --no-supervise: the Celery worker alone, as a supervisor that does not
        # restart a process exiting 0 left it.
        unsupervised = fleet.start_worker(
            "w1", concurrency=2, options=("--no-supervise",), VERIFLEET_TEST_FAULT=faults, **SECCOMP
        )
        fleet.wait_ready(["w1"])
        Job.submit(attacker_bench, _config(ep.base_url), redis_url)
        assert unsupervised.wait(timeout=300) == 0  # down for good, status 0


def test_a_job_whose_units_keep_killing_workers_is_stopped_by_the_breaker(
    fleet: Fleet, redis_url: str
) -> None:
    attacker, _tenant, logs = _run_killers(fleet, redis_url, job_kills=None)
    progress = attacker.progress()
    assert progress.status == JobStatus.FAILED
    assert "job stopped by the fleet" in progress.error
    assert "VERIFLEET_JOB_KILLS" in progress.error
    # The error is in the unit's result that tripped the breaker...
    errors = [r.metadata.error or "" for r in attacker.iter_results()]
    assert any("job stopped by the fleet" in e for e in errors), errors
    # ... and in what the commands print.
    env = dict(os.environ, VERIFLEET_REDIS_URL=redis_url)
    status = run_cli("status", attacker.job_id, env=env)
    assert status.returncode == 0 and "[failed]" in status.stdout
    assert "job stopped by the fleet" in " ".join(status.stdout.split())
    out = fleet.logdir / "attacker.jsonl"
    results = run_cli("results", attacker.job_id, "--out", str(out), env=env)
    assert results.returncode == 0, results.stderr
    assert f"job {attacker.job_id} failed: job stopped by the fleet" in results.stderr
    print(f"breaker on: {logs.count('was killed by signal 9')} worker processes killed")


def test_control_without_a_reachable_limit_the_killing_job_runs_to_its_end(
    fleet: Fleet, redis_url: str
) -> None:
    attacker, _tenant, logs = _run_killers(fleet, redis_url, job_kills=1000)
    progress = attacker.progress()
    assert progress.status == JobStatus.DONE and progress.error == ""
    errors = [r.metadata.error or "" for r in attacker.iter_results()]
    assert len(errors) == 4 and all("quarantined" in e for e in errors), errors
    print(f"breaker off: {logs.count('was killed by signal 9')} worker processes killed")


def _run_killers(fleet: Fleet, redis_url: str, *, job_kills: int | None) -> tuple[Job, Job, str]:
    """The killing job, then the tenant's, on two supervised workers; returns
    both once they ended, and the workers' logs."""
    attacker_bench, tenant_bench, answers, faults = _jobs("kill")
    env = {**SECCOMP, "VERIFLEET_TEST_FAULT": faults}
    if job_kills is not None:
        env["VERIFLEET_JOB_KILLS"] = str(job_kills)
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=50)) as ep:
        config = _config(ep.base_url)
        fleet.start_worker("w1", concurrency=2, **env)
        fleet.start_worker("w2", concurrency=2, **env)
        fleet.wait_ready(["w1", "w2"])
        attacker = Job.submit(attacker_bench, config, redis_url)
        tenant = Job.submit(tenant_bench, config, redis_url)
        _tenant_complete(tenant)
        assert attacker.wait(timeout=600).finished
    for name in ("w1", "w2"):
        assert fleet.workers[name].poll() is None  # the supervisors still run
    return attacker, tenant, fleet.log("w1") + fleet.log("w2")
