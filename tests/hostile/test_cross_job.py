"""One benchmark cannot touch another's verdicts or data (issue: "One benchmark
cannot touch another's verdicts, data or workers").

Each test replays the attacks of tests/hostile/cross_job/ between a victim and
an attacker sharing executors: the victim runs alone, then the attacker (which
replaces pydantic's ``model_validate``, writes a callable ``bool`` into
builtins, and searches its process for the victim's data), then the victim
again. Before fresh state per unit, the second victim run passed its wrong
answer with rewritten parsed values, and the attacker's results held the
victim's template source and responses. Executors are pooled to one per process
so that every call shares it, as an unlucky schedule would.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from _support.asgi_thread import serve_in_thread
from _support.cross_job import (
    ATTACKS,
    PLANTED_COPY,
    VICTIM_REWARDS,
    attack_source,
    attacker_benchmark,
    check_victim,
    leaks,
    planting_benchmark,
    victim_benchmark,
    victim_rewards,
)
from _support.fleet import Fleet

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import Benchmark, ModelConfig, VerificationConfig, VerificationResult
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration


def _config(base_url: str, concurrency: int = 2) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{base_url}#judge")],
        max_concurrency=concurrency,
    )


def _answers() -> dict[str, object]:
    answers: dict[str, object] = {}
    answers.update(victim_benchmark()[1])
    answers.update(attacker_benchmark()[1])
    answers.update(planting_benchmark()[1])
    return answers


def _local(
    bench: Benchmark, base_url: str, pool: SandboxPool, concurrency: int = 2
) -> list[VerificationResult]:
    config = _config(base_url, concurrency)
    runner = LocalRunner(bench, config, resources=PipelineResources(sandbox=pool))
    return [r for _unit, rs in runner.run() for r in rs]


def _check_plant_took(results: list[VerificationResult]) -> None:
    """The attacker's copy of the victim's template was described beside the
    schema-forging code: its judge was asked for "Paris" and its wrong answer
    passed. (Were it not, the attack would not have been tried at all.)"""
    copy = next(r for r in results if r.metadata.question_id == PLANTED_COPY)
    assert copy.template is not None, copy.metadata.error
    assert copy.template.parsed_llm_response == {"value": "Paris"}
    assert copy.template.verify_result is True


@pytest.mark.parametrize("fresh_state", ["call", "template", "job"])
def test_attacks_in_local_mode(fresh_state: str) -> None:
    pool = SandboxPool(SandboxSettings(pool_size=1, timeout=5, fresh_state=fresh_state))
    victim, attacker = victim_benchmark()[0], attacker_benchmark()[0]
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=_answers())) as ep:
            check_victim(_local(victim, ep.base_url, pool))
            stolen = _local(attacker, ep.base_url, pool)
            check_victim(_local(victim, ep.base_url, pool))
    finally:
        pool.close()
    dumps = [r.model_dump_json() for r in stolen]
    assert leaks(dumps) == []
    # The search ran (and found nothing): its report is in the attacker's result.
    reader = next(r for r in stolen if r.metadata.question_id == "read_other_jobs")
    assert reader.template is not None
    assert "LEAK[]" in reader.model_dump_json()


def test_a_description_made_beside_another_jobs_code_serves_that_job_only() -> None:
    # Before descriptions were held per job, the victim's run took the
    # attacker's forged judge schema from the process's shared table: its
    # judge answered "Paris" to "Rome" and the wrong answer passed. The plant
    # takes only where a job's templates share a process (``job``; by default
    # each template has its own and the forging class body reaches nothing).
    pool = SandboxPool(SandboxSettings(pool_size=1, timeout=5, fresh_state="job"))
    planter, victim = planting_benchmark()[0], victim_benchmark()[0]
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=_answers())) as ep:
            planted = _local(planter, ep.base_url, pool, concurrency=1)
            after = _local(victim, ep.base_url, pool)
    finally:
        pool.close()
    _check_plant_took(planted)
    check_victim(after)


@pytest.fixture
def endpoint() -> Iterator[str]:
    with run_endpoint_in_thread(EndpointConfig(answers=_answers())) as ep:
        yield ep.base_url


def _run_job(
    bench: Benchmark, base_url: str, redis_url: str, queue: str = "verifleet"
) -> list[VerificationResult]:
    job = Job.submit(bench, _config(base_url), redis_url, queue=queue)
    progress = job.wait(timeout=180)
    assert progress.status == JobStatus.DONE
    return list(job.result_set())


def test_attacks_on_a_two_worker_fleet(fleet: Fleet, redis_url: str, endpoint: str) -> None:
    # Each worker also takes a queue of its own, so that each surely runs an
    # attacker job and then a victim job (on the shared queue, which worker
    # runs what is left to chance).
    env = {"VERIFLEET_SANDBOX": "strict", "VERIFLEET_SANDBOX_POOL": "1"}
    workers = ("w1", "w2")
    for name in workers:
        fleet.start_worker(name, concurrency=2, queues=f"verifleet,{name}", **env)
    fleet.wait_ready(list(workers))
    victim, attacker = victim_benchmark()[0], attacker_benchmark()[0]
    check_victim(_run_job(victim, endpoint, redis_url))
    stolen = _run_job(attacker, endpoint, redis_url)
    for name in workers:
        stolen += _run_job(attacker, endpoint, redis_url, queue=name)
    for name in workers:
        check_victim(_run_job(victim, endpoint, redis_url, queue=name))
    check_victim(_run_job(victim, endpoint, redis_url))
    assert leaks([r.model_dump_json() for r in stolen]) == []
    assert sorted(r.metadata.question_id for r in stolen) == sorted(ATTACKS * 3)


def test_a_description_made_beside_another_jobs_code_serves_that_job_only_on_a_fleet(
    fleet: Fleet, redis_url: str, endpoint: str
) -> None:
    """The attacker submits its job; submit stores no description of its
    templates (it only checks them statically), so the one worker process
    describes its copy of the victim's template in the attacker's template
    process, after the forging class body. The victim's job after it on that
    process gets its own verdicts."""
    planter = Job.submit(planting_benchmark()[0], _config(endpoint, 1), redis_url)
    copy = next(q for q in planting_benchmark()[0].questions if q.id == PLANTED_COPY)
    stored = planter.store.keys(planter.job_id).templates
    assert not planter.store.client.hexists(stored, copy.template_id)
    # ``job``: the job's templates share a process, so that the plant takes.
    env = {
        "VERIFLEET_SANDBOX": "strict",
        "VERIFLEET_SANDBOX_POOL": "1",
        "VERIFLEET_SANDBOX_FRESH": "job",
    }
    fleet.start_worker("w1", concurrency=1, **env)
    fleet.wait_ready(["w1"])
    assert planter.wait(timeout=180).status == JobStatus.DONE
    _check_plant_took(list(planter.result_set()))
    check_victim(_run_job(victim_benchmark()[0], endpoint, redis_url))


def test_attacks_through_verify(endpoint: str) -> None:
    victim = victim_benchmark()[0]
    resources = reward_resources()
    resources.sandbox = SandboxPool(SandboxSettings(timeout=5, pool_size=1))
    app = create_app(
        victim, [ModelConfig.parse(f"{endpoint}#judge")], RewardConfig(), resources=resources
    )

    try:
        with (
            serve_in_thread(app, lifespan="off") as served,
            httpx.Client(base_url=served.url, timeout=60, trust_env=False) as client,
        ):
            assert victim_rewards(client) == VICTIM_REWARDS
            bodies = []
            for stem in ATTACKS:
                question = {
                    "id": stem,
                    "text": f"Attack {stem}?",
                    "answer_template": attack_source(stem),
                }
                reply = client.post(
                    "/verify", json={"question": question, "response": "attacker response"}
                )
                assert reply.status_code in (200, 422), reply.text
                bodies.append(reply.text)
            # The forging template, then the caller's copy of the served
            # template right after it (its reply holds the victim's own
            # marker: it is the victim's source, sent by this caller).
            for question in planting_benchmark()[0].questions:
                inline = {
                    "id": question.id,
                    "text": question.text,
                    "answer_template": question.answer_template,
                }
                reply = client.post("/verify", json={"question": inline, "response": "Rome"})
                assert reply.status_code in (200, 422), reply.text
            assert victim_rewards(client) == VICTIM_REWARDS
    finally:
        resources.sandbox.close()
    assert leaks(bodies) == []


COUNTS_ITS_CALLS = """
from verifleet.templates import BaseAnswer

SEEN = []


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "x"}

    def verify(self) -> bool:
        SEEN.append(self.value)
        return len(SEEN) == 1
"""


def test_no_state_survives_from_one_unit_to_the_next() -> None:
    # A template that remembers its calls: with a process per call, every call
    # is its first; with a process per (job, template), the second call sees
    # the first (the documented cost trade-off: a question's own units), while
    # another scope does not.
    fresh = SandboxPool(SandboxSettings(pool_size=1, timeout=5, fresh_state="call"))
    shared = SandboxPool(SandboxSettings(pool_size=1, timeout=5, fresh_state="template"))
    try:
        handle = fresh.load_template(COUNTS_ITS_CALLS, "q")
        verdicts = [fresh.evaluate(handle, {"value": "x"}, "") for _ in range(3)]
        assert [v.verification.field_ok for v in verdicts if v.verification] == [True] * 3
        handle = shared.load_template(COUNTS_ITS_CALLS, "q")
        with shared.scoped("job-a"):
            first = [shared.evaluate(handle, {"value": "x"}, "") for _ in range(2)]
        with shared.scoped("job-b"):
            other = shared.evaluate(handle, {"value": "x"}, "")
        assert [v.verification.field_ok for v in first if v.verification] == [True, False]
        assert other.verification is not None and other.verification.field_ok is True
    finally:
        fresh.close()
        shared.close()
