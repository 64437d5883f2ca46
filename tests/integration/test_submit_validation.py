"""Validation at submit: every problem is reported, and the templates are compiled
in sandbox executors, never in the submitting process (no template module is
registered here, however big the benchmark)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from _support.cross_job import planting_benchmark, victim_benchmark
from _support.jobs import capitals_benchmark
from _support.scenarios import DANGLING_PROBLEM, dangling_scenario, scenario_benchmark

from verifleet.orchestrator._fleet.submit import (
    check_job,
    template_problems,
    validate_job,
)
from verifleet.sandbox import SandboxSettings, default_pool, reset_default_pool
from verifleet.schemas import (
    BenchmarkLoadError,
    BrokenScenario,
    ModelConfig,
    VerificationConfig,
    compute_template_id,
    load_benchmark,
)

pytestmark = pytest.mark.integration


def _template_modules() -> set[str]:
    return {name for name in sys.modules if name.startswith("verifleet_template_")}


def test_problems_are_reported_and_nothing_is_compiled_here() -> None:
    bench, _answers = capitals_benchmark(10)
    bench.questions[1].answer_template = "class Answer(:\n    pass\n"
    bench.questions[9].answer_template = "import os\n" + (bench.questions[9].answer_template or "")
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    before = _template_modules()

    problems = validate_job(bench, config)

    assert [p.split(":")[0] for p in problems] == ["question q0001", "question q0009"]
    assert "does not compile" in problems[0]
    assert "'os'" in problems[1]
    assert _template_modules() == before
    # Benchmark.validate() goes through the sandbox too once it is imported.
    assert len(bench.validate()) == 2
    assert _template_modules() == before


def test_submit_checks_templates_statically_in_the_compiles_words() -> None:
    """By default ``submit`` checks each distinct template statically (parse
    and guard, in batches): what that finds is worded as the full check words
    it, nothing is compiled (no executor hands a template process a template),
    and a template only a compile refuses is left to the workers."""
    bench, _answers = capitals_benchmark(12)
    bench.questions[1].answer_template = "class Answer(:\n    pass\n"
    bench.questions[9].answer_template = "import os\n" + (bench.questions[9].answer_template or "")
    bench.questions[5].answer_template = "_ = 1 / 0\n" + (bench.questions[5].answer_template or "")
    bench.questions[7].answer_template = bench.questions[6].answer_template  # one template, twice
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    reset_default_pool()
    try:
        static = check_job(bench, config, compile_templates=False)
        compiled_by_static = default_pool().compiled_stats().compiled
    finally:
        reset_default_pool()
    full = check_job(bench, config)

    assert compiled_by_static == 0
    assert (static.compiled, static.templates, static.descriptions) == (False, 11, {})
    assert (full.compiled, full.templates) == (True, 11)
    assert static.problems == full.problems == []
    assert [p.split(":")[0] for p in full.failing] == [
        "question q0001",
        "question q0005",
        "question q0009",
    ]
    assert static.failing == [full.failing[0], full.failing[2]]


def test_a_broken_scenario_fails_alone_unless_strict() -> None:
    """The same words in every path: ``submit`` and ``serve`` list it as failing
    alone (``template_problems``), ``--strict`` rejects the job with it."""
    bench = scenario_benchmark(broken=False).model_copy(
        update={"broken_scenarios": [BrokenScenario.from_error("dangling-edge", DANGLING_PROBLEM)]}
    )
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    assert validate_job(bench, config, strict=False) == []
    assert validate_job(bench, config, strict=True) == [DANGLING_PROBLEM]
    assert template_problems(bench) == [DANGLING_PROBLEM]


def test_every_path_reports_the_same_problems_in_the_same_words(tmp_path: Path) -> None:
    """``Benchmark.validate``, ``load_benchmark``, ``submit`` (``validate_job``,
    strict or not) and ``serve`` (``template_problems``) ask one check: a broken
    question template, a broken scenario-node template and a scenario that fails
    validation are worded alike everywhere and fail alone unless strict."""
    document = scenario_benchmark(broken=False).model_dump(mode="json", exclude_defaults=True)
    document["questions"][0]["answer_template"] = "class Answer(:\n    pass\n"
    document["scenarios"][0]["nodes"][0]["question"]["answer_template"] = "import os\n"
    document["scenarios"].append(dangling_scenario())
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump(document))
    bench = load_benchmark(path, validate_templates=False)
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])

    words = bench.validate()
    assert [w.split(":")[0] for w in words] == [
        "question plain",
        "scenario branch_pass, node start",
        "scenario 'dangling-edge'",
    ]
    assert words[0].startswith("question plain: template: template does not compile")
    assert words[2] == DANGLING_PROBLEM
    assert template_problems(bench) == words
    assert validate_job(bench, config, strict=True) == words
    assert validate_job(bench, config, strict=False) == []
    with pytest.raises(BenchmarkLoadError) as refused:
        load_benchmark(path)  # templates validated: all or nothing, but not the scenario
    assert str(refused.value).splitlines()[1:] == [f"  {w}" for w in words[:2]]


def test_what_one_submission_describes_never_describes_another_benchmark() -> None:
    # A process that submits many benchmarks (a service, a notebook): each is
    # described in a template process of its own, beside its own code only.
    # The first carries a template that forges every later judge schema of
    # its process, then a copy of the second's template; the second's stored
    # description must be its own.
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    planter, victim = planting_benchmark()[0], victim_benchmark()[0]
    victim_template = victim.questions[0].answer_template or ""
    # One executor: submission describes a job's templates in parallel over
    # the executors, and the plant takes only where the forging class body was
    # compiled first, in the same template process: ``job`` mode, where a
    # job's templates share one (the default gives each its own, and no plant
    # takes at all).
    settings = SandboxSettings.from_env().model_copy(update={"pool_size": 1, "fresh_state": "job"})
    reset_default_pool(settings)
    try:
        planted = check_job(planter, config).descriptions
        honest = check_job(victim, config).descriptions
    finally:
        reset_default_pool()
    template_id = compute_template_id(victim_template)
    forged = json.loads(planted[template_id])["judge_schema"]
    assert forged["properties"]["value"].get("const") == "Paris"  # the plant took
    schema = json.loads(honest[template_id])["judge_schema"]
    assert "const" not in schema["properties"]["value"]
    assert schema["properties"]["value"]["type"] == "string"
