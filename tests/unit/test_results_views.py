"""The result views beyond the spec's worked examples: trait kinds, checks, regex,
usage, deep judgment, grouping by replicate and empty inputs."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from _support.factories import make_metadata

from verifleet.schemas import (
    JudgmentResults,
    ModelIdentity,
    RubricJudgmentResults,
    RubricResults,
    TemplateResults,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultRubric,
    VerificationResultSet,
    VerificationResultTemplate,
)
from verifleet.schemas._results import (
    JUDGMENT_COLUMNS,
    RUBRIC_COLUMNS,
    RUBRIC_JUDGMENT_COLUMNS,
    TEMPLATE_FIELD_COLUMNS,
)

ALPHA = ModelIdentity(model_name="alpha")


def rows(frame: pd.DataFrame, columns: list[str]) -> list[list[Any]]:
    """Cells of ``columns``, with every kind of missing value (None, NaN, NA) as None."""
    return [
        [None if not isinstance(v, list | dict) and pd.isna(v) else v for v in row]
        for row in frame[columns].astype(object).values.tolist()
    ]


BETA = ModelIdentity(model_name="beta")
JUDGE = ModelIdentity(model_name="judge")


def make(
    qid: str = "q1",
    model: ModelIdentity = ALPHA,
    replicate: int | None = 1,
    template: dict[str, Any] | None = None,
    rubric: dict[str, Any] | None = None,
    **sections: Any,
) -> VerificationResult:
    return VerificationResult(
        # one second per replicate, so replicates of one question differ in result_id
        metadata=make_metadata(
            qid,
            answering=model,
            parsing=JUDGE,
            replicate=replicate,
            execution_time=1.0,
            timestamp=f"2026-01-01T00:00:0{replicate or 0}Z",
        ),
        template=(
            VerificationResultTemplate(template_verification_performed=True, **template)
            if template is not None
            else None
        ),
        rubric=(
            VerificationResultRubric(rubric_evaluation_performed=True, **rubric)
            if rubric is not None
            else None
        ),
        **sections,
    )


# --- rubric ---------------------------------------------------------------------------


def literal_results() -> RubricResults:
    return RubricResults(
        [
            make(
                "q1",
                rubric={
                    "llm_trait_scores": {"tone": 1, "ok": True, "depth": 4},
                    "llm_trait_labels": {"tone": "Professional"},
                    "callable_trait_scores": {"short": True, "words": 120},
                },
            ),
            make(
                "q1",
                BETA,
                replicate=2,
                rubric={
                    "llm_trait_scores": {"tone": 0, "ok": False, "depth": 2},
                    "llm_trait_labels": {"tone": "Casual"},
                    "callable_trait_scores": {"short": True, "words": 80},
                },
            ),
            make("q2", template={"verify_result": True}),  # no rubric at all
        ]
    )


@pytest.mark.parametrize(
    ("trait_type", "expected"),
    [
        ("llm_score", [("depth", 4), ("depth", 2)]),
        ("llm_binary", [("ok", True), ("ok", False)]),
        ("llm_literal", [("tone", 1), ("tone", 0)]),
        ("callable", [("short", True), ("words", 120), ("short", True), ("words", 80)]),
    ],
)
def test_rubric_frame_trait_type_filters(trait_type: str, expected: list[tuple[str, Any]]) -> None:
    frame = literal_results().to_dataframe(trait_type=trait_type)  # type: ignore[arg-type]
    traits = frame[frame["trait_name"].notna()]
    assert list(zip(traits["trait_name"], traits["trait_score"], strict=True)) == expected


def test_rubric_frame_literal_labels_and_rubricless_rows() -> None:
    frame = literal_results().to_dataframe()
    assert list(frame.columns) == list(RUBRIC_COLUMNS)
    literal = frame[frame["trait_type"] == "llm_literal"]
    assert literal["trait_label"].tolist() == ["Professional", "Casual"]
    # the rubric-less result still appears once, with null trait columns
    orphan = frame[frame["question_id"] == "q2"]
    assert len(orphan) == 1 and orphan["trait_name"].isna().all()


def test_rubric_frame_rejects_unknown_trait_type() -> None:
    with pytest.raises(ValueError, match="trait_type must be one of"):
        literal_results().to_dataframe(trait_type="llm_scores")  # type: ignore[arg-type]


def test_aggregations_by_replicate_and_callable_majority() -> None:
    results = literal_results()
    by_rep = results.aggregate_llm_traits(strategy="mean", by="replicate")
    assert by_rep == {
        1: {"depth": 4.0, "ok": 1.0, "tone": 1.0},
        2: {"depth": 2.0, "ok": 0.0, "tone": 0.0},
    }
    assert all(type(key) is int for key in by_rep)
    assert results.aggregate_callable_traits(by="question_id") == {
        "q1": {"short": True, "words": True}
    }
    assert results.aggregate_callable_traits(strategy="median") == {
        "q1": {"short": 1.0, "words": 100.0}
    }
    counts = results.aggregate_llm_traits(strategy="count", by="question_id")
    assert counts["q1"]["ok"] == {True: 1, False: 1}


def test_aggregate_by_unknown_column_raises_key_error() -> None:
    with pytest.raises(KeyError, match="cannot group by 'model'"):
        literal_results().aggregate_llm_traits(by="model")


def test_metric_aggregation_with_and_without_metric_name() -> None:
    results = RubricResults(
        [
            make("q1", rubric={"metric_trait_scores": {"cov": {"precision": 1.0, "recall": 0.5}}}),
            make(
                "q1",
                BETA,
                rubric={"metric_trait_scores": {"cov": {"precision": 0.5, "recall": 1.0}}},
            ),
        ]
    )
    assert results.aggregate_metric_traits("recall") == {"q1": {"cov": 0.75}}
    assert results.aggregate_metric_traits() == {"q1": {"cov": {"precision": 0.75, "recall": 0.75}}}


def test_rubric_accessors_and_filter() -> None:
    results = literal_results()
    scores = results.get_llm_trait_scores(trait_name="tone")
    assert sorted(scores.values(), key=str) == [{"tone": 0}, {"tone": 1}]
    assert len(results.get_results_with_rubric()) == 2
    assert len(results.filter(answering_models=["beta"])) == 1
    assert results.get_confusion_matrices() == {}


def test_rubric_frame_with_deep_judgment_columns() -> None:
    dj = VerificationResultDeepJudgmentRubric(
        deep_judgment_rubric_performed=True,
        rubric_trait_reasoning={"depth": "covers three mechanisms"},
        extracted_rubric_excerpts={"depth": [{"text": "BCL2 inhibition"}]},
    )
    result = make(rubric={"llm_trait_scores": {"depth": 4, "ok": True}}, deep_judgment_rubric=dj)
    frame = (
        VerificationResultSet(results=[result])
        .get_rubrics_results(include_deep_judgment=True)
        .to_dataframe()
    )
    depth = frame[frame["trait_name"] == "depth"].iloc[0]
    assert depth["trait_reasoning"] == "covers three mechanisms"
    assert json.loads(depth["trait_excerpts"]) == [{"text": "BCL2 inhibition"}]
    ok = frame[frame["trait_name"] == "ok"].iloc[0]
    assert ok["trait_reasoning"] is None and ok["trait_excerpts"] == "[]"


# --- template ---------------------------------------------------------------------------


def checked_results() -> TemplateResults:
    return TemplateResults(
        [
            make(
                "q1",
                template={
                    "verify_result": False,
                    "parsed_gt_response": {"gene": "KRAS", "tissue": "pancreas"},
                    "parsed_llm_response": {"gene": "kras"},
                    "field_results": {"gene": True},
                    "embedding_check_performed": True,
                    "embedding_similarity_score": 0.8,
                    "abstention_check_performed": True,
                    "abstention_detected": True,
                    "regex_validations_performed": True,
                    "regex_validation_results": {"has_gene": True, "has_year": False},
                    "regex_validation_details": {
                        "has_gene": {"pattern": "[A-Z]+", "match_start": 0}
                    },
                    "regex_extraction_results": {"has_gene": "KRAS"},
                    "usage_metadata": {
                        "answer_generation": {
                            "input_tokens": 5,
                            "output_tokens": 7,
                            "model": "alpha",
                        },
                        "parsing": {"input_tokens": 3, "output_tokens": 1},
                        "total": {"input_tokens": 8, "output_tokens": 8, "total_tokens": 16},
                    },
                    "agent_metrics": {"iterations": 2, "tool_calls": 3},
                },
            ),
            make(
                "q1",
                BETA,
                template={
                    "verify_result": True,
                    "embedding_check_performed": True,
                    "embedding_similarity_score": 0.6,
                    "abstention_check_performed": True,
                    "abstention_detected": False,
                },
            ),
            make("q2", rubric={"llm_trait_scores": {"ok": True}}),  # rubric_only result
        ]
    )


def test_field_frame_uses_stored_field_results_and_detects_missing_fields() -> None:
    frame = checked_results().to_dataframe()
    assert list(frame.columns) == list(TEMPLATE_FIELD_COLUMNS)
    first = frame[frame["result_index"] == 0]
    # gene: the template said it matches although the strings differ in case;
    # tissue: missing from the LLM response, so it cannot match.
    assert rows(first, ["field_name", "gt_value", "llm_value", "field_match", "field_type"]) == [
        ["gene", "KRAS", "kras", True, "str"],
        ["tissue", "pancreas", None, False, "str"],
    ]
    # results without fields or without a template keep one row each
    assert frame["result_index"].tolist() == [0, 0, 1, 2]
    assert frame[frame["result_index"] == 2]["verify_result"].isna().all()


def test_template_check_aggregations() -> None:
    results = checked_results()
    assert results.aggregate_pass_rate() == {"q1": 0.5}
    assert results.aggregate_embedding_scores(strategy="mean") == {"q1": pytest.approx(0.7)}
    assert results.aggregate_embedding_scores(strategy="first", by="answering_model") == {
        "langchain:alpha": 0.8,
        "langchain:beta": 0.6,
    }
    assert results.aggregate_abstention_rate() == {"q1": 0.5}
    assert results.aggregate_regex_success_rate() == {"q1": {"has_gene": 1.0, "has_year": 0.0}}
    assert results.aggregate_regex_success_rate(pattern_name="has_year") == {"q1": 0.0}


def test_template_accessors() -> None:
    results = checked_results()
    first_id = results[0].metadata.result_id
    assert results.get_embedding_scores()[first_id] == 0.8
    assert len(results.get_embedding_scores()) == 2
    assert results.get_regex_results(pattern_name="has_year") == {first_id: {"has_year": False}}
    assert list(results.get_abstention_detections().values()) == [True, False]
    assert results.get_mcp_usage()[first_id] == {
        "servers": [],
        "metrics": {"iterations": 2, "tool_calls": 3},
    }
    assert results.get_parsed_responses(question_id="q2") == {}


def test_regex_and_usage_frames() -> None:
    results = checked_results()
    regex = results.to_regex_dataframe()
    assert rows(
        regex, ["pattern_name", "pattern_regex", "matched", "extracted_value", "match_start"]
    ) == [
        ["has_gene", "[A-Z]+", True, "KRAS", 0],
        ["has_year", None, False, None, None],
    ]
    usage = results.to_usage_dataframe()
    assert usage["usage_stage"].tolist() == ["answer_generation", "parsing"]
    # As in the original: the agent's metrics belong to answer generation only,
    # and a totals row has no stage.
    assert rows(usage, ["agent_iterations"]) == [[2], [None]]
    totals = results.to_usage_dataframe(totals_only=True)
    assert rows(totals, ["usage_stage", "total_tokens"]) == [[None, 16]]


def test_every_frame_fills_the_result_columns_it_lists_from_metadata() -> None:
    full = make(
        "q2",
        BETA,
        replicate=2,
        template={
            "regex_validations_performed": True,
            "regex_validation_results": {"has_gene": True},
            "usage_metadata": {"parsing": {"input_tokens": 3}, "total": {"total_tokens": 3}},
        },
        rubric={"llm_trait_scores": {"tone": 1}},
        deep_judgment=VerificationResultDeepJudgment(
            deep_judgment_performed=True, extracted_excerpts={"gene": [{"text": "KRAS"}]}
        ),
        deep_judgment_rubric=VerificationResultDeepJudgmentRubric(
            deep_judgment_rubric_performed=True, deep_judgment_rubric_scores={"tone": 1}
        ),
    )
    full.metadata = full.metadata.model_copy(
        update={
            "keywords": ["oncology"],
            "run_name": "nightly",
            "completed_without_errors": False,
            "error": "late",
            "answering_system_prompt": "be brief",
            "parsing_system_prompt": "be strict",
        }
    )
    meta = full.metadata
    expected = {
        "completed_without_errors": False,
        "error": "late",
        "question_id": "q2",
        "template_id": "t",
        "question_text": "?",
        "keywords": ["oncology"],
        "replicate": 2,
        "answering_model": meta.answering_model,
        "parsing_model": meta.parsing_model,
        "answering_system_prompt": "be brief",
        "parsing_system_prompt": "be strict",
        "execution_time": 1.0,
        "timestamp": meta.timestamp,
        "run_name": "nightly",
        "result_index": 1,
    }
    results = [make("q1"), full]
    template = TemplateResults(results)
    frames = {
        "field": template.to_dataframe(),
        "regex": template.to_regex_dataframe(),
        "usage": template.to_usage_dataframe(),
        "rubric": RubricResults(results).to_dataframe(),
        "judgment": JudgmentResults(results).to_dataframe(),
        "rubric_judgment": RubricJudgmentResults(results).to_dataframe(),
    }
    for name, frame in frames.items():
        listed = [column for column in expected if column in frame.columns]
        assert {"question_id", "replicate", "result_index", "timestamp"} <= set(listed), name
        mine = frame[frame["result_index"] == 1]
        assert len(mine) >= 1, name
        for row in rows(mine, listed):
            assert row == [expected[column] for column in listed], name


def test_template_summary_counts_only_performed_templates() -> None:
    summary = checked_results().get_template_summary()
    assert summary == {
        "num_results": 2,
        "num_passed": 1,
        "num_failed": 1,
        "pass_rate": 0.5,
        "num_with_embedding": 2,
        "num_with_regex": 1,
        "num_with_abstention": 2,
        "num_questions": 1,
    }


def test_view_filter_and_grouping_keep_custom_aggregators() -> None:
    class Maximum:
        def aggregate(self, series: Any, **kwargs: Any) -> float:
            return float(series.astype(float).max())

    results = checked_results()
    results.register_aggregator("max", Maximum())
    narrowed = results.filter(question_ids=["q1"])
    assert "max" in narrowed.list_aggregators()
    assert narrowed.aggregate_embedding_scores(strategy="max") == {"q1": 0.8}
    groups = results.group_by_model()
    assert list(groups) == ["langchain:alpha", "langchain:beta"]
    assert "max" in groups["langchain:beta"].list_aggregators()
    assert {k: len(v) for k, v in results.group_by_replicate().items()} == {1: 3}


@pytest.mark.parametrize(
    "view_type", [TemplateResults, RubricResults, JudgmentResults, RubricJudgmentResults]
)
def test_every_view_slices_filters_and_groups_into_its_own_type(view_type: type[Any]) -> None:
    view = view_type([make("q1"), make("q2", BETA), make("q1", replicate=2)])
    assert repr(view) == f"{view_type.__name__}(3 results)"
    assert type(view[1:]) is view_type and len(view[1:]) == 2
    filtered = view.filter(question_ids=["q1"], replicates=[2])
    assert type(filtered) is view_type
    assert [r.metadata.replicate for r in filtered] == [2]
    assert len(view.filter(answering_models=[])) == 0  # an empty list matches nothing
    assert len(view.filter(answering_models=["beta"], parsing_models=["langchain:judge"])) == 1
    by_question = view.group_by_question()
    assert list(by_question) == ["q1", "q2"]
    assert all(type(group) is view_type for group in by_question.values())
    assert {k: len(v) for k, v in view.group_by_replicate().items()} == {1: 2, 2: 1}
    assert list(view.group_by_model(by="both")) == [
        "langchain:alpha / langchain:judge",
        "langchain:beta / langchain:judge",
    ]


def test_rubric_view_subsets_keep_the_deep_judgment_columns() -> None:
    view = RubricResults(literal_results().results, include_deep_judgment=True)
    subsets = [view.filter(question_ids=["q1"]), view[:1], view.group_by_question()["q1"]]
    for subset in subsets:
        assert subset.include_deep_judgment
        assert "trait_reasoning" in subset.to_dataframe().columns


def test_per_item_accessors_narrow_by_question_and_item() -> None:
    rubrics = literal_results()
    first, second = (r.metadata.result_id for r in rubrics.results[:2])
    assert rubrics.get_callable_trait_scores(question_id="q1", trait_name="words") == {
        first: {"words": 120},
        second: {"words": 80},
    }
    assert rubrics.get_callable_trait_scores(question_id="q2") == {}  # q2 has no rubric
    assert rubrics.get_llm_trait_scores(trait_name="missing") == {}
    assert list(rubrics.get_all_trait_scores(question_id="q1")) == [first, second]

    judged = judged_results()
    rid = judged[0].metadata.result_id
    # an attribute recorded without excerpts is still reported, with its empty list
    assert judged.get_extracted_excerpts(attribute_name="tissue") == {rid: {"tissue": []}}
    assert judged.get_attribute_reasoning(question_id="q2") == {}
    assert list(judged.get_extracted_excerpts()[rid]) == ["gene", "tissue"]

    dj = VerificationResultDeepJudgmentRubric(
        deep_judgment_rubric_performed=True, deep_judgment_rubric_scores={"clarity": 4}
    )
    not_performed = VerificationResultDeepJudgmentRubric(
        deep_judgment_rubric_performed=False, deep_judgment_rubric_scores={"clarity": 1}
    )
    view = RubricJudgmentResults(
        [make(deep_judgment_rubric=dj), make("q2", deep_judgment_rubric=not_performed)]
    )
    assert view.get_trait_scores(trait_name="clarity") == {
        view[0].metadata.result_id: {"clarity": 4}
    }
    assert view.get_trait_reasoning() == {}  # none recorded
    assert view.get_results_with_rubric_judgment() == [view[0]]


def test_empty_views_give_empty_frames_and_aggregates() -> None:
    assert list(TemplateResults([]).to_dataframe().columns) == list(TEMPLATE_FIELD_COLUMNS)
    assert TemplateResults([]).aggregate_pass_rate() == {}
    assert TemplateResults([]).get_template_summary()["pass_rate"] == 0.0
    assert RubricResults([]).aggregate_llm_traits() == {}
    assert RubricResults([]).to_dataframe().empty
    assert JudgmentResults([]).aggregate_excerpt_counts() == {}


# --- deep judgment --------------------------------------------------------------------


def judged_results() -> JudgmentResults:
    dj = VerificationResultDeepJudgment(
        deep_judgment_enabled=True,
        deep_judgment_performed=True,
        deep_judgment_search_enabled=True,
        extracted_excerpts={
            "gene": [
                {"text": "KRAS drives it", "confidence": "high", "similarity_score": 0.9},
                {"text": "mutant KRAS", "confidence": "low", "hallucination_risk": "low"},
            ],
            "tissue": [],
        },
        attribute_reasoning={"gene": "named twice", "tissue": "never stated"},
        attributes_without_excerpts=["tissue"],
        hallucination_risk_assessment={"gene": "low", "tissue": "high"},
        deep_judgment_model_calls=3,
    )
    return JudgmentResults(
        [
            make(
                template={
                    "parsed_gt_response": {"gene": "KRAS"},
                    "parsed_llm_response": {"gene": "KRAS"},
                },
                deep_judgment=dj,
            ),
            make("q2", template={"verify_result": True}),
        ]
    )


def test_judgment_frame_one_row_per_excerpt() -> None:
    frame = judged_results().to_dataframe()
    assert list(frame.columns) == list(JUDGMENT_COLUMNS)
    judged = frame[frame["result_index"] == 0]
    assert rows(judged, ["attribute_name", "excerpt_index", "excerpt_text", "attribute_match"]) == [
        ["gene", 0, "KRAS drives it", True],
        ["gene", 1, "mutant KRAS", True],
        ["tissue", None, None, None],
    ]
    assert judged["attribute_reasoning"].tolist() == ["named twice", "named twice", "never stated"]
    assert judged["attribute_has_excerpts"].tolist() == [True, True, False]
    unjudged = frame[frame["result_index"] == 1]
    assert len(unjudged) == 1 and unjudged["attribute_name"].isna().all()


def test_judgment_accessors_and_aggregates() -> None:
    results = judged_results()
    rid = results[0].metadata.result_id
    assert results.get_hallucination_risks(attribute_name="tissue") == {rid: {"tissue": "high"}}
    assert results.get_attributes_without_excerpts() == {rid: ["tissue"]}
    assert results.get_processing_metrics()[rid]["model_calls"] == 3
    assert results.aggregate_excerpt_counts() == {"q1": {"gene": 2.0, "tissue": 0.0}}
    assert results.aggregate_hallucination_risk() == {
        "q1": {"gene": {"low": 1}, "tissue": {"high": 1}}
    }
    assert len(results.filter(with_search_only=True)) == 1
    summary = results.get_judgment_summary()
    assert (summary["num_results"], summary["num_excerpts"], summary["num_attributes"]) == (1, 2, 2)


def test_rubric_judgment_frame_one_row_per_trait_excerpt() -> None:
    dj = VerificationResultDeepJudgmentRubric(
        deep_judgment_rubric_performed=True,
        deep_judgment_rubric_scores={"clarity": 4, "cites": False},
        rubric_trait_reasoning={"clarity": "clear", "cites": "no sources"},
        extracted_rubric_excerpts={"clarity": [{"text": "a"}, {"text": "b"}], "cites": []},
        traits_without_valid_excerpts=["cites"],
        trait_metadata={"clarity": {"model_calls": 3, "excerpt_retry_count": 1}},
        rubric_hallucination_risk_assessment={"clarity": {"overall_risk": "low"}},
        total_excerpt_retries=1,
        total_deep_judgment_model_calls=5,
    )
    view = RubricJudgmentResults([make(deep_judgment_rubric=dj), make("q2")])
    frame = view.to_dataframe()
    assert list(frame.columns) == list(RUBRIC_JUDGMENT_COLUMNS)
    assert rows(
        frame, ["trait_name", "trait_score", "excerpt_text", "trait_validation_failed"]
    ) == [
        ["clarity", 4, "a", False],
        ["clarity", 4, "b", False],
        ["cites", False, None, True],
    ]
    assert frame["trait_overall_risk"].tolist() == ["low", "low", None]
    assert view.get_excerpt_count_summary()["clarity"] == {
        "mean": 2.0,
        "min": 2,
        "max": 2,
        "total": 2,
    }
    assert view.get_retry_summary() == {
        "total_excerpt_retries": 1,
        "total_model_calls": 5,
        "traits_without_valid_excerpts": {"cites": 1},
    }


def test_rates_ignore_a_replaced_mean_strategy() -> None:
    class Zero:
        def aggregate(self, series: Any, **kwargs: Any) -> float:
            return 0.0

    results = checked_results()
    results.register_aggregator("mean", Zero(), replace=True)
    assert results.aggregate_embedding_scores() == {"q1": 0.0}  # uses the strategy
    assert results.aggregate_pass_rate() == {"q1": 0.5}  # a rate is always a plain mean
