"""Property test: every export format reads back the very results it was given."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifleet.orchestrator import read_results, write_results
from verifleet.schemas import (
    ModelCall,
    ModelIdentity,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultSet,
    VerificationResultTemplate,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# Unicode of every category hypothesis offers (NUL, newlines, emoji, RTL), which is
# what breaks CSV quoting and JSON escaping if anything does.
TEXT = st.text(max_size=12)
NAMES = st.text(max_size=6)
# JSON has no NaN/inf (documented limitation), so free-form and typed floats are finite.
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | FLOATS | TEXT
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)
JSON_DICTS = st.dictionaries(NAMES, JSON_VALUES, max_size=3)


def opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


identities = st.builds(
    ModelIdentity,
    interface=NAMES,
    model_name=TEXT,
    tools=st.lists(NAMES, max_size=3),
)

metadata = st.builds(
    VerificationResultMetadata,
    question_id=TEXT,
    template_id=TEXT,
    # An empty id is recomputed by the model; a given one must survive verbatim.
    result_id=st.text("0123456789abcdef", min_size=16, max_size=16),
    question_text=TEXT,
    raw_answer=opt(TEXT),
    keywords=opt(st.lists(TEXT, max_size=3)),
    run_name=opt(TEXT),
    replicate=opt(INT64),
    answering=identities,
    parsing=identities,
    answering_system_prompt=opt(TEXT),
    parsing_system_prompt=opt(TEXT),
    completed_without_errors=st.booleans(),
    error=opt(TEXT),
    execution_time=FLOATS,
    timestamp=TEXT,
    few_shot_enabled=st.booleans(),
    few_shot_example_count=INT64,
    evaluation_mode=opt(TEXT),
    scenario_id=opt(TEXT),
    scenario_node=opt(TEXT),
    scenario_turn=opt(INT64),
    scenario_path=opt(st.lists(TEXT, max_size=3)),
)

usage = st.dictionaries(
    st.sampled_from(["answer_generation", "parsing", "total"]) | NAMES,
    st.dictionaries(
        st.sampled_from(["input_tokens", "output_tokens", "total_tokens"]) | NAMES,
        JSON_VALUES,
        max_size=3,
    ),
    max_size=3,
)

model_calls = st.builds(
    ModelCall,
    stage=NAMES,
    model=TEXT,
    kind=st.sampled_from(["text", "json"]),
    messages=st.lists(st.fixed_dictionaries({"role": NAMES, "content": TEXT}), max_size=2),
    reply=opt(TEXT),
    error=opt(TEXT),
    cached=st.booleans(),
    truncated=st.booleans(),
)

templates = st.builds(
    VerificationResultTemplate,
    raw_llm_response=TEXT,
    trace_messages=st.lists(JSON_DICTS, max_size=2),
    parsed_llm_response=opt(JSON_DICTS),
    parsed_gt_response=opt(JSON_DICTS),
    template_verification_performed=st.booleans(),
    verify_result=opt(st.booleans()),
    verify_granular_result=JSON_VALUES,
    field_verification_error=opt(TEXT),
    field_results=opt(st.dictionaries(NAMES, opt(st.booleans()), max_size=3)),
    composition_strategy=opt(TEXT),
    embedding_check_performed=st.booleans(),
    embedding_similarity_score=opt(FLOATS),
    embedding_override_applied=st.booleans(),
    embedding_model_used=opt(TEXT),
    regex_validations_performed=st.booleans(),
    regex_validation_results=opt(st.dictionaries(NAMES, st.booleans(), max_size=3)),
    regex_validation_details=opt(st.dictionaries(NAMES, JSON_DICTS, max_size=2)),
    regex_overall_success=opt(st.booleans()),
    regex_extraction_results=opt(JSON_DICTS),
    abstention_check_performed=st.booleans(),
    abstention_detected=opt(st.booleans()),
    abstention_override_applied=st.booleans(),
    abstention_reasoning=opt(TEXT),
    sufficiency_check_performed=st.booleans(),
    sufficiency_detected=opt(st.booleans()),
    sufficiency_override_applied=st.booleans(),
    sufficiency_reasoning=opt(TEXT),
    recursion_limit_reached=st.booleans(),
    answering_mcp_servers=opt(st.lists(NAMES, max_size=3)),
    usage_metadata=opt(usage),
    agent_metrics=opt(JSON_DICTS),
    model_calls=st.lists(model_calls, max_size=2),
)

SCORES = st.booleans() | st.integers(-5, 5)
rubrics = st.builds(
    VerificationResultRubric,
    rubric_evaluation_performed=st.booleans(),
    rubric_evaluation_strategy=opt(st.sampled_from(["batch", "sequential"])),
    llm_trait_scores=opt(st.dictionaries(NAMES, SCORES, max_size=3)),
    llm_trait_labels=opt(st.dictionaries(NAMES, TEXT, max_size=3)),
    regex_trait_scores=opt(st.dictionaries(NAMES, st.booleans(), max_size=3)),
    callable_trait_scores=opt(st.dictionaries(NAMES, SCORES | FLOATS, max_size=3)),
    metric_trait_scores=opt(
        st.dictionaries(NAMES, st.dictionaries(NAMES, FLOATS, max_size=3), max_size=2)
    ),
    metric_trait_confusion_lists=opt(
        st.dictionaries(
            NAMES,
            st.dictionaries(st.sampled_from(["tp", "tn", "fp", "fn"]), st.lists(TEXT, max_size=2)),
            max_size=2,
        )
    ),
    agentic_trait_scores=opt(st.dictionaries(NAMES, SCORES, max_size=2)),
    agentic_trait_investigation_traces=opt(st.dictionaries(NAMES, TEXT, max_size=2)),
    dynamic_rubric_skipped_traits=opt(st.dictionaries(NAMES, TEXT, max_size=2)),
    dynamic_rubric_promoted_traits=opt(st.lists(NAMES, max_size=2)),
)

EXCERPTS = st.dictionaries(NAMES, st.lists(JSON_DICTS, max_size=2), max_size=2)
deep_judgments = st.builds(
    VerificationResultDeepJudgment,
    deep_judgment_enabled=st.booleans(),
    deep_judgment_performed=st.booleans(),
    deep_judgment_stages_completed=opt(st.lists(NAMES, max_size=3)),
    deep_judgment_model_calls=st.integers(0, 50),
    deep_judgment_excerpt_retry_count=st.integers(0, 5),
    attributes_without_excerpts=opt(st.lists(NAMES, max_size=2)),
    extracted_excerpts=opt(EXCERPTS),
    attribute_reasoning=opt(st.dictionaries(NAMES, TEXT, max_size=2)),
    deep_judgment_search_enabled=st.booleans(),
    hallucination_risk_assessment=opt(st.dictionaries(NAMES, NAMES, max_size=2)),
)

deep_judgment_rubrics = st.builds(
    VerificationResultDeepJudgmentRubric,
    deep_judgment_rubric_performed=st.booleans(),
    extracted_rubric_excerpts=opt(EXCERPTS),
    rubric_trait_reasoning=opt(st.dictionaries(NAMES, TEXT, max_size=2)),
    deep_judgment_rubric_scores=opt(st.dictionaries(NAMES, SCORES, max_size=2)),
    standard_rubric_scores=opt(st.dictionaries(NAMES, SCORES, max_size=2)),
    trait_metadata=opt(st.dictionaries(NAMES, JSON_DICTS, max_size=2)),
    traits_without_valid_excerpts=opt(st.lists(NAMES, max_size=2)),
    rubric_hallucination_risk_assessment=opt(st.dictionaries(NAMES, JSON_DICTS, max_size=2)),
    total_deep_judgment_model_calls=st.integers(0, 50),
    total_traits_evaluated=st.integers(0, 50),
    total_excerpt_retries=st.integers(0, 50),
)

results = st.builds(
    VerificationResult,
    metadata=metadata,
    template=opt(templates),
    rubric=opt(rubrics),
    deep_judgment=opt(deep_judgments),
    deep_judgment_rubric=opt(deep_judgment_rubrics),
    evaluation_input=opt(TEXT),
    used_full_trace=st.booleans(),
    trace_extraction_error=opt(TEXT),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(results, max_size=5))
def test_every_format_reads_back_an_equal_result_set(batch: list[VerificationResult]) -> None:
    written = VerificationResultSet(results=batch)
    with tempfile.TemporaryDirectory() as folder:
        for name in ("r.parquet", "r.json", "r.jsonl", "r.csv"):
            path = Path(folder) / name
            # batch_size=2 makes several Parquet batches out of most examples.
            assert write_results(written, path, batch_size=2) == len(batch)
            back = read_results(path, batch_size=2)
            assert back == written, name
            # Sections absent stay None, present ones stay present (even all-default).
            for section in ("template", "rubric", "deep_judgment", "deep_judgment_rubric"):
                assert [getattr(r, section) is None for r in back] == [
                    getattr(r, section) is None for r in batch
                ], (name, section)
