"""Validation at submit: every problem of every chunk is reported, and the
template modules compiled only for validation do not stay in ``sys.modules``
(they kept every compiled class of a big benchmark alive)."""

from __future__ import annotations

import sys

import pytest
from _support.jobs import capitals_benchmark

from verifleet.orchestrator._fleet import submit
from verifleet.orchestrator._fleet.submit import validate_job
from verifleet.schemas import ModelConfig, VerificationConfig


def _template_modules() -> set[str]:
    return {name for name in sys.modules if name.startswith("verifleet_template_")}


def test_problems_of_every_chunk_are_reported_and_modules_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(submit, "_VALIDATE_CHUNK", 4)
    bench, _answers = capitals_benchmark(10)
    bench.questions[1].answer_template = "class Answer(:\n    pass\n"
    bench.questions[9].answer_template = "import os\n" + (bench.questions[9].answer_template or "")
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    before = _template_modules()

    problems = validate_job(bench, config)

    assert [p.split(":")[0] for p in problems] == ["question q0001", "question q0009"]
    assert "os" in problems[1]
    assert _template_modules() == before


def test_a_module_this_process_already_uses_is_kept() -> None:
    bench, _answers = capitals_benchmark(2)
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    validate_job(bench, config)
    bench.validate()  # compiles again, as a runner in this process would
    kept = _template_modules()
    assert validate_job(bench, config) == []
    assert _template_modules() >= kept
