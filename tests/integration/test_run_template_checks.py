"""A local run checks each template once, where its units run, while units run.

Checking a benchmark before its run compiled every template one after another in
a process of its own, and the run compiled each again for its first unit (issue
36). Now a question's template is checked as its first unit starts, in the run's
own template processes: one compile per template, counted by the executors
themselves (their routers count what they hand a template process to compile).
The endpoint is the fault-injecting test double of ``bench/``: no real model
answers a thousand-token capitals benchmark on demand.
"""

from __future__ import annotations

import threading

import pytest
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources
from verifleet.sandbox import SandboxMode, SandboxPool, SandboxSettings, sandbox_checker
from verifleet.sandbox._protocol import PingRequest, PingResult
from verifleet.schemas import Benchmark, ModelConfig, VerificationConfig

pytestmark = pytest.mark.integration

# A syntax error, and a template the guard refuses (it imports os).
_BROKEN = {
    "q0003": "class Answer(BaseAnswer:\n    pass\n",
    "q0008": "import os\nfrom karenina.schemas.entities import BaseAnswer\n\n"
    "class Answer(BaseAnswer):\n    city: str\n\n    def verify(self):\n        return True\n",
}


def _benchmark(n: int) -> tuple[Benchmark, dict[str, object]]:
    bench, answers = capitals_benchmark(n, wrong_every=0)
    for question in bench.questions:
        if question.id in _BROKEN:
            question.answer_template = _BROKEN[question.id]
    return bench, answers


def _pool(size: int) -> SandboxPool:
    # Seccomp mode: the count does not depend on the isolation layers, and this
    # mode starts in every checkout (strict binds only the venv's own packages).
    return SandboxPool(SandboxSettings(pool_size=size, mode=SandboxMode.SECCOMP, timeout=20))


def _validate(bench: Benchmark) -> list[str]:
    pool = _pool(1)
    try:
        return bench.validate(checker=sandbox_checker(pool))
    finally:
        pool.close()


def test_broken_templates_fail_only_their_questions_and_each_template_compiles_once() -> None:
    n = 24
    bench, answers = _benchmark(n)
    pool = _pool(1)  # one executor: its count is the run's
    problems: list[str] = []
    lock = threading.Lock()

    def report(problem: str) -> None:
        with lock:
            problems.append(problem)

    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
            model = ModelConfig.parse(f"{ep.base_url}#m")
            config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
            runner = LocalRunner(bench, config, resources=PipelineResources(sandbox=pool))
            runner.on_template_problem = report
            results = [r for _unit, rs in runner.run() for r in rs]
        stats = pool.compiled_stats()
    finally:
        pool.close()

    assert len(results) == n
    failed = {r.metadata.question_id for r in results if not r.metadata.completed_without_errors}
    assert failed == set(_BROKEN), failed
    passed = [r for r in results if r.metadata.question_id not in _BROKEN]
    assert all(r.template and r.template.verify_result for r in passed)
    # Each problem reported once, in the words Benchmark.validate uses.
    assert sorted(problems) == sorted(_validate(bench)), problems
    # Every template handed to a template process to compile exactly once:
    # the check's compile served the units' parse and verify.
    assert stats.compiled == n, stats


def test_control_a_check_outside_the_run_compiles_every_template_again() -> None:
    """The old path (a benchmark check in processes of their own, then the run):
    the same count sees the second compile, so the test above can fail."""
    n = 6
    bench, answers = _benchmark(n)
    pool = _pool(1)
    try:
        bench.validate(checker=sandbox_checker(pool))
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
            model = ModelConfig.parse(f"{ep.base_url}#m")
            config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
            runner = LocalRunner(bench, config, resources=PipelineResources(sandbox=pool))
            list(runner.run())
        stats = pool.compiled_stats()
    finally:
        pool.close()
    # The broken ones never reach a unit's evaluation: 2 x good + 1 x broken.
    good = n - sum(1 for q in bench.questions if q.id in _BROKEN)
    assert stats.compiled == 2 * good + (n - good), stats


def test_units_spread_their_checks_over_the_executors() -> None:
    n = 40
    bench, answers = _benchmark(n)
    pool = _pool(2)
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=200)) as ep:
            model = ModelConfig.parse(f"{ep.base_url}#m")
            config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
            runner = LocalRunner(bench, config, resources=PipelineResources(sandbox=pool))
            results = [r for _unit, rs in runner.run() for r in rs]
        per_executor = pool._executors.on_each_idle(
            lambda proc: PingResult.model_validate(proc.call(PingRequest(id=proc.next_id())).result)
        )
    finally:
        pool.close()
    assert len(results) == n
    assert [p.compiled > 0 for p in per_executor] == [True, True], per_executor
