"""Agentic traits in rubric evaluation: investigate, then extract; failures stay
per trait. The investigation runs for real in tests/integration/test_agents.py;
here it is a function, to make it fail on demand."""

from __future__ import annotations

from typing import Any

from test_rubric_eval_fakes import ScriptedJudge, bad_json

from verifleet.pipeline._llm_protocol import Message
from verifleet.pipeline._rubric_eval import evaluate_rubric
from verifleet.schemas import AgenticRubricTrait, ModelConfig, Rubric, VerificationConfig

CONFIG = VerificationConfig(
    parsing_models=[ModelConfig(model_name="judge")],
    parsing_only=True,
    evaluation_mode="rubric_only",
)
SOURCES = AgenticRubricTrait(name="sources", kind="score", description="Check the citations.")
FORMAT = AgenticRubricTrait(
    name="format",
    kind="literal",
    classes=["bad", "good"],
    description="Check the format.",
    context_mode="workspace_only",
)


def test_each_trait_is_investigated_then_extracted() -> None:
    seen: dict[str, list[Message]] = {}

    def investigate(trait: Any, messages: list[Message]) -> str:
        seen[trait.name] = messages
        if trait.name == "format":
            raise TimeoutError("after 120 s")
        return f"Looked at {trait.name}: all three citations resolve."

    judge = ScriptedJudge([{"sources": 4}])
    outcome = evaluate_rubric(
        judge,
        question="Q?",
        response="The answer, citing [1].",
        rubric=Rubric(agentic_traits=[SOURCES, FORMAT]),
        config=CONFIG,
        question_id="q1",
        investigate=investigate,
    )
    rubric = outcome.rubric
    assert rubric.agentic_trait_scores == {"sources": 4}
    assert rubric.agentic_trait_investigation_traces == {
        "sources": "Looked at sources: all three citations resolve."
    }
    assert outcome.failed_traits == {"format": "investigation failed: timed out (after 120 s)"}
    # The judge extracts from the investigation, with the trait's value schema.
    assert len(judge.calls) == 1
    assert "all three citations resolve" in judge.calls[0].messages[-1]["content"]
    assert judge.calls[0].schema is not None
    assert judge.calls[0].schema["properties"]["sources"]["maximum"] == 5
    # context_mode decides whether the investigating agent sees the answer.
    assert "citing [1]" in seen["sources"][-1]["content"]
    assert "citing [1]" not in seen["format"][-1]["content"]
    assert "Check the citations." in seen["sources"][0]["content"]


EVIDENCE_SCHEMA = {
    "type": "object",
    "properties": {
        "claims_checked": {"type": "integer"},
        "summary": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["claims_checked", "summary", "sources"],
}
# As the original stores a template kind in a checkpoint.
EVIDENCE = AgenticRubricTrait.model_validate(
    {
        "name": "evidence",
        "kind": {"type": "template", "schema": EVIDENCE_SCHEMA},
        "description": "Check each claim against the literature.",
    }
)


def _evaluate(judge: ScriptedJudge, investigation: str) -> Any:
    seen: list[list[Message]] = []

    def investigate(trait: Any, messages: list[Message]) -> str:
        seen.append(messages)
        return investigation

    outcome = evaluate_rubric(
        judge,
        question="Q?",
        response="BCL2 causes it [1].",
        rubric=Rubric(agentic_traits=[EVIDENCE]),
        config=CONFIG,
        question_id="q1",
        investigate=investigate,
    )
    return outcome, seen


def test_a_template_kind_agentic_trait_takes_the_json_its_investigation_ends_with() -> None:
    judge = ScriptedJudge([])
    investigation = (
        'Searched {"query": "BCL2"}; two papers agree.\n'
        '{"claims_checked": 2, "summary": "both hold", "sources": ["pubmed", "pmc"]}'
    )
    outcome, seen = _evaluate(judge, investigation)
    rubric = outcome.rubric
    assert rubric.agentic_trait_scores == {
        "evidence.claims_checked": 2,
        "evidence.summary": "both hold",
        "evidence.sources": ["pubmed", "pmc"],
    }
    assert rubric.agentic_trait_extraction_metadata == {
        "evidence": {"method": "local_json", "local_json_error": None, "parser_error": None}
    }
    assert judge.calls == [] and outcome.failed_traits == {}
    # The agent was told to end with an object of the trait's schema, as the original tells it.
    system = seen[0][0]["content"]
    assert "End your final response with a JSON object matching this schema" in system
    assert '"claims_checked"' in system


def test_a_template_kind_agentic_trait_falls_back_to_the_judge() -> None:
    judge = ScriptedJudge([{"claims_checked": 1, "summary": "one holds", "sources": []}])
    outcome, _ = _evaluate(judge, "I checked one claim; it holds. No sources listed.")
    rubric = outcome.rubric
    assert rubric.agentic_trait_scores == {
        "evidence.claims_checked": 1,
        "evidence.summary": "one holds",
        "evidence.sources": [],
    }
    assert rubric.agentic_trait_extraction_metadata == {
        "evidence": {
            "method": "parser_after_local_json_failed",
            "local_json_error": "no JSON object in the investigation",
            "parser_error": None,
        }
    }
    [call] = judge.calls
    assert call.schema == EVIDENCE_SCHEMA
    assert "I checked one claim" in call.messages[-1]["content"]


def test_a_template_kind_agentic_trait_the_judge_cannot_fill_fails_alone() -> None:
    judge = ScriptedJudge([bad_json()])
    outcome, _ = _evaluate(judge, 'Partial: {"claims_checked": "many"}')
    rubric = outcome.rubric
    assert not rubric.agentic_trait_scores
    metadata = (rubric.agentic_trait_extraction_metadata or {})["evidence"]
    assert metadata["method"] == "failed"
    assert "claims_checked" in (metadata["local_json_error"] or "")
    assert "evidence" in outcome.failed_traits
