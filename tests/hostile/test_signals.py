"""No process that runs one job's code can signal, re-limit or stop another
job's (issue 34, item 1), and no question's code runs where another
question's ran (item 8).

Each attack of tests/hostile/signals/ escapes the interpreter guard (pydantic's
``main.sys``) and goes for the executor's other processes with ctypes: a class
body that clones with ``CLONE_PARENT`` and SIGSTOPs every process the spawner
starts later (before: the victim job's next units came back "template code ran
too long" or "the executor's spawner failed"), ``verify()`` sending SIGSTOP by
``rt_sigqueueinfo``/``rt_tgsigqueueinfo``, and ``verify()`` lowering the
address space of every other process with ``prlimit64``. The attacker job
runs, then the victim job on the same executor; the attacker's own result says
what each system call gave.

The honest control is ``rlimits-only`` mode (no seccomp: the operator's
downgrade for trusted benchmarks), where the same attack does reach the victim:
the test sees the effect when it is not stopped.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.cross_job import (
    VICTIM_CASES,
    attack_source,
    check_victim,
    mixed_benchmark,
    victim_benchmark,
)
from _support.fleet import Fleet

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import (
    Benchmark,
    ModelConfig,
    Question,
    VerificationConfig,
    VerificationResult,
)
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration

SIGNALS_DIR = Path(__file__).resolve().parent / "signals"

#: Attack file -> what its own result says when the filter refused it.
REFUSED = {
    "clone_parent_sigstop": r"clone=refused errno 1\b",
    "sigqueue_from_verify": r"^(sigqueue|tgsigqueue)=errno 1( (sigqueue|tgsigqueue)=errno 1)*$",
    "prlimit_from_verify": r"^prlimit=PermissionError$",
}

#: ... and when it went through (the control).
WENT_THROUGH = {
    "clone_parent_sigstop": r"clone=\d+",
    "sigqueue_from_verify": r"sigqueue=ok",
    "prlimit_from_verify": r"prlimit=ok",
}


def _config(base_url: str) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{base_url}#judge")],
        max_concurrency=1,
    )


def _attacker(stem: str) -> tuple[Benchmark, dict[str, object]]:
    source = (SIGNALS_DIR / f"{stem}.tpl").read_text()
    question = Question(id=stem, text=f"Attack {stem}?", answer_template=source)
    answers = {question.text: {"text": "attacker", "fields": {"value": "attacker"}}}
    return Benchmark(name="attacker", questions=[question]), answers


def _run(bench: Benchmark, base_url: str, pool: SandboxPool) -> list[VerificationResult]:
    runner = LocalRunner(bench, _config(base_url), resources=PipelineResources(sandbox=pool))
    return [r for _unit, rs in runner.run() for r in rs]


def _report(results: list[VerificationResult]) -> str:
    """What the attacker's verify() reported about its attempts."""
    (result,) = results
    assert result.template is not None, result.metadata.error
    error = result.template.field_verification_error or ""
    found = re.search(r"ATTACK\[(.*)\]", error)
    assert found is not None, error
    return found.group(1)


def _victim_harmed(results: list[VerificationResult]) -> bool:
    by_question = {r.metadata.question_id: r for r in results}
    for qid, (value, _, expected) in VICTIM_CASES.items():
        result = by_question.get(qid)
        if result is None or result.metadata.error is not None or result.template is None:
            return True
        if result.template.verify_result is not expected:
            return True
        if result.template.parsed_llm_response != {"value": value}:
            return True
    return False


def _attack_then_victim(
    stem: str, mode: str, fresh_state: str, victim_runs: int = 1
) -> tuple[str, list[VerificationResult], int]:
    """The attacker's report, the victim's results after it, and how many times
    the executor had to be replaced meanwhile.

    With ``victim_runs`` above 1 the victim job runs again (while the attack
    lives) until it is harmed: the results are those of the last run."""
    attacker, answers = _attacker(stem)
    answers.update(victim_benchmark()[1])
    # One executor, so that the attacker's and the victim's processes share it
    # as an unlucky schedule would; a short timeout, so that a stopped victim
    # fails in seconds.
    settings = SandboxSettings(mode=mode, pool_size=1, timeout=3, fresh_state=fresh_state)  # type: ignore[arg-type]
    pool = SandboxPool(settings)
    report = ""
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as endpoint:
            report = _report(_run(attacker, endpoint.base_url, pool))
            for _ in range(victim_runs):
                after = _run(victim_benchmark()[0], endpoint.base_url, pool)
                replaced = pool.stats().replacements
                if _victim_harmed(after) or replaced > 0:
                    break
    finally:
        pool.close()
        _kill_escaped_clone(report)
    return report, after, replaced


def _kill_escaped_clone(report: str) -> None:
    """Without seccomp the clone escaped its template process; without a pid
    namespace it is a process of this machine: end it (it also ends itself
    once its executor is gone)."""
    found = re.search(r"clone=(\d+)", report)
    if found is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(found.group(1)), signal.SIGKILL)


@pytest.mark.parametrize("stem", sorted(REFUSED))
@pytest.mark.parametrize("mode", ["strict", "seccomp"])
def test_one_jobs_code_cannot_signal_or_relimit_another_jobs_processes(
    stem: str, mode: str
) -> None:
    report, after, replaced = _attack_then_victim(stem, mode, "template")
    assert re.search(REFUSED[stem], report), report
    check_victim(after)
    assert replaced == 0


def test_a_clone_parent_attack_with_processes_per_call_is_refused_too() -> None:
    # With a process per call the template process may fork, but only as
    # fork() does: a CLONE_PARENT clone is still refused.
    report, after, replaced = _attack_then_victim("clone_parent_sigstop", "strict", "call")
    assert re.search(REFUSED["clone_parent_sigstop"], report), report
    check_victim(after)
    assert replaced == 0


@pytest.mark.parametrize("stem", sorted(REFUSED))
def test_control_without_seccomp_the_same_attack_reaches_the_victim(stem: str) -> None:
    # rlimits-only: no seccomp. The attack goes through and the victim job
    # after it is harmed, or its executor had to be replaced under it (a
    # stopped spawner: the pool retries the victim's calls on a new one):
    # what the tests above would see. The clone finds its victims by scanning
    # /proc: on a busy machine a victim job may finish before a scan reaches
    # it, so the victim job runs again (up to 5 times) while the clone lives.
    report, after, replaced = _attack_then_victim(stem, "rlimits-only", "template", victim_runs=5)
    assert re.search(WENT_THROUGH[stem], report), report
    assert _victim_harmed(after) or replaced > 0


@pytest.fixture
def endpoint() -> Iterator[str]:
    answers: dict[str, object] = dict(victim_benchmark()[1])
    for stem in REFUSED:
        answers.update(_attacker(stem)[1])
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        yield ep.base_url


def _fleet_job(
    bench: Benchmark, base_url: str, redis_url: str, queue: str
) -> list[VerificationResult]:
    job = Job.submit(bench, _config(base_url), redis_url, queue=queue)
    assert job.wait(timeout=240).status == JobStatus.DONE
    return list(job.result_set())


def test_attacks_on_a_two_worker_fleet_leave_the_next_job_alone(
    fleet: Fleet, redis_url: str, endpoint: str
) -> None:
    # Strict mode, default settings but one executor per worker process and a
    # short timeout: each worker takes its own queue, so that each surely runs
    # the attacker's jobs and then the victim's on the same executor.
    env = {
        "VERIFLEET_SANDBOX": "strict",
        "VERIFLEET_SANDBOX_POOL": "1",
        "VERIFLEET_SANDBOX_TIMEOUT": "3",
    }
    workers = ("w1", "w2")
    for name in workers:
        fleet.start_worker(name, concurrency=1, queues=name, **env)
    fleet.wait_ready(list(workers))
    for name in workers:
        for stem in sorted(REFUSED):
            report = _report(_fleet_job(_attacker(stem)[0], endpoint, redis_url, name))
            assert re.search(REFUSED[stem], report), report
        check_victim(_fleet_job(victim_benchmark()[0], endpoint, redis_url, name))


def _mixed_job_results(settings: SandboxSettings) -> list[VerificationResult]:
    """The victim questions' results of the mixed benchmark on one executor."""
    bench, answers = mixed_benchmark()
    pool = SandboxPool(settings)
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as endpoint:
            results = _run(bench, endpoint.base_url, pool)
    finally:
        pool.close()
    return [r for r in results if r.metadata.question_id in VICTIM_CASES]


def _settings_from_env(mode: str) -> SandboxSettings:
    """What a worker or ``verifleet run`` starts with in ``mode``, as the
    environment says, with one executor (so that every question of the job
    shares it) and a short timeout."""
    return SandboxSettings.from_env(mode).model_copy(update={"pool_size": 1, "timeout": 5.0})


@pytest.mark.parametrize("mode", ["strict", "seccomp", "rlimits-only"])
def test_one_question_cannot_touch_another_questions_verdict_by_default(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing in the environment, as a worker or `verifleet run` starts: a
    # process per job and template.
    monkeypatch.delenv("VERIFLEET_SANDBOX_FRESH", raising=False)
    settings = _settings_from_env(mode)
    assert settings.fresh_state == SandboxSettings().fresh_state == "template"
    check_victim(_mixed_job_results(settings))


def test_control_questions_sharing_a_process_do_touch_each_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The opt-out (`VERIFLEET_SANDBOX_FRESH=job`: a process per job): the
    # poisoners' code ran where the victim questions run, and the wrong answer
    # passes. What the test above would see without a process per question.
    monkeypatch.setenv("VERIFLEET_SANDBOX_FRESH", "job")
    settings = _settings_from_env("strict")
    assert settings.fresh_state == "job"
    assert _victim_harmed(_mixed_job_results(settings))


def test_one_question_cannot_touch_another_questions_verdict_on_a_fleet(
    fleet: Fleet, redis_url: str
) -> None:
    # Two workers with a queue each and one executor: w1 as deployed (nothing
    # set: a process per job and template), w2 with the opt-out
    # (`VERIFLEET_SANDBOX_FRESH=job`) as the control, where the same job's
    # poisoners do reach its victims. One unit at a time: the poisoners run first.
    bench, answers = mixed_benchmark()
    env = {"VERIFLEET_SANDBOX": "strict", "VERIFLEET_SANDBOX_POOL": "1"}
    fleet.start_worker("w1", concurrency=1, queues="w1", **env)
    fleet.start_worker("w2", concurrency=1, queues="w2", VERIFLEET_SANDBOX_FRESH="job", **env)
    fleet.wait_ready(["w1", "w2"])
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        isolated = _fleet_job(bench, ep.base_url, redis_url, "w1")
        shared = _fleet_job(bench, ep.base_url, redis_url, "w2")
    check_victim([r for r in isolated if r.metadata.question_id in VICTIM_CASES])
    assert _victim_harmed([r for r in shared if r.metadata.question_id in VICTIM_CASES])


def test_attack_sources_are_the_ones_replayed() -> None:
    # The mixed job replays the cross-job corpus's poisoners, unchanged.
    bench, _ = mixed_benchmark()
    sources = {q.id: q.answer_template for q in bench.questions}
    assert sources["poison_builtins"] == attack_source("poison_builtins")
