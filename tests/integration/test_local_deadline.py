"""``verifleet run`` ends within its deadline whatever one unit does: a unit stuck
in host code is given up ``unit_deadline`` + a grace after it started, recorded
as failed with an error that says so, and every other unit finishes.

The stuck unit is a caller that never returns (installed with
``PipelineResources.caller_factory``, the pipeline's seam for scripted models):
no real template can hang the host any more (template code runs in sandbox
executors under a wall-clock limit, and real model calls stop at the deadline),
and what is under test is the runner's bound, whatever the next such bug is.
The other units answer through the same stand-in, deterministically."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from _support.jobs import capitals_benchmark

from verifleet.orchestrator._local.runner import OVERRUN_GRACE, LocalRunner
from verifleet.pipeline import Message, PipelineResources
from verifleet.schemas import ModelConfig, VerificationConfig


class _Caller:
    """Answers "The capital is CapitalN." and parses it back; on the question
    about Country1 it blocks until the test ends (a thread stuck in host code)."""

    def __init__(self, model: ModelConfig, tracker: Any, release: threading.Event) -> None:
        self._model, self._tracker, self._release = model, tracker, release

    @property
    def model_name(self) -> str:
        return self._model.model_name

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        question = str(messages[-1]["content"])
        if "Country1?" in question:
            self._release.wait()
        number = question.rsplit("Country", 1)[1].rstrip("?")
        return f"The capital is Capital{number}."

    def invoke_json(self, messages: Sequence[Message], *, stage: str, **_: Any) -> dict[str, Any]:
        text = str(messages[-1]["content"])
        return {"city": text.split("The capital is ")[1].split(".")[0]}


def test_a_unit_stuck_in_host_code_is_given_up_and_the_others_finish() -> None:
    bench, _answers = capitals_benchmark(4, wrong_every=0)
    config = VerificationConfig.build(
        answering_models=[ModelConfig.parse("http://127.0.0.1:9/v1#answerer")],
        parsing_models=[ModelConfig.parse("http://127.0.0.1:9/v1#judge")],
        unit_deadline=2.0,
        max_concurrency=2,
    )
    release = threading.Event()
    resources = PipelineResources(
        caller_factory=lambda model, *, tracker, config, deadline: _Caller(model, tracker, release)
    )
    runner = LocalRunner(bench, config, resources=resources)
    try:
        outcome = {unit.question.id: results for unit, results in runner.run()}
    finally:
        release.set()  # let the abandoned thread end with the test
    assert set(outcome) == {"q0000", "q0001", "q0002", "q0003"}
    [stuck] = outcome["q0001"]
    assert stuck.metadata.completed_without_errors is False
    assert stuck.metadata.error is not None
    assert "unit given up" in stuck.metadata.error
    assert f"2 s (unit_deadline) + {OVERRUN_GRACE:g} s" in stuck.metadata.error
    for qid in ("q0000", "q0002", "q0003"):
        [result] = outcome[qid]
        assert result.metadata.completed_without_errors, result.metadata.error
        assert result.template is not None and result.template.verify_result is True
