"""Result sets for the viewer tests: every section the viewer shows is filled
somewhere (verdicts, errors, granular scores, every check and override, rubric
traits of every type, deep-judgment excerpts that occur in the answer, an agent
trace, token usage), across two answering and two parsing models."""

from __future__ import annotations

from verifleet.schemas import (
    ModelIdentity,
    ScenarioExecutionResult,
    ScenarioTurnRecord,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultTemplate,
)

__all__ = [
    "ANSWERING",
    "PARSING",
    "flaky_question",
    "full_run",
    "handed_scenario_run",
    "one_result",
]

ANSWERING = ("alpha-7b", "beta-70b")
PARSING = ("judge-small", "judge-large")


def flaky_question(question: int) -> bool:
    """Whether question number ``question`` of :func:`full_run` changes its verdict
    from one replicate to the next (every fourth, from the second)."""
    return question % 4 == 1


def one_result(index: int, *, flip: bool = False, replicate: int = 1) -> VerificationResult:
    """Result ``index`` of :func:`full_run`; ``flip`` inverts its verdict (a
    re-run where that question's verdict changed). Replicate 1 is the plain run;
    a :func:`flaky_question` has the opposite verdict in every even replicate,
    every other question the same verdict in all (so replicates of a question
    are strongly correlated, as real ones are)."""
    answering = ANSWERING[index % 2]
    parsing = PARSING[(index // 2) % 2]
    question = index // 4
    passed = (question % 3 != 0) != flip
    if flaky_question(question) and replicate % 2 == 0:
        passed = not passed
    errored = index % 17 == 5
    answer = f"The target is BCL2{question} and it acts in the pancreas (case {index})."
    meta = VerificationResultMetadata(
        question_id=f"q{question:03d}",
        template_id="t" * 32,
        question_text=f"Which gene is targeted in case {question}?",
        keywords=["oncology", "genes"] if question % 2 else ["anatomy"],
        run_name="viewer-test",
        replicate=replicate,
        answering=ModelIdentity(interface="openai_endpoint", model_name=answering),
        parsing=ModelIdentity(interface="openai_endpoint", model_name=parsing),
        completed_without_errors=not errored,
        error="answer generation failed: HTTP 503 from endpoint" if errored else None,
        execution_time=0.25 + index % 7,
        timestamp="2026-11-22T09:00:00+00:00",
        evaluation_mode="template_and_rubric",
    )
    template = VerificationResultTemplate(
        raw_llm_response=answer,
        trace_messages=[
            {"role": "user", "content": meta.question_text},
            {"role": "assistant", "content": "", "tool_calls": [{"name": "search"}]},
            {"role": "tool", "content": f"search result for case {question}"},
            {"role": "assistant", "content": answer},
        ],
        parsed_llm_response={
            "target": f"BCL2{question}",
            "tissue": "pancreas" if passed else "liver",
        },
        parsed_gt_response={"target": f"BCL2{question}", "tissue": "pancreas"},
        template_verification_performed=not errored,
        verify_result=None if errored else passed,
        verify_granular_result=None if errored else (1.0 if passed else (index % 5) / 10),
        field_results={"target": True, "tissue": passed},
        embedding_check_performed=index % 3 == 0,
        embedding_similarity_score=0.5 + (index % 5) / 10 if index % 3 == 0 else None,
        embedding_override_applied=index % 9 == 0,
        regex_validations_performed=index % 4 == 0,
        regex_validation_results={"gene": index % 8 == 0} if index % 4 == 0 else None,
        regex_overall_success=index % 8 == 0 if index % 4 == 0 else None,
        abstention_check_performed=True,
        abstention_detected=index % 11 == 0,
        abstention_override_applied=index % 11 == 0,
        abstention_reasoning="the answer commits to a gene",
        sufficiency_check_performed=index % 2 == 0,
        sufficiency_detected=index % 10 != 0 if index % 2 == 0 else None,
        sufficiency_override_applied=index % 10 == 0,
        sufficiency_reasoning="names a gene and a tissue",
        recursion_limit_reached=index % 13 == 0,
        usage_metadata={
            "answer_generation": {
                "input_tokens": 100,
                "output_tokens": 20,
                "total_tokens": 120,
                "cost_usd": 0.00018,
            },
            # A parse answered by the call cache costs nothing; the answer was priced.
            "parsing": {
                "input_tokens": 50,
                "output_tokens": 10,
                "total_tokens": 60,
                "cost_usd": 0.0,
                "cache_hits": 1,
            },
            "total": {
                "input_tokens": 150,
                "output_tokens": 30,
                "total_tokens": 180,
                "cost_usd": 0.00018,
                "cache_hits": 1,
            },
        },
        agent_metrics={"iterations": 2, "tool_calls": 1},
    )
    rubric = VerificationResultRubric(
        rubric_evaluation_performed=True,
        rubric_evaluation_strategy="batch",
        llm_trait_scores={"clarity": 1 + index % 5, "safe": index % 6 != 0},
        regex_trait_scores={"cites_gene": True},
        callable_trait_scores={"short": 0.25 * (index % 4)},
        metric_trait_scores={"coverage": {"precision": 1.0, "recall": 0.5}},
    )
    deep = VerificationResultDeepJudgment(
        deep_judgment_enabled=True,
        deep_judgment_performed=True,
        extracted_excerpts={
            "target": [{"text": f"BCL2{question}", "confidence": "high"}],
            "tissue": [{"text": "pancreas", "confidence": "medium"}],
        },
        attribute_reasoning={"target": "the gene is named", "tissue": "the organ is named"},
    )
    deep_rubric = VerificationResultDeepJudgmentRubric(
        deep_judgment_rubric_performed=True,
        extracted_rubric_excerpts={"clarity": [{"text": "acts in", "confidence": "low"}]},
        rubric_trait_reasoning={"clarity": "plain wording"},
        deep_judgment_rubric_scores={"clarity": 1 + index % 5},
        traits_without_valid_excerpts=["safe"] if index % 7 == 0 else [],
    )
    return VerificationResult(
        metadata=meta,
        template=template,
        rubric=rubric,
        deep_judgment=deep,
        deep_judgment_rubric=deep_rubric,
        evaluation_input=answer,
    )


def full_run(
    count: int = 48, *, flipped: frozenset[int] = frozenset(), replicates: int = 1
) -> list[VerificationResult]:
    """``count`` results per replicate (4 per question: 2 answering × 2 parsing
    models), replicate 1's first; results whose index is in ``flipped`` have the
    opposite verdict."""
    return [
        one_result(i, flip=i in flipped, replicate=r)
        for r in range(1, replicates + 1)
        for i in range(count)
    ]


def handed_scenario_run(first_reply: str = "BCL2") -> ScenarioExecutionResult:
    """A two-turn scenario run handed from agent ``asker`` to agent ``guard``
    (``transcript_prepend``), with an edge whose condition raised."""
    return ScenarioExecutionResult(
        scenario_id="handed",
        status="completed",
        path=["ask", "judge"],
        turn_count=2,
        history=[
            ScenarioTurnRecord(
                turn=0,
                node_id="ask",
                question_id="q0",
                question_text="Which gene?",
                agent_id="asker",
                raw_response=first_reply,
                verify_result=True,
            ),
            ScenarioTurnRecord(
                turn=1,
                node_id="judge",
                question_id="q1",
                question_text="Was it right?",
                agent_id="guard",
                handover="transcript_prepend",
                prompt="[__user__] Which gene?\n[asker:assistant:text] BCL2\n\n---\n\nWas it right?",
                raw_response="yes",
                verify_result=False,
            ),
        ],
        outcome_results={"agreed": False},
        answering_model="openai_endpoint:m",
        replicate=1,
        trace=["edge ask -> END: condition raised, edge not taken: KeyError: 'x'"],
    )
