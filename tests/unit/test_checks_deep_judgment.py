"""Deep-judgment parsing against a scripted judge.

The judge is scripted because the tests need exact excerpts on demand: verbatim,
near-verbatim, invented, malformed. The fuzzy matching and section building run
for real.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from _support.judges import ScriptedJudge
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from verifleet.pipeline._checks import (
    CheckReplyError,
    DeepJudgmentError,
    deep_judgment_parse,
    excerpt_similarity,
)
from verifleet.schemas import ModelConfig, VerificationConfig
from verifleet.templates import BaseAnswer, build_answer

QUESTION = "Where is KRAS most essential, and which drug class targets it?"
RESPONSE = (
    "KRAS is most essential in the pancreas, where it drives nearly all ductal "
    "adenocarcinomas. Covalent G12C inhibitors such as sotorasib target the mutant protein."
)
SCHEMA = {
    "type": "object",
    "properties": {
        "tissue": {"type": "string", "description": "Organ where KRAS is most essential"},
        "drug_class": {"type": "string", "description": "Class of drugs targeting KRAS"},
    },
    "required": ["tissue", "drug_class"],
}
PARAMETERS = {"tissue": "pancreas", "drug_class": "G12C inhibitors"}
REASONING = {"tissue": "The excerpt names the pancreas.", "drug_class": "Names G12C inhibitors."}


def excerpt(text: str, confidence: str = "high") -> dict[str, str]:
    return {"text": text, "confidence": confidence}


GOOD_EXCERPTS = {
    "tissue": [excerpt("KRAS is most essential in the pancreas")],
    "drug_class": [excerpt("Covalent G12C inhibitors such as sotorasib", "medium")],
}


def make_config(**overrides: Any) -> VerificationConfig:
    return VerificationConfig(
        parsing_models=[ModelConfig(model_name="judge", model_provider="openai")],
        parsing_only=True,
        deep_judgment_enabled=True,
        **overrides,
    )


def parse(judge: ScriptedJudge, *, config: VerificationConfig | None = None, **kw: Any) -> Any:
    return deep_judgment_parse(
        judge,
        question=QUESTION,
        response=RESPONSE,
        answer_cls=BaseAnswer,
        field_schema=kw.pop("field_schema", SCHEMA),
        config=config or make_config(),
        **kw,
    )


def test_three_stages_fill_the_section_and_parameters() -> None:
    judge = ScriptedJudge(GOOD_EXCERPTS, REASONING, PARAMETERS)
    outcome = parse(judge, instructions="Prefer organ names over tissue types.")
    assert outcome.parsed == PARAMETERS
    assert outcome.attributes_without_excerpts == []
    section = outcome.section
    assert section.deep_judgment_enabled and section.deep_judgment_performed
    assert section.deep_judgment_stages_completed == ["excerpts", "reasoning", "parameters"]
    assert section.deep_judgment_model_calls == 3
    assert section.deep_judgment_excerpt_retry_count == 0
    assert section.attribute_reasoning == REASONING
    assert section.deep_judgment_search_enabled is False
    assert section.hallucination_risk_assessment is None
    tissue = section.extracted_excerpts["tissue"][0]
    assert tissue["text"] == "KRAS is most essential in the pancreas"
    assert tissue["confidence"] == "high"
    assert tissue["similarity_score"] == 1.0
    assert [c["stage"] for c in judge.calls] == ["deep_judgment"] * 3
    for call in judge.calls:
        assert "Prefer organ names over tissue types." in call["messages"][0]["content"]
    assert QUESTION in judge.user(0) and RESPONSE in judge.user(0)
    assert "Organ where KRAS is most essential" in judge.calls[0]["messages"][0]["content"]
    # Stage 2 reasons from the excerpts; stage 3 sees reasoning and the schema it fills.
    assert "KRAS is most essential in the pancreas" in judge.user(1)
    assert "The excerpt names the pancreas." in judge.user(2)
    assert judge.calls[2]["schema"] == SCHEMA


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("KRAS is most essential in the pancreas", True),
        ("kras is most  essential in the Pancreas.", True),
        ("\u201cKRAS is most esential in the pancreas\u2026\u201d", True),
        ("The liver is where KRAS matters most", False),
        ("Venetoclax targets BCL-2 and induces apoptosis", False),
        ("", False),
    ],
)
def test_fuzzy_validation_at_the_default_threshold(text: str, accepted: bool) -> None:
    assert (excerpt_similarity(text, RESPONSE) >= 0.80) is accepted


# ASCII only: Unicode normalisation can merge a sliced-off combining mark.
@given(st.text(st.characters(codec="ascii"), min_size=1, max_size=200), st.data())
def test_any_verbatim_span_scores_one(response: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(response) - 1))
    end = data.draw(st.integers(start + 1, len(response)))
    span = response[start:end]
    score = excerpt_similarity(span, response)
    assert 0.0 <= score <= 1.0
    if any(ch.isalnum() for ch in span):
        assert score == 1.0


def test_excerpt_longer_than_the_response_cannot_match_by_containment() -> None:
    padded = RESPONSE + " It is also the most essential gene in every tissue of the body."
    assert excerpt_similarity(padded, "KRAS is most essential") < 0.5


def test_invented_excerpt_is_retried_with_feedback_naming_the_attribute() -> None:
    invented = "KRAS is indispensable in hepatocytes"
    judge = ScriptedJudge(
        {"tissue": [excerpt(invented)], "drug_class": GOOD_EXCERPTS["drug_class"]},
        {"tissue": GOOD_EXCERPTS["tissue"]},
        REASONING,
        PARAMETERS,
    )
    outcome = parse(judge)
    section = outcome.section
    assert section.deep_judgment_excerpt_retry_count == 1
    assert section.deep_judgment_model_calls == 4
    assert outcome.attributes_without_excerpts == []
    assert [e["text"] for e in section.extracted_excerpts["tissue"]] == [
        "KRAS is most essential in the pancreas"
    ]
    # Only the failed attribute is asked again, and the feedback says what was wrong.
    assert judge.calls[1]["schema"]["required"] == ["tissue"]
    feedback = judge.user(1)
    assert "tissue" in feedback and invented in feedback
    assert "drug_class:" not in feedback
    assert "<feedback>" not in judge.user(0)


def test_attribute_without_excerpts_after_exhausted_retries() -> None:
    bogus = {"tissue": [excerpt("KRAS matters most in the thyroid gland")]}
    judge = ScriptedJudge(
        {**bogus, "drug_class": GOOD_EXCERPTS["drug_class"]},
        bogus,
        bogus,
        {"tissue": "No excerpt supports a tissue.", "drug_class": "G12C inhibitors."},
        {"tissue": "unknown", "drug_class": "G12C inhibitors"},
    )
    outcome = parse(judge, config=make_config(deep_judgment_excerpt_retry_attempts=2))
    section = outcome.section
    assert outcome.attributes_without_excerpts == ["tissue"]
    assert section.attributes_without_excerpts == ["tissue"]
    assert section.extracted_excerpts["tissue"] == []
    assert section.deep_judgment_excerpt_retry_count == 2
    assert section.deep_judgment_model_calls == 5
    # Reasoning still runs and is told the attribute has no evidence.
    assert section.attribute_reasoning["tissue"] == "No excerpt supports a tissue."
    assert "(no excerpts found in the answer)" in judge.user(3)


def test_zero_retry_attempts_means_a_single_excerpt_call() -> None:
    judge = ScriptedJudge(
        {"tissue": [excerpt("made up entirely")], "drug_class": []}, REASONING, PARAMETERS
    )
    outcome = parse(judge, config=make_config(deep_judgment_excerpt_retry_attempts=0))
    assert outcome.attributes_without_excerpts == ["tissue", "drug_class"]
    assert outcome.section.deep_judgment_excerpt_retry_count == 0
    assert outcome.section.deep_judgment_model_calls == 3


def test_an_empty_list_is_the_judges_final_word() -> None:
    judge = ScriptedJudge(
        {"tissue": GOOD_EXCERPTS["tissue"], "drug_class": []}, REASONING, PARAMETERS
    )
    outcome = parse(judge)
    assert outcome.attributes_without_excerpts == ["drug_class"]
    assert outcome.section.deep_judgment_excerpt_retry_count == 0
    assert len(judge.calls) == 3


def test_excerpts_are_capped_deduplicated_and_invalid_ones_dropped() -> None:
    proposals = [
        excerpt("Totally invented sentence about mice"),
        excerpt("KRAS is most essential in the pancreas"),
        excerpt("KRAS is most essential in the pancreas"),
        excerpt("drives nearly all ductal adenocarcinomas", "medium"),
        excerpt("sotorasib", "low"),
    ]
    judge = ScriptedJudge(
        {"tissue": proposals, "drug_class": GOOD_EXCERPTS["drug_class"]}, REASONING, PARAMETERS
    )
    outcome = parse(judge, config=make_config(deep_judgment_max_excerpts_per_attribute=2))
    kept = outcome.section.extracted_excerpts["tissue"]
    assert [e["text"] for e in kept] == [
        "KRAS is most essential in the pancreas",
        "drives nearly all ductal adenocarcinomas",
    ]
    assert all(e["similarity_score"] >= 0.8 for e in kept)
    assert "at most 2 excerpt(s)" in judge.calls[0]["messages"][0]["content"]


@pytest.mark.parametrize(
    "reply",
    [
        {"tissue": GOOD_EXCERPTS["tissue"]},
        {"tissue": "not a list", "drug_class": []},
        {"tissue": [{"text": "KRAS", "confidence": "certain"}], "drug_class": []},
        {"tissue": [{"confidence": "high"}], "drug_class": []},
    ],
)
def test_malformed_excerpt_reply_raises(reply: dict[str, Any]) -> None:
    with pytest.raises(CheckReplyError) as info:
        parse(ScriptedJudge(reply))
    assert info.value.stage == "deep_judgment"


def test_malformed_reasoning_reply_names_the_attribute() -> None:
    judge = ScriptedJudge(GOOD_EXCERPTS, {"tissue": "fine", "drug_class": 7})
    with pytest.raises(CheckReplyError, match="drug_class"):
        parse(judge)


def test_search_enabled_without_a_search_function_fails_before_any_call() -> None:
    judge = ScriptedJudge()
    with pytest.raises(DeepJudgmentError, match="search"):
        parse(judge, config=make_config(deep_judgment_search_enabled=True))
    assert judge.calls == []


def test_search_enhancement_rates_each_excerpt_and_each_attribute() -> None:
    searched: list[list[str]] = []

    def search(queries: Sequence[str]) -> list[str]:
        searched.append(list(queries))
        return [f"evidence for: {q}" for q in queries]

    ratings = {
        "claim_0": {"hallucination_risk": "none", "justification": "confirmed"},
        "claim_1": {"hallucination_risk": "medium", "justification": "partly"},
    }
    judge = ScriptedJudge(GOOD_EXCERPTS, ratings, REASONING, PARAMETERS)
    outcome = parse(judge, config=make_config(deep_judgment_search_enabled=True), search=search)
    section = outcome.section
    assert searched == [
        ["KRAS is most essential in the pancreas", "Covalent G12C inhibitors such as sotorasib"]
    ]
    assert section.deep_judgment_search_enabled is True
    assert section.hallucination_risk_assessment == {"tissue": "none", "drug_class": "medium"}
    tissue = section.extracted_excerpts["tissue"][0]
    assert tissue["search_results"] == "evidence for: KRAS is most essential in the pancreas"
    assert tissue["hallucination_justification"] == "confirmed"
    assert section.deep_judgment_stages_completed == [
        "excerpts",
        "hallucination_assessment",
        "reasoning",
        "parameters",
    ]
    assert section.deep_judgment_model_calls == 4
    assert "evidence for:" in judge.user(2)


def test_failing_search_service_is_skipped_not_fatal() -> None:
    # A real search outage cannot be produced on demand; this function raises like one.
    def search(queries: Sequence[str]) -> list[str]:
        raise ConnectionError("search service unreachable")

    judge = ScriptedJudge(GOOD_EXCERPTS, REASONING, PARAMETERS)
    outcome = parse(judge, config=make_config(deep_judgment_search_enabled=True), search=search)
    assert outcome.section.hallucination_risk_assessment is None
    assert outcome.section.deep_judgment_stages_completed == ["excerpts", "reasoning", "parameters"]


class KrasAnswer(BaseAnswer):
    tissue: str = Field(description="Organ where KRAS is most essential")

    def model_post_init(self, __context: Any) -> None:
        self.correct = {"tissue": "pancreas"}

    def verify(self) -> bool:
        return self.tissue.strip().lower() == self.correct["tissue"]


def test_schema_is_derived_from_the_template_and_parameters_fit_it() -> None:
    judge = ScriptedJudge(
        {"tissue": GOOD_EXCERPTS["tissue"]},
        {"tissue": "The pancreas."},
        {"tissue": "Pancreas", "correct": "hijacked"},
    )
    outcome = deep_judgment_parse(
        judge, question=QUESTION, response=RESPONSE, answer_cls=KrasAnswer, config=make_config()
    )
    assert list(judge.calls[0]["schema"]["properties"]) == ["tissue"]
    assert "Organ where KRAS is most essential" in judge.calls[0]["messages"][0]["content"]
    assert outcome.parsed == {"tissue": "Pancreas"}
    assert build_answer(KrasAnswer, outcome.parsed).verify() is True


def test_schema_without_properties_is_rejected() -> None:
    with pytest.raises(DeepJudgmentError, match="no fields"):
        parse(ScriptedJudge(), field_schema={"type": "object", "properties": {}})
