"""Issue 20, items 2 and 4, replayed where templates run: the local runner, a
two-worker fleet with a second job behind the attacker's, and ``/verify``.

The attacks are the corpus templates whose output the *host* used to interpret
or hold: a judge schema with a backtracking ``pattern`` (and a judge value of
forty ``a``s and a ``!``), one with a ``$ref`` to the trap's listening socket,
one with a doubling ``anyOf`` chain, and templates that put megabytes into the
ground truth, the verification output and the parsed values. Each must fail or
lose its own question only, with a result of bounded size; the other job's
verdicts must come out right; nothing may connect to the listener.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from _support.fleet import Fleet
from _support.hostile import CORPUS_DIR, HOSTILE_ANSWER, Trap, judge_fields
from _support.redis_server import free_port

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import Benchmark, ModelConfig, Question, VerificationConfig
from verifleet.store import JobStatus

pytestmark = [pytest.mark.integration, pytest.mark.timeout(480)]

ATTACKS = [
    "58_redos_judge_schema",
    "59_remote_ref_judge_schema",
    "60_anyof_chain_judge_schema",
    "61_huge_ground_truth",
    "62_huge_verify_output",
    "63_huge_parsed_values",
]

#: No result may be larger than this as JSON (the defaults bound each part to
#: 64 KiB; the attacks try to put 8 MB into each).
MAX_RESULT_BYTES = 512 * 1024

SANDBOX_ENV = {"VERIFLEET_SANDBOX": "strict", "VERIFLEET_SANDBOX_TIMEOUT": "5"}

VICTIM_TEMPLATE = """
from verifleet.templates import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "CITY"}

    def verify(self) -> bool:
        return self.value.strip().lower() == "CITY".lower()
"""

#: The second job: (question id, capital, what the judge reads from the answer).
VICTIMS = [
    ("v_paris", "Paris", "Paris"),
    ("v_rome", "Rome", "Rome"),
    ("v_oslo", "Oslo", "Bergen"),  # a wrong answer must stay wrong
    ("v_lima", "Lima", "Lima"),
]


@pytest.fixture
def trap(tmp_path: Path) -> Iterator[Trap]:
    trap = Trap(tmp_path)
    yield trap
    trap.close()


def _attacker(trap: Trap) -> tuple[Benchmark, dict[str, Any]]:
    questions, answers = [], {}
    for name in ATTACKS:
        path = CORPUS_DIR / f"{name}.tpl"
        text = f"Hostile {name}?"
        questions.append(Question(id=name, text=text, answer_template=trap.source(path)))
        answers[text] = {"text": HOSTILE_ANSWER, "fields": judge_fields(path)}
    return Benchmark(name="attacker", questions=questions), answers


def _victim() -> tuple[Benchmark, dict[str, Any]]:
    questions, answers = [], {}
    for qid, city, said in VICTIMS:
        text = f"What is the capital ({qid})?"
        template = VICTIM_TEMPLATE.replace("CITY", city)
        questions.append(Question(id=qid, text=text, answer_template=template))
        answers[text] = {"text": f"It is {said}.", "fields": {"value": said}}
    return Benchmark(name="victim", questions=questions), answers


def _config(base_url: str) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{base_url}#judge")],
        max_concurrency=4,
    )


def _check_attacker(results: list[Any]) -> None:
    by_question = {r.metadata.question_id: r for r in results}
    assert sorted(by_question) == sorted(ATTACKS)
    for qid, result in by_question.items():
        template = result.template
        verified = template.verify_result if template is not None else None
        assert result.metadata.error is not None or verified is not True, qid
        size = len(result.model_dump_json())
        assert size < MAX_RESULT_BYTES, (qid, size)


def _check_victim(results: list[Any]) -> None:
    by_question = {r.metadata.question_id: r for r in results}
    assert sorted(by_question) == sorted(q for q, _c, _s in VICTIMS)
    for qid, city, said in VICTIMS:
        result = by_question[qid]
        assert result.metadata.error is None, (qid, result.metadata.error)
        assert result.template is not None
        assert result.template.verify_result is (city == said), qid
        assert result.template.parsed_llm_response == {"value": said}
        assert result.template.parsed_gt_response == {"value": city}


def test_host_attacks_in_local_mode(trap: Trap) -> None:
    attacker, answers = _attacker(trap)
    victim, victim_answers = _victim()
    answers.update(victim_answers)
    pool = SandboxPool(SandboxSettings(timeout=5, pool_size=2))
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
            config = _config(ep.base_url)
            resources = PipelineResources(sandbox=pool)
            hostile = LocalRunner(attacker, config, resources=resources)
            attacked = [r for _unit, rs in hostile.run() for r in rs]
            honest = LocalRunner(victim, config, resources=resources)
            after = [r for _unit, rs in honest.run() for r in rs]
    finally:
        pool.close()
    _check_attacker(attacked)
    _check_victim(after)
    errors = {r.metadata.question_id: r.metadata.error or "" for r in attacked}
    assert "VERIFLEET_RESULT_MAX_GROUND_TRUTH" in errors["61_huge_ground_truth"]
    assert "VERIFLEET_RESULT_MAX_PARSED" in errors["63_huge_parsed_values"]
    # The judge's value reached the template, whose own validation refused it.
    assert "should match pattern" in errors["58_redos_judge_schema"]
    trap.assert_contained([r.model_dump_json() for r in attacked + after])


def test_host_attacks_on_a_two_worker_fleet(fleet: Fleet, redis_url: str, trap: Trap) -> None:
    attacker, answers = _attacker(trap)
    victim, victim_answers = _victim()
    answers.update(victim_answers)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        workers = [fleet.start_worker(name, concurrency=4, **SANDBOX_ENV) for name in ("w1", "w2")]
        fleet.wait_ready(["w1", "w2"])
        config = _config(ep.base_url)
        hostile = Job.submit(attacker, config, redis_url)
        honest = Job.submit(victim, config, redis_url)
        honest_progress = honest.wait(timeout=240)
        hostile_progress = hostile.wait(timeout=240)
        attacked = list(hostile.result_set())
        after = list(honest.result_set())
    assert honest_progress.status == JobStatus.DONE
    assert hostile_progress.status == JobStatus.DONE
    _check_victim(after)
    _check_attacker(attacked)
    assert all(worker.poll() is None for worker in workers), "both workers survived"
    trap.assert_contained([r.model_dump_json() for r in attacked + after])


def test_host_attacks_through_verify(trap: Trap) -> None:
    victim, answers = _victim()
    _attacker_bench, attacker_answers = _attacker(trap)
    answers.update(attacker_answers)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        resources = reward_resources()
        resources.sandbox = SandboxPool(SandboxSettings(timeout=5, pool_size=2))
        app = create_app(
            victim, [ModelConfig.parse(f"{ep.base_url}#judge")], RewardConfig(), resources=resources
        )
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.02)
        bodies: list[str] = []
        try:
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}", timeout=120, trust_env=False
            ) as client:
                for name in ATTACKS:
                    question = {
                        "id": name,
                        "text": f"Hostile {name}?",
                        "answer_template": trap.source(CORPUS_DIR / f"{name}.tpl"),
                    }
                    reply = client.post(
                        "/verify", json={"question": question, "response": HOSTILE_ANSWER}
                    )
                    assert reply.status_code in (200, 422), (name, reply.status_code, reply.text)
                    if reply.status_code == 200:
                        assert reply.json()["reward"] == 0.0, name
                    assert len(reply.content) < MAX_RESULT_BYTES, (name, len(reply.content))
                    bodies.append(reply.text)
                # Another caller's rewards are untouched.
                for qid, city, said in VICTIMS:
                    answer = client.post(
                        "/verify", json={"question_id": qid, "response": f"It is {said}."}
                    )
                    assert answer.status_code == 200, answer.text
                    assert answer.json()["reward"] == (1.0 if city == said else 0.0), qid
                    bodies.append(answer.text)
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            resources.sandbox.close()
    trap.assert_contained(bodies)
