"""The hostile-template corpus (tests/hostile/) in the three places that run
templates: the local runner, a real fleet, and ``/verify``. Every template must be
refused or contained: no marker file written, no secret in any result, no
connection to the listening socket, no worker lost, the honest control questions
still pass. Executors run strict (bubblewrap + seccomp + rlimits) with a 2 s
wall-clock limit so the resource attacks cost little time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from _support.fleet import Fleet
from _support.hostile import (
    HOSTILE_ANSWER,
    Trap,
    corpus_benchmark,
    corpus_files,
    rubric_attack_question,
)
from _support.redis_server import free_port

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import ModelConfig, VerificationConfig, VerificationResult
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration

SANDBOX_ENV = {
    "VERIFLEET_SANDBOX": "strict",
    "VERIFLEET_SANDBOX_TIMEOUT": "2",
    "VERIFLEET_SANDBOX_POOL": "4",
}


@pytest.fixture
def trap(tmp_path: Path) -> Iterator[Trap]:
    trap = Trap(tmp_path)
    yield trap
    trap.close()


def _config(base_url: str, **extra: object) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{base_url}#judge")],
        max_concurrency=4,
        **extra,
    )


def _check(results: list[VerificationResult], trap: Trap, expected: int) -> None:
    by_question = {r.metadata.question_id: r for r in results}
    assert len(by_question) == expected, "every question has its result"
    for qid, result in by_question.items():
        template = result.template
        if qid.startswith("honest") or qid == "rubric_attacks":
            assert result.metadata.error is None, result.metadata.error
            assert template is not None and template.verify_result is True
        else:
            # Refused (an error in its own result) or contained (ran, verified False).
            verified = template.verify_result if template is not None else None
            assert result.metadata.error is not None or verified is not True, qid
    trap.assert_contained([r.model_dump_json() for r in results])


def test_corpus_in_local_mode(trap: Trap) -> None:
    bench, answers = corpus_benchmark(trap)
    rubric_question, rubric_answers = rubric_attack_question(trap)
    bench.questions.append(rubric_question)
    answers.update(rubric_answers)
    pool = SandboxPool(SandboxSettings(timeout=2, pool_size=2))
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
            config = _config(ep.base_url, evaluation_mode="template_and_rubric")
            runner = LocalRunner(bench, config, resources=PipelineResources(sandbox=pool))
            results = [r for _unit, rs in runner.run() for r in rs]
        _check(results, trap, len(bench.questions))
        # The resource attacks killed only their calls' processes: no executor
        # died, none was replaced.
        assert pool.stats().replacements == 0
        errors = {r.metadata.question_id: r.metadata.error or "" for r in results}
        assert "wall-clock limit" in errors["35_loop_in_verify"]
        assert "templates may not use" in errors["01_import_os"]
        # Hostile rubric traits fail alone; the honest one is scored.
        rubric = next(r for r in results if r.metadata.question_id == "rubric_attacks").rubric
        assert rubric is not None
        assert rubric.callable_trait_scores == {"length": len(HOSTILE_ANSWER)}
        assert not rubric.regex_trait_scores
    finally:
        pool.close()


def test_corpus_on_a_fleet(fleet: Fleet, redis_url: str, trap: Trap) -> None:
    # The whole corpus, as in local mode and through /verify.
    bench, answers = corpus_benchmark(trap)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        worker = fleet.start_worker("hostile", concurrency=4, **SANDBOX_ENV)
        fleet.wait_ready(["hostile"])
        job = Job.submit(bench, _config(ep.base_url), redis_url)
        progress = job.wait(timeout=240)
        results = list(job.result_set())
    assert progress.status == JobStatus.DONE
    _check(results, trap, len(bench.questions))
    assert worker.poll() is None, "the worker survived the corpus"
    assert "wall-clock limit" in fleet.log("hostile") or any(
        "wall-clock limit" in (r.metadata.error or "") for r in results
    )


def test_corpus_through_verify(trap: Trap) -> None:
    bench, answers = corpus_benchmark(trap, honest=1)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        resources = reward_resources()
        resources.sandbox = SandboxPool(SandboxSettings(timeout=2, pool_size=2))
        app = create_app(
            bench, [ModelConfig.parse(f"{ep.base_url}#judge")], RewardConfig(), resources=resources
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
                base_url=f"http://127.0.0.1:{port}", timeout=60, trust_env=False
            ) as client:
                for path in corpus_files():
                    question = {
                        "id": path.stem,
                        "text": f"Hostile {path.stem}?",
                        "answer_template": trap.source(path),
                    }
                    reply = client.post(
                        "/verify", json={"question": question, "response": HOSTILE_ANSWER}
                    )
                    assert reply.status_code in (200, 422), (
                        path.stem,
                        reply.status_code,
                        reply.text,
                    )
                    if reply.status_code == 200:
                        assert reply.json()["reward"] == 0.0, path.stem
                    bodies.append(reply.text)
                honest = client.post(
                    "/verify", json={"question_id": "honest0", "response": "The capital is Paris."}
                )
                assert honest.status_code == 200 and honest.json()["reward"] == 1.0, honest.text
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            resources.sandbox.close()
    trap.assert_contained(bodies)
