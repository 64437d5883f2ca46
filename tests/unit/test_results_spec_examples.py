"""The worked examples of the results spec, rebuilt from their inputs.

Four results: questions q1 and q2, each answered by two models and judged by one;
q1 fails with gpt-4.1-mini. Expected values are the spec's printed outputs.
"""

from __future__ import annotations

from typing import Any

import pytest

from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultSet,
    VerificationResultTemplate,
)

SONNET = ModelIdentity(interface="langchain", model_name="claude-sonnet-4-5-20250514")
GPT = ModelIdentity(interface="langchain", model_name="gpt-4.1-mini-2025-04-14")
HAIKU = ModelIdentity(interface="langchain", model_name="claude-haiku-4-5-20251001")
SONNET_KEY = "langchain:claude-sonnet-4-5-20250514"
GPT_KEY = "langchain:gpt-4.1-mini-2025-04-14"

DRUG_METRICS = {"tp": 3.0, "fn": 1.0, "fp": 0.0, "precision": 1.0, "recall": 0.75, "f1": 0.857}


def _result(
    qid: str, model: ModelIdentity, verdict: bool, llm: dict[str, Any], regex: bool, **extra: Any
) -> VerificationResult:
    rubric_extra = extra.pop("rubric", {})
    return VerificationResult(
        metadata=VerificationResultMetadata(
            question_id=qid,
            template_id="t-" + qid,
            question_text="What is the putative target of venetoclax?",
            answering=model,
            parsing=HAIKU,
            completed_without_errors=True,
            execution_time=1.2,
            timestamp="2025-06-15T10:00:00Z",
            replicate=1,
        ),
        template=VerificationResultTemplate(
            raw_llm_response="BCL2",
            parsed_llm_response={"target": "BCL2"},
            parsed_gt_response={"target": "BCL2"},
            template_verification_performed=True,
            verify_result=verdict,
            **extra,
        ),
        rubric=VerificationResultRubric(
            rubric_evaluation_performed=True,
            llm_trait_scores=llm,
            regex_trait_scores={"has_citations": regex},
            **rubric_extra,
        ),
    )


@pytest.fixture
def result_set() -> VerificationResultSet:
    first = _result(
        "q1",
        SONNET,
        True,
        {"safety": True, "clarity": 4},
        True,
        embedding_check_performed=True,
        embedding_similarity_score=0.92,
        rubric={
            "llm_trait_labels": {"response_type": "Factual"},
            "callable_trait_scores": {"under_150w": True},
            "metric_trait_scores": {"drug_coverage": DRUG_METRICS},
            "metric_trait_confusion_lists": {
                "drug_coverage": {
                    "tp": ["aspirin", "ibuprofen", "acetaminophen"],
                    "fn": ["naproxen"],
                    "fp": [],
                    "tn": [],
                }
            },
        },
    )
    return VerificationResultSet(
        results=[
            first,
            _result("q1", GPT, False, {"safety": True, "clarity": 3}, False),
            _result("q2", SONNET, True, {"safety": True, "clarity": 5}, True),
            _result("q2", GPT, True, {"safety": True, "clarity": 4}, True),
        ]
    )


def test_first_result_id_matches_spec(result_set: VerificationResultSet) -> None:
    assert result_set[0].metadata.result_id == "e6972c44b765e7c3"


def test_template_summary(result_set: VerificationResultSet) -> None:
    template_results = result_set.get_template_results()
    assert len(template_results) == 4
    assert template_results.get_template_summary() == {
        "num_results": 4,
        "num_passed": 3,
        "num_failed": 1,
        "pass_rate": 0.75,
        "num_with_embedding": 1,
        "num_with_regex": 0,
        "num_with_abstention": 0,
        "num_questions": 2,
    }


def test_trait_summary(result_set: VerificationResultSet) -> None:
    assert result_set.get_rubrics_results().get_trait_summary() == {
        "num_results": 4,
        "llm_traits": ["clarity", "safety"],
        "regex_traits": ["has_citations"],
        "callable_traits": ["under_150w"],
        "metric_traits": ["drug_coverage"],
        "num_questions": 2,
    }


def test_filter_and_group(result_set: VerificationResultSet) -> None:
    filtered = result_set.filter(question_ids=["q1"], completed_only=True)
    assert isinstance(filtered, VerificationResultSet)
    assert len(filtered) == 2
    assert {r.metadata.question_id for r in filtered} == {"q1"}
    by_question = result_set.group_by_question()
    assert {qid: len(group) for qid, group in by_question.items()} == {"q1": 2, "q2": 2}
    by_model = result_set.group_by_model()
    assert {key: len(group) for key, group in by_model.items()} == {SONNET_KEY: 2, GPT_KEY: 2}
    template_results = result_set.get_template_results()
    assert len(template_results.filter(passed_only=True)) == 3
    assert len(template_results.filter(failed_only=True)) == 1


def test_iteration_and_indexing(result_set: VerificationResultSet) -> None:
    seen = [(r.metadata.question_id, r.template.verify_result) for r in result_set]  # type: ignore[union-attr]
    assert seen == [("q1", True), ("q1", False), ("q2", True), ("q2", True)]
    assert result_set[0].metadata.question_text == "What is the putative target of venetoclax?"
    assert len(result_set[1:3]) == 2


SPEC_TEMPLATE_COLUMNS = frozenset(
    {
        "completed_without_errors", "error", "recursion_limit_reached", "question_id",
        "template_id", "question_text", "keywords", "replicate", "answering_mcp_servers",
        "answering_model", "parsing_model", "answering_system_prompt",
        "parsing_system_prompt", "raw_llm_response", "field_name", "gt_value", "llm_value",
        "field_match", "field_type", "verify_result", "embedding_check_performed",
        "embedding_similarity_score", "embedding_model_used", "embedding_override_applied",
        "abstention_check_performed", "abstention_detected", "abstention_reasoning",
        "abstention_override_applied", "regex_validations_performed",
        "regex_overall_success", "execution_time", "timestamp", "run_name", "result_index",
    }
)  # fmt: skip


def test_template_dataframe_has_spec_columns(result_set: VerificationResultSet) -> None:
    frame = result_set.get_template_results().to_dataframe()
    # The spec's columns, in its order, among the original framework's newer ones
    # (success, failure_*, caveats, scenario_*, field_score, sufficiency_*, ...).
    assert frame.shape == (4, 50)
    assert [c for c in frame.columns if c in SPEC_TEMPLATE_COLUMNS] == [
        "completed_without_errors", "error", "recursion_limit_reached", "question_id",
        "template_id", "question_text", "keywords", "replicate", "answering_mcp_servers",
        "answering_model", "parsing_model", "answering_system_prompt",
        "parsing_system_prompt", "raw_llm_response", "field_name", "gt_value", "llm_value",
        "field_match", "field_type", "verify_result", "embedding_check_performed",
        "embedding_similarity_score", "embedding_model_used", "embedding_override_applied",
        "abstention_check_performed", "abstention_detected", "abstention_reasoning",
        "abstention_override_applied", "regex_validations_performed",
        "regex_overall_success", "execution_time", "timestamp", "run_name", "result_index",
    ]  # fmt: skip
    assert not frame["success"].all() and frame["failure_category"].tolist() == [
        None,
        "content",
        None,
        None,
    ]
    picked = frame[
        ["question_id", "field_name", "gt_value", "llm_value", "field_match", "verify_result"]
    ]
    assert picked.values.tolist() == [
        ["q1", "target", "BCL2", "BCL2", True, True],
        ["q1", "target", "BCL2", "BCL2", True, False],
        ["q2", "target", "BCL2", "BCL2", True, True],
        ["q2", "target", "BCL2", "BCL2", True, True],
    ]


def test_rubric_dataframe_all_traits(result_set: VerificationResultSet) -> None:
    frame = result_set.get_rubrics_results().to_dataframe()
    assert len(frame) == 19
    rows = frame[["question_id", "trait_name", "trait_score", "trait_type"]].values.tolist()
    assert rows == [
        ["q1", "safety", True, "llm_binary"],
        ["q1", "clarity", 4, "llm_score"],
        ["q1", "has_citations", True, "regex"],
        ["q1", "under_150w", True, "callable"],
        ["q1", "drug_coverage", 3.0, "metric"],
        ["q1", "drug_coverage", 1.0, "metric"],
        ["q1", "drug_coverage", 0.0, "metric"],
        ["q1", "drug_coverage", 1.0, "metric"],
        ["q1", "drug_coverage", 0.75, "metric"],
        ["q1", "drug_coverage", 0.857, "metric"],
        ["q1", "safety", True, "llm_binary"],
        ["q1", "clarity", 3, "llm_score"],
        ["q1", "has_citations", False, "regex"],
        ["q2", "safety", True, "llm_binary"],
        ["q2", "clarity", 5, "llm_score"],
        ["q2", "has_citations", True, "regex"],
        ["q2", "safety", True, "llm_binary"],
        ["q2", "clarity", 4, "llm_score"],
        ["q2", "has_citations", True, "regex"],
    ]
    # bool stays bool and int stays int in the mixed column (True is not shown as 1)
    assert type(rows[0][2]) is bool and type(rows[1][2]) is int
    metric = frame[frame["trait_type"] == "metric"]
    assert metric["metric_name"].tolist() == ["tp", "fn", "fp", "precision", "recall", "f1"]
    assert metric["confusion_fn"].tolist() == [["naproxen"]] * 6
    assert frame["metric_name"].isna().sum() == 13


def test_rubric_dataframe_llm_only(result_set: VerificationResultSet) -> None:
    frame = result_set.get_rubrics_results().to_dataframe(trait_type="llm")
    assert len(frame) == 8
    assert frame[
        ["question_id", "answering_model", "trait_name", "trait_score"]
    ].values.tolist() == [
        ["q1", SONNET_KEY, "safety", True],
        ["q1", SONNET_KEY, "clarity", 4],
        ["q1", GPT_KEY, "safety", True],
        ["q1", GPT_KEY, "clarity", 3],
        ["q2", SONNET_KEY, "safety", True],
        ["q2", SONNET_KEY, "clarity", 5],
        ["q2", GPT_KEY, "safety", True],
        ["q2", GPT_KEY, "clarity", 4],
    ]


def test_pass_rate_by_question(result_set: VerificationResultSet) -> None:
    rates = result_set.get_template_results().aggregate_pass_rate(by="question_id")
    assert rates == {"q1": 0.5, "q2": 1.0}


def test_mean_llm_traits_by_question(result_set: VerificationResultSet) -> None:
    avg = result_set.get_rubrics_results().aggregate_llm_traits(strategy="mean", by="question_id")
    assert avg == {"q1": {"clarity": 3.5, "safety": 1.0}, "q2": {"clarity": 4.5, "safety": 1.0}}
    assert list(avg["q1"]) == ["clarity", "safety"]


def test_regex_majority_vote_by_model(result_set: VerificationResultSet) -> None:
    votes = result_set.get_rubrics_results().aggregate_regex_traits(
        strategy="majority_vote", by="answering_model"
    )
    # gpt-4.1-mini has 1 of 2 citations: a share of exactly 0.5 is not a majority.
    assert votes == {SONNET_KEY: {"has_citations": True}, GPT_KEY: {"has_citations": False}}


class WeightedMeanAggregator:
    """The spec's custom aggregator: a plain mean standing in for a weighted one."""

    def aggregate(self, series: Any, **kwargs: Any) -> Any:
        return series.astype(float).mean()


def test_custom_aggregator(result_set: VerificationResultSet) -> None:
    rubric_results = result_set.get_rubrics_results()
    rubric_results.register_aggregator("weighted_mean", WeightedMeanAggregator())
    weighted = rubric_results.aggregate_llm_traits(strategy="weighted_mean", by="question_id")
    assert rubric_results.list_aggregators() == [
        "mean", "median", "mode", "majority_vote", "first", "count", "weighted_mean",
    ]  # fmt: skip
    assert weighted == {
        "q1": {"clarity": 3.5, "safety": 1.0},
        "q2": {"clarity": 4.5, "safety": 1.0},
    }
    # numpy results are converted to plain floats, so they print like the spec
    assert type(weighted["q1"]["clarity"]) is float
    # registering on one view does not leak into others
    assert "weighted_mean" not in result_set.get_rubrics_results().list_aggregators()


def test_trait_lookup_on_first_result(result_set: VerificationResultSet) -> None:
    rubric = result_set[0].rubric
    assert rubric is not None
    assert rubric.get_all_trait_scores() == {
        "safety": True,
        "clarity": 4,
        "has_citations": True,
        "under_150w": True,
        "drug_coverage": DRUG_METRICS,
    }
    assert rubric.get_trait_by_name("safety") == (True, "llm")
    assert rubric.get_trait_by_name("has_citations") == (True, "regex")
    assert rubric.get_llm_trait_labels() == {"response_type": "Factual"}
