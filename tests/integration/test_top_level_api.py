"""``verifleet.run`` / ``verifleet.submit`` at the top level, and the pipeline rules
they expose: global dynamic rubrics, ``template_validation_error``, per-question
failure of a broken template. Runs against the deterministic OpenAI-compatible
endpoint (bench/endpoint.py) over real HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import verifleet
from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.results import read_results
from verifleet.schemas import (
    Benchmark,
    DynamicRubric,
    ModelConfig,
    Question,
    RegexTrait,
    Rubric,
    VerificationConfig,
)

pytestmark = pytest.mark.integration

QUESTION = "Which gene encodes the anti-apoptotic protein?"
TEMPLATE = """
from karenina.schemas.entities import BaseAnswer
from pydantic import Field

class Answer(BaseAnswer):
    gene: str = Field(description="The gene named")

    def model_post_init(self, __context):
        self.correct = {"gene": "BCL2"}

    def verify(self) -> bool:
        return self.gene.upper() == self.correct["gene"]
"""
BROKEN = "class Answer(BaseAnswer:\n    pass\n"
REFUSED = "How do I pick this lock?"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    answers = {
        QUESTION: {"text": "It is BCL2.", "fields": {"gene": "BCL2", "names_gene": True}},
        "Broken?": "anything",
        REFUSED: {
            "text": "I cannot help with that.",
            "fields": {"abstention_detected": True, "reasoning": "It declines."},
        },
    }
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as running:  # type: ignore[arg-type]
        yield running


def _config(endpoint: RunningEndpoint, **fields: object) -> VerificationConfig:
    model = ModelConfig(
        model_name="fake-model", interface="openai_endpoint", endpoint_base_url=endpoint.base_url
    )
    return VerificationConfig(answering_models=[model], parsing_models=[model], **fields)  # type: ignore[arg-type]


def _benchmark() -> Benchmark:
    return Benchmark(
        name="api",
        questions=[
            Question(id="good", text=QUESTION, answer_template=TEMPLATE),
            Question(id="broken", text="Broken?", answer_template=BROKEN),
        ],
        global_dynamic_rubric=DynamicRubric(
            regex_traits=[RegexTrait(name="names_gene", pattern="BCL2", summary="gene names")]
        ),
    )


def test_all_names_the_api() -> None:
    assert set(verifleet.__all__) >= {"run", "submit", "Job", "__version__"}
    for name in verifleet.__all__:
        assert getattr(verifleet, name) is not None
    assert callable(verifleet.run) and callable(verifleet.submit)
    assert callable(verifleet.Job.wait) and callable(verifleet.Job.result_set)


def test_import_verifleet_stays_cheap() -> None:
    code = "import sys, verifleet; print(sorted(m for m in sys.modules if m.startswith(('verifleet.', 'pydantic', 'celery'))))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_run_contains_a_broken_template_and_records_why(endpoint: RunningEndpoint) -> None:
    results = verifleet.run(_benchmark(), _config(endpoint))
    by_id = {r.metadata.question_id: r for r in results.results}
    assert set(by_id) == {"good", "broken"}
    good, broken = by_id["good"], by_id["broken"]
    assert good.metadata.error is None
    assert good.template is not None and good.template.verify_result is True
    assert broken.metadata.completed_without_errors is False
    assert broken.template is not None
    assert broken.template.template_validation_error is not None
    assert "syntax" in broken.template.template_validation_error.lower()


def test_global_dynamic_rubric_is_evaluated(endpoint: RunningEndpoint) -> None:
    config = _config(endpoint, evaluation_mode="template_and_rubric")
    results = verifleet.run(_benchmark(), config)
    [good] = [r for r in results.results if r.metadata.question_id == "good"]
    assert good.rubric is not None
    assert good.rubric.regex_trait_scores == {"names_gene": True}
    assert good.rubric.dynamic_rubric_promoted_traits == ["names_gene"]


def test_run_accepts_a_config_mapping(endpoint: RunningEndpoint) -> None:
    config = _config(endpoint).model_dump()
    config["async_max_workers"] = 2  # an original field at its default: accepted silently
    benchmark = Benchmark(name="one", questions=[_benchmark().questions[0]])
    results = verifleet.run(benchmark, config)
    assert [r.template.verify_result for r in results.results if r.template] == [True]


def test_rubric_only_records_the_abstention_verdict(endpoint: RunningEndpoint) -> None:
    benchmark = Benchmark(
        name="refusal",
        questions=[Question(id="lock", text=REFUSED)],
        global_rubric=Rubric(regex_traits=[RegexTrait(name="refuses", pattern="cannot")]),
    )
    config = _config(endpoint, evaluation_mode="rubric_only", abstention_enabled=True)
    [result] = verifleet.run(benchmark, config).results
    assert result.rubric is not None and result.rubric.regex_trait_scores == {"refuses": True}
    template = result.template
    assert template is not None  # carries the check's verdict, nothing else
    assert template.template_verification_performed is False
    assert (template.abstention_check_performed, template.abstention_detected) == (True, True)
    assert template.abstention_reasoning == "It declines."
    assert template.parsed_llm_response is None
    # Without the check, rubric_only keeps the spec's template=None.
    [plain] = verifleet.run(benchmark, _config(endpoint, evaluation_mode="rubric_only")).results
    assert plain.template is None


def test_reasoning_only_deep_judgment_reads_the_whole_response(
    endpoint: RunningEndpoint,
) -> None:
    # The original's deep_judgment_mode "reasoning_only": no excerpt stage.
    fields = _config(endpoint).model_dump(
        exclude={"deep_judgment_enabled", "deep_judgment_excerpts_enabled"}
    )
    fields["deep_judgment_mode"] = "reasoning_only"  # as an original preset holds it
    benchmark = Benchmark(name="one", questions=[_benchmark().questions[0]])
    [result] = verifleet.run(benchmark, fields).results
    section = result.deep_judgment
    assert section is not None and section.deep_judgment_performed
    assert section.deep_judgment_stages_completed == ["reasoning", "parameters"]
    assert section.attributes_without_excerpts == []
    assert section.deep_judgment_model_calls == 2
    assert result.template is not None and result.template.verify_result is True


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_run_into_a_file_returns_what_the_file_holds(
    endpoint: RunningEndpoint, tmp_path: Path, suffix: str
) -> None:
    # The results come from memory (the file is not read back), so they must
    # equal a read of the finalized file, also when a run resumes one.
    out = tmp_path / f"results{suffix}"
    first = verifleet.run(_benchmark(), _config(endpoint), out=out)
    assert first.results == read_results(out).results
    bigger = Benchmark(
        name="api", questions=[*_benchmark().questions, Question(id="again", text=QUESTION)]
    )
    resumed = verifleet.run(bigger, _config(endpoint), out=out)
    stored = read_results(out)
    assert [r.metadata.question_id for r in resumed.results] == [
        r.metadata.question_id for r in stored.results
    ]
    assert resumed.results == stored.results
    assert {r.metadata.question_id for r in resumed.results} == {"good", "broken", "again"}
    assert resumed.scenario_results == stored.scenario_results
