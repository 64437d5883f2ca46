"""The spec's skip cascades and override semantics, through ``run_unit``."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from _support.pipeline_fakes import (
    ANSWERING,
    JUDGE,
    ScriptedModels,
    make_config,
    make_question,
    make_resources,
)

from verifleet.pipeline import CachedAnswer, ModelCallError, verify_question
from verifleet.schemas import (
    ModelConfig,
    RegexTrait,
    Rubric,
    VerificationResult,
    VerificationResultSet,
)

RUBRIC = Rubric(regex_traits=[RegexTrait(name="names_gene", pattern="BCL2")])
ABSTAINS = {"reasoning": "The model declines.", "abstention_detected": True}
ANSWERS = {"reasoning": "It answers.", "abstention_detected": False}
SUFFICIENT = {"reasoning": "Names a gene.", "sufficient": True}
INSUFFICIENT = {"reasoning": "No gene named.", "sufficient": False}


def _run(
    judge: dict[str, list[Any]],
    *,
    answer: str = "It is BCL2.",
    cached: CachedAnswer | None = None,
    rubric: Rubric | None = None,
    answering: ModelConfig = ANSWERING,
    resources_extra: dict[str, Any] | None = None,
    **config: Any,
) -> tuple[VerificationResult, ScriptedModels]:
    script = ScriptedModels({answering.model_name: {"answer_generation": [answer]}, "judge": judge})
    [result] = verify_question(
        make_question(),
        answering,
        [JUDGE],
        make_config(answering_models=[answering], **config),
        replicate=1,
        rubric=rubric,
        resources=make_resources(script, **(resources_extra or {})),
        cached_answer=cached,
    )
    return result, script


def test_abstention_skips_template_stages_but_not_rubric(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        result, script = _run(
            {"abstention_check": [ABSTAINS]},
            answer="I cannot answer that.",
            rubric=RUBRIC,
            evaluation_mode="template_and_rubric",
            abstention_enabled=True,
            sufficiency_enabled=True,
            embedding_check_enabled=True,
            deep_judgment_enabled=True,
        )
    assert script.stages_called("judge") == ["abstention_check"]
    template = result.template
    assert template is not None
    assert template.abstention_check_performed and template.abstention_detected
    assert template.abstention_override_applied is True
    assert template.verify_result is False
    assert template.sufficiency_check_performed is False
    assert template.parsed_llm_response is None
    assert template.template_verification_performed is False
    assert template.embedding_check_performed is False
    assert result.rubric is not None and result.rubric.regex_trait_scores == {"names_gene": False}
    assert result.metadata.completed_without_errors is True
    assert any("AbstentionCheck override" in r.getMessage() for r in caplog.records)
    failure = result.metadata.failure  # the original's taxonomy
    assert failure is not None and (failure.category, failure.group) == ("abstention", "abstained")
    assert failure.reason == "The model declines."


def test_no_abstention_leaves_result_to_verification() -> None:
    result, _ = _run(
        {"abstention_check": [ANSWERS], "parsing": [{"gene": "BCL2"}]}, abstention_enabled=True
    )
    assert result.template is not None
    assert result.template.abstention_detected is False
    assert result.template.abstention_override_applied is False
    assert result.template.verify_result is True


def test_insufficient_response_skips_parse_and_verify(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        result, script = _run(
            {"sufficiency_check": [INSUFFICIENT]},
            answer="Genes matter.",
            rubric=RUBRIC,
            evaluation_mode="template_and_rubric",
            sufficiency_enabled=True,
        )
    assert script.stages_called("judge") == ["sufficiency_check"]
    template = result.template
    assert template is not None
    assert template.sufficiency_detected is False and template.sufficiency_override_applied
    assert template.verify_result is False
    assert template.template_verification_performed is False
    assert result.rubric is not None  # rubric is independent of the template
    assert any("SufficiencyCheck override" in r.getMessage() for r in caplog.records)
    assert result.metadata.failure is not None
    assert result.metadata.failure.category == "sufficiency"


def test_sufficient_response_is_parsed() -> None:
    result, script = _run(
        {"sufficiency_check": [SUFFICIENT], "parsing": [{"gene": "BCL2"}]}, sufficiency_enabled=True
    )
    assert script.stages_called("judge") == ["sufficiency_check", "parsing"]
    assert result.template is not None and result.template.verify_result is True
    assert result.template.sufficiency_override_applied is False


def test_recursion_limit_fails_verification_without_error(caplog: pytest.LogCaptureFixture) -> None:
    cached = CachedAnswer(raw_llm_response="partial ... BCL2", recursion_limit_reached=True)
    with caplog.at_level(logging.WARNING):
        result, script = _run({}, cached=cached, abstention_enabled=True, sufficiency_enabled=True)
    assert any("RecursionLimitAutoFail override" in r.getMessage() for r in caplog.records)
    assert script.calls == []  # no answering call, no abstention, no parsing
    template = result.template
    assert template is not None
    assert template.recursion_limit_reached is True
    assert template.verify_result is False
    # The original counts an auto-fail as a template verification (a failed one).
    assert template.template_verification_performed is True
    assert result.metadata.completed_without_errors is True
    assert result.metadata.error is None
    assert result.metadata.failure is not None
    assert result.metadata.failure.category == "recursion_limit"


MCP = ModelConfig(
    model_name="agent",
    interface="openai_endpoint",
    endpoint_base_url="http://a/v1",
    mcp_urls_dict={"search": "http://mcp/search"},
)


def _agent(trace: list[dict[str, Any]]) -> Any:
    """An agent runner that returns a given trace: these tests are about what the
    stages do with a trace, which a real agent cannot be told to produce exactly
    (the real runtime is tested in tests/integration/test_agents.py)."""

    def run(
        model: ModelConfig, messages: Any, *, tracker: Any, config: Any, deadline: float | None
    ) -> CachedAnswer:
        tracker.record("answer_generation", model=model.model_name, input_tokens=7, output_tokens=3)
        return CachedAnswer(
            raw_llm_response="trace", trace_messages=trace, agent_metrics={"tool_calls": 1}
        )

    return run


BROKEN_TRACE = [
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "", "tool_calls": [{"name": "search"}]},
    {"role": "tool", "content": "results"},
]
GOOD_TRACE = [*BROKEN_TRACE, {"role": "assistant", "content": "It is BCL2."}]


@pytest.mark.parametrize("full_trace_for_rubric", [True, False])
def test_mcp_trace_not_ending_with_ai_message_autofails(
    full_trace_for_rubric: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        result, script = _run(
            {},
            answering=MCP,
            rubric=RUBRIC,
            evaluation_mode="template_and_rubric",
            use_full_trace_for_rubric=full_trace_for_rubric,
            resources_extra={"agent": _agent(BROKEN_TRACE)},
        )
    assert any("TraceValidationAutoFail override" in r.getMessage() for r in caplog.records)
    assert script.calls == []  # parsing skipped
    template = result.template
    assert template is not None
    assert template.verify_result is False
    assert template.template_verification_performed is True
    assert result.metadata.failure is not None
    assert result.metadata.failure.category == "trace_validation"
    assert template.answering_mcp_servers == ["search"]
    assert template.agent_metrics == {"tool_calls": 1}
    assert result.trace_extraction_error is not None and "tool" in result.trace_extraction_error
    assert result.metadata.completed_without_errors is True
    assert (result.rubric is not None) is full_trace_for_rubric


def test_valid_mcp_trace_parses_the_final_ai_message() -> None:
    result, script = _run(
        {"parsing": [{"gene": "BCL2"}]},
        answering=MCP,
        resources_extra={"agent": _agent(GOOD_TRACE)},
    )
    assert result.template is not None and result.template.verify_result is True
    assert result.evaluation_input == "It is BCL2."
    assert result.used_full_trace is False
    assert [m["block_index"] for m in result.template.trace_messages] == [0, 1, 2, 3]
    assert "<response>\nIt is BCL2.\n</response>" in script.calls[0].messages[-1]["content"]


def test_manual_traces_skip_trace_validation(tmp_path: Any) -> None:
    path = tmp_path / "answers.json"
    path.write_text('{"q1": [{"role": "user", "content": "q"}, {"role": "tool", "content": "x"}]}')
    manual = ModelConfig(
        model_name="recorded",
        interface="manual",
        manual_traces_path=str(path),
        mcp_urls_dict={"search": "http://mcp"},
    )
    result, script = _run(
        {"parsing": [{"gene": "BCL2"}]}, answering=manual, use_full_trace_for_template=True
    )
    assert script.stages_called() == ["parsing"]  # the manual answer needs no model call
    assert result.trace_extraction_error is None
    assert result.metadata.completed_without_errors is True
    assert result.template is not None and result.template.verify_result is True
    assert result.used_full_trace is True


class _Embedder:
    """Fixed similarity: the real model's score for two strings cannot be chosen."""

    model_name = "all-MiniLM-L6-v2"

    def similarity(self, a: str, b: str) -> float:
        return 0.95


REGEX_TEMPLATE = """
from pydantic import Field

class Answer(BaseAnswer):
    gene: str = Field(description="The gene")

    def model_post_init(self, __context):
        self.correct = {"gene": "BCL2"}
        self.regex = {"cites": {"pattern": r"\\[\\d+\\]", "expected": 1, "match_type": "count"}}

    def verify(self) -> bool:
        return self.gene == self.correct["gene"]
"""


@pytest.mark.parametrize(
    ("answer", "verified"), [("B-cell lymphoma 2 [1]", True), ("B-cell lymphoma 2", False)]
)
def test_embedding_overrides_field_failure_but_never_regex(answer: str, verified: bool) -> None:
    script = ScriptedModels(
        {
            "answerer": {"answer_generation": [answer]},
            "judge": {
                "parsing": [{"gene": "B-cell lymphoma 2"}],
                "embedding_check": [{"reasoning": "same gene", "semantically_equivalent": True}],
            },
        }
    )
    [result] = verify_question(
        make_question(REGEX_TEMPLATE),
        ANSWERING,
        [JUDGE],
        make_config(embedding_check_enabled=True),
        replicate=None,
        resources=make_resources(script, embedder=lambda _name: _Embedder()),
    )
    template = result.template
    assert template is not None
    assert template.embedding_check_performed is True
    assert template.embedding_similarity_score == pytest.approx(0.95)
    assert template.embedding_override_applied is True
    assert template.regex_overall_success is verified
    assert template.verify_result is verified


def test_embedding_check_skipped_when_fields_pass() -> None:
    result, script = _run({"parsing": [{"gene": "BCL2"}]}, embedding_check_enabled=True)
    assert script.stages_called("judge") == ["parsing"]
    assert result.template is not None and result.template.embedding_check_performed is False


def test_non_fatal_check_failure_continues(caplog: pytest.LogCaptureFixture) -> None:
    error = ModelCallError("503 Service Unavailable after 4 attempts", transient=True, attempts=4)
    with caplog.at_level(logging.WARNING):
        result, _ = _run(
            {"abstention_check": [error], "parsing": [{"gene": "BCL2"}]}, abstention_enabled=True
        )
    assert result.metadata.completed_without_errors is True
    assert result.template is not None and result.template.verify_result is True
    assert result.template.abstention_check_performed is False
    assert any("abstention check failed" in r.getMessage() for r in caplog.records)


def test_rubric_failure_is_non_fatal() -> None:
    from verifleet.schemas import LLMRubricTrait

    rubric = Rubric(
        llm_traits=[LLMRubricTrait(name="clear", description="Is it clear?", kind="boolean")]
    )
    error = ModelCallError("429 Too Many Requests after 4 attempts", transient=True, attempts=4)
    result, _ = _run(
        {"parsing": [{"gene": "BCL2"}], "rubric_evaluation": [error]},
        rubric=rubric,
        evaluation_mode="template_and_rubric",
    )
    assert result.metadata.completed_without_errors is True
    assert result.rubric is None  # the spec: rubric_result=None on failure
    assert result.template is not None and result.template.verify_result is True


def _deep_judgment_run(excerpts: list[dict[str, str]]) -> tuple[VerificationResult, ScriptedModels]:
    replies = [
        {"gene": excerpts},
        {"gene": "The response names BCL2."},
        {"gene": "BCL2"},
    ]
    return _run(
        {"deep_judgment": replies},
        answer="The answer is BCL2.",
        deep_judgment_enabled=True,
        deep_judgment_excerpt_retry_attempts=0,
    )


def test_deep_judgment_parse_with_grounded_excerpts_passes() -> None:
    result, script = _deep_judgment_run([{"text": "The answer is BCL2", "confidence": "high"}])
    assert script.stages_called("judge") == ["deep_judgment"] * 3
    assert result.deep_judgment is not None and result.deep_judgment.deep_judgment_performed
    assert result.deep_judgment.attributes_without_excerpts in (None, [])
    assert result.template is not None and result.template.verify_result is True


def test_deep_judgment_autofail_when_an_attribute_has_no_excerpt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        result, _ = _deep_judgment_run([])
    assert result.deep_judgment is not None
    assert result.deep_judgment.attributes_without_excerpts == ["gene"]
    assert result.template is not None
    assert result.template.parsed_llm_response == {"gene": "BCL2"}
    assert result.template.verify_result is False  # correct value, but ungrounded
    assert result.metadata.completed_without_errors is True
    assert any("DeepJudgmentAutoFail override" in r.getMessage() for r in caplog.records)
    assert result.metadata.failure is not None
    assert result.metadata.failure.stage == "DeepJudgmentAutoFail"
    assert result.deep_judgment is not None and result.deep_judgment.deep_judgment_mode == "full"


def test_unreachable_mcp_server_fails_the_unit_with_a_clear_error() -> None:
    # Nothing listens on port 1 of the loopback: the built-in runtime cannot connect.
    dead = MCP.model_copy(update={"mcp_urls_dict": {"search": "http://127.0.0.1:1/mcp"}})
    result, script = _run({}, answering=dead)
    assert script.calls == []
    error = result.metadata.error or ""
    assert error.startswith(
        "answer generation failed: MCP server 'search' (http://127.0.0.1:1/mcp) cannot be used:"
    )
    assert result.template is not None and result.template.answering_mcp_servers == ["search"]
    failure = result.metadata.failure
    assert failure is not None and (failure.category, failure.stage) == (
        "unexpected_error",
        "generate_answer",
    )


def test_stdio_mcp_servers_need_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERIFLEET_MCP_ALLOW_STDIO", raising=False)
    local = MCP.model_copy(update={"mcp_urls_dict": {"files": "stdio:python -m some_server"}})
    result, _ = _run({}, answering=local)
    assert "VERIFLEET_MCP_ALLOW_STDIO=1" in (result.metadata.error or "")


def test_template_summary_counts_auto_failed_results_as_the_original_does() -> None:
    """One pass, one recursion-limit and one trace-validation auto-fail: the
    original reports 1 of 3 (pass rate 0.33), and so must the summary and the
    pass-rate aggregate, which read the same results."""
    passed, _ = _run({"parsing": [{"gene": "BCL2"}]})
    recursion, _ = _run({}, cached=CachedAnswer(raw_llm_response="…", recursion_limit_reached=True))
    trace, _ = _run({}, answering=MCP, resources_extra={"agent": _agent(BROKEN_TRACE)})
    results = VerificationResultSet(results=[passed, recursion, trace])
    summary = results.get_template_results().get_template_summary()
    assert (summary["num_results"], summary["num_passed"], summary["num_failed"]) == (3, 1, 2)
    assert summary["pass_rate"] == pytest.approx(1 / 3)
    by_model = results.get_template_results().aggregate_pass_rate(by="parsing_model")
    assert list(by_model.values()) == [pytest.approx(1 / 3)]
    assert results.get_summary()["num_with_template"] == 3
