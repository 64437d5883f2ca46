"""VerificationResultSet: incremental building, filtering, grouping, summary, JSON."""

from __future__ import annotations

from typing import Any

import pytest
from _support.factories import make_metadata
from pydantic import ValidationError

from verifleet.schemas import (
    ModelIdentity,
    RecordedError,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultRubric,
    VerificationResultSet,
    VerificationResultTemplate,
)

ALPHA = ModelIdentity(model_name="alpha")
BETA = ModelIdentity(model_name="beta", tools=["search"])
JUDGE = ModelIdentity(model_name="judge")
JUDGE2 = ModelIdentity(model_name="judge2")


def make(
    qid: str = "q1",
    answering: ModelIdentity = ALPHA,
    parsing: ModelIdentity = JUDGE,
    replicate: int | None = 1,
    verdict: bool | None = True,
    ok: bool = True,
    rubric: bool = False,
    judged: bool = False,
    usage: dict[str, Any] | None = None,
) -> VerificationResult:
    return VerificationResult(
        metadata=make_metadata(
            qid,
            answering=answering,
            parsing=parsing,
            replicate=replicate,
            error=None if ok else "boom",
        ),
        template=(
            None
            if verdict is None
            else VerificationResultTemplate(
                template_verification_performed=True, verify_result=verdict, usage_metadata=usage
            )
        ),
        rubric=(
            VerificationResultRubric(rubric_evaluation_performed=True, llm_trait_scores={"c": 3})
            if rubric
            else None
        ),
        deep_judgment=(
            VerificationResultDeepJudgment(deep_judgment_enabled=True, deep_judgment_performed=True)
            if judged
            else None
        ),
    )


def test_add_and_extend_build_incrementally() -> None:
    result_set = VerificationResultSet()
    result_set.add(make("q1"))
    result_set.extend(make(f"q{i}") for i in range(2, 5))
    assert len(result_set) == 4
    assert [r.metadata.question_id for r in result_set] == ["q1", "q2", "q3", "q4"]


def test_add_and_extend_reject_other_types_atomically() -> None:
    result_set = VerificationResultSet()
    with pytest.raises(TypeError, match="expected VerificationResult, got dict"):
        result_set.add({"metadata": {}})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        result_set.extend([make("q1"), "junk"])  # type: ignore[list-item]
    assert len(result_set) == 0


def test_constructor_validates_results() -> None:
    with pytest.raises(ValidationError):
        VerificationResultSet(results=[{"metadata": {"question_id": "q1"}}])  # type: ignore[list-item]


def test_filter_shares_result_objects_and_keeps_order() -> None:
    results = [make("q1"), make("q2"), make("q1", replicate=2)]
    result_set = VerificationResultSet(results=results)
    filtered = result_set.filter(question_ids=["q1"])
    assert [r is orig for r, orig in zip(filtered, (results[0], results[2]), strict=True)] == [
        True,
        True,
    ]


def test_filter_by_models_replicates_and_completion() -> None:
    result_set = VerificationResultSet(
        results=[
            make("q1", ALPHA, JUDGE, 1),
            make("q1", BETA, JUDGE2, 2),
            make("q2", BETA, JUDGE, None, ok=False),
        ]
    )
    assert len(result_set.filter(answering_models=["langchain:beta +[search]"])) == 2
    assert len(result_set.filter(answering_models=["beta"])) == 2  # bare model name
    assert len(result_set.filter(parsing_models=["langchain:judge2"])) == 1
    assert len(result_set.filter(replicates=[None])) == 1
    assert len(result_set.filter(replicates=[1, 2])) == 2
    assert len(result_set.filter(completed_only=True)) == 2
    assert len(result_set.filter(question_ids=[])) == 0  # empty list matches nothing
    assert len(result_set.filter(question_ids=["q1"], answering_models=["alpha"])) == 1


def test_filter_by_sections() -> None:
    result_set = VerificationResultSet(
        results=[make(verdict=None, rubric=True), make(), make(rubric=True, judged=True)]
    )
    assert len(result_set.filter(has_template=True)) == 2
    assert len(result_set.filter(has_rubric=True)) == 2
    assert len(result_set.filter(has_judgment=True)) == 1
    assert len(result_set.filter(has_template=True, has_rubric=True)) == 1


def test_grouping() -> None:
    result_set = VerificationResultSet(
        results=[
            make("q1", ALPHA, JUDGE, 1),
            make("q2", BETA, JUDGE2, None),
            make("q1", BETA, JUDGE, 1),
        ]
    )
    by_replicate = result_set.group_by_replicate()
    assert {k: len(v) for k, v in by_replicate.items()} == {1: 2, None: 1}
    by_parsing = result_set.group_by_model(by="parsing")
    assert {k: len(v) for k, v in by_parsing.items()} == {
        "langchain:judge": 2,
        "langchain:judge2": 1,
    }
    both = result_set.group_by_model(by="both")
    assert list(both) == [
        "langchain:alpha / langchain:judge",
        "langchain:beta +[search] / langchain:judge2",
        "langchain:beta +[search] / langchain:judge",
    ]
    assert isinstance(both["langchain:alpha / langchain:judge"], VerificationResultSet)
    with pytest.raises(ValueError, match="by must be"):
        result_set.group_by_model(by="judge")  # type: ignore[arg-type]


def test_summary_counts_tokens_and_pass_rates() -> None:
    usage = {
        "answer_generation": {"input_tokens": 10, "output_tokens": 20},
        "parsing": {"input_tokens": 5, "output_tokens": 1},
        "rubric_evaluation": {"input_tokens": 7, "output_tokens": 2},
        "total": {"input_tokens": 22, "output_tokens": 23},
    }
    result_set = VerificationResultSet(
        results=[
            make("q1", replicate=1, usage=usage),
            make("q1", replicate=2, verdict=False, rubric=True),
            make("q2", BETA, replicate=1, ok=False, verdict=None),
        ]
    )
    summary = result_set.get_summary()
    assert summary["num_results"] == 3
    assert summary["num_completed"] == 2
    assert summary["num_with_template"] == 2
    assert summary["num_with_rubric"] == 1
    assert (summary["num_questions"], summary["num_models"], summary["num_replicates"]) == (2, 2, 2)
    assert summary["total_execution_time"] == 1.5
    assert summary["tokens"] == {
        "total_input": 22,
        "total_output": 23,
        "template_input": 15,
        "template_output": 21,
        "rubric_input": 7,
        "rubric_output": 2,
    }
    assert summary["template_pass_overall"] == {"total": 2, "passed": 1, "pass_rate": 0.5}
    assert summary["template_pass_by_replicate"][2] == {"total": 1, "passed": 0, "pass_rate": 0.0}
    combo = "langchain:beta +[search] | langchain:judge"
    assert summary["completion_by_combo"][combo] == {
        "total": 1,
        "completed": 0,
        "completion_rate": 0.0,
    }
    assert result_set.get_question_ids() == ["q1", "q2"]


def test_empty_summary_has_no_pass_rate() -> None:
    summary = VerificationResultSet().get_summary()
    assert summary["num_results"] == 0
    assert summary["template_pass_overall"] is None


def test_json_round_trip_with_scenario_data_and_errors() -> None:
    result_set = VerificationResultSet(
        results=[make("q1", rubric=True), make("q2", BETA, verdict=None)],
        scenario_results=[{"scenario_id": "s1", "status": "completed", "path": ["a", "b"]}],
        errors=[("scenario s2", ValueError("bad edge"))],
    )
    dumped = result_set.model_dump(mode="json")
    assert dumped["errors"] == [["scenario s2", "ValueError: bad edge"]]
    back = VerificationResultSet.model_validate_json(result_set.model_dump_json())
    assert back.results == result_set.results
    assert back.scenario_results == result_set.scenario_results
    assert back.scenario_results is not None and back.scenario_results[0].path == ["a", "b"]
    assert back.errors is not None
    desc, exc = back.errors[0]
    assert desc == "scenario s2" and isinstance(exc, RecordedError)
    assert str(exc) == "ValueError: bad edge"
    assert back.model_dump(mode="json") == dumped


def test_slicing_returns_a_set() -> None:
    result_set = VerificationResultSet(results=[make(f"q{i}") for i in range(5)])
    part = result_set[1:3]
    assert isinstance(part, VerificationResultSet)
    assert [r.metadata.question_id for r in part] == ["q1", "q2"]
    with pytest.raises(IndexError):
        result_set[5]


def test_subsets_of_a_set_leave_run_level_data_behind() -> None:
    result_set = VerificationResultSet(
        results=[make("q1"), make("q2", BETA)],
        scenario_results=[{"scenario_id": "s1", "status": "completed"}],
        errors=[("scenario s2", ValueError("bad edge"))],
    )
    assert repr(result_set) == "VerificationResultSet(2 results)"
    subsets = [
        result_set[:1],
        result_set.filter(question_ids=["q1"]),
        result_set.group_by_question()["q1"],
        result_set.group_by_model()["langchain:alpha"],
    ]
    for subset in subsets:
        assert isinstance(subset, VerificationResultSet)
        assert [r.metadata.question_id for r in subset] == ["q1"]
        assert subset.scenario_results is None and subset.errors is None
    # a subset is a set of its own: appending to it leaves the original alone
    subsets[0].add(make("q3"))
    assert len(result_set) == 2


def test_json_schema_builds_for_api_response_models() -> None:
    # An HTTP API may declare the set as its response model; that needs a schema.
    schema = VerificationResultSet.model_json_schema()
    error_pair = schema["properties"]["errors"]["anyOf"][0]["items"]["prefixItems"]
    assert error_pair == [
        {"type": "string"},
        {"type": "string", "description": "TypeName: message"},
    ]
    assert "VerificationResult" in schema["$defs"]
