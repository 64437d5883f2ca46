"""Agentic traits in rubric evaluation: investigate, then extract; failures stay
per trait. The investigation runs for real in tests/integration/test_agents.py;
here it is a function, to make it fail on demand."""

from __future__ import annotations

from typing import Any

from test_rubric_eval_fakes import ScriptedJudge

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
