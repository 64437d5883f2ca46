"""Regex and callable traits (local, no judge call) and metric traits (confusion
lists from the judge, metrics from the rubric package)."""

from __future__ import annotations

from typing import Any

import pytest
from test_rubric_eval_fakes import ScriptedJudge, bad_json

from verifleet.pipeline._rubric_eval import RubricOutcome, evaluate_rubric
from verifleet.pipeline._rubric_eval.metric_traits import confusion_from_reply
from verifleet.schemas import (
    CallableTrait,
    MetricRubricTrait,
    ModelConfig,
    RegexTrait,
    Rubric,
    VerificationConfig,
)

RESPONSE = "Take aspirin or ibuprofen. Aspirin works. See https://example.org for more."


def run(judge: ScriptedJudge, rubric: Rubric, response: str = RESPONSE) -> RubricOutcome:
    config = VerificationConfig(
        parsing_models=[ModelConfig(model_name="judge")],
        parsing_only=True,
        evaluation_mode="rubric_only",
    )
    return evaluate_rubric(
        judge,
        question="Pain relief?",
        response=response,
        rubric=rubric,
        config=config,
        question_id="q1",
    )


def word_count_trait() -> CallableTrait:
    return CallableTrait(
        name="words",
        kind="score",
        min_score=0,
        max_score=100,
        callable_source="def words(text):\n    return len(text.split())\n",
    )


def test_regex_and_callable_traits_run_locally_without_judge_calls() -> None:
    rubric = Rubric(
        regex_traits=[
            RegexTrait(name="has_url", pattern=r"https?://\S+"),
            RegexTrait(name="no_shouting", pattern=r"[A-Z]{5,}", invert_result=True),
            RegexTrait(name="mentions_naproxen", pattern="naproxen", case_sensitive=False),
        ],
        callable_traits=[
            word_count_trait(),
            CallableTrait.from_callable("short", lambda text: len(text) < 200),
        ],
    )
    judge = ScriptedJudge()
    outcome = run(judge, rubric)
    assert judge.calls == []
    assert outcome.model_calls == 0
    assert outcome.rubric.regex_trait_scores == {
        "has_url": True,
        "no_shouting": True,
        "mentions_naproxen": False,
    }
    assert outcome.rubric.callable_trait_scores == {"words": len(RESPONSE.split()), "short": True}
    assert outcome.rubric.llm_trait_scores is None
    assert outcome.rubric.metric_trait_scores is None


def test_a_failing_callable_trait_is_recorded_and_does_not_stop_the_others() -> None:
    crashing = CallableTrait(
        name="crash", kind="boolean", callable_source="def crash(text):\n    return 1 / 0\n"
    )
    untrusted = CallableTrait(
        name="pickled",
        callable_code=CallableTrait.from_callable("x", lambda text: True).callable_code,
    )
    rubric = Rubric(callable_traits=[crashing, untrusted, word_count_trait()])
    outcome = run(ScriptedJudge(), rubric)
    assert outcome.rubric.callable_trait_scores == {"words": len(RESPONSE.split())}
    assert "ZeroDivisionError" in outcome.failed_traits["crash"]
    assert "trust_callables" in outcome.failed_traits["pickled"]


def drug_trait(**extra: Any) -> MetricRubricTrait:
    return MetricRubricTrait(
        name="drug_coverage",
        description="Which NSAIDs are named.",
        metrics=["precision", "recall", "f1"],
        tp_instructions=["aspirin", "ibuprofen", "naproxen"],
        **extra,
    )


def test_metric_trait_confusion_lists_become_counts_and_metrics() -> None:
    judge = ScriptedJudge(
        [{"tp": ["aspirin", "Aspirin", "ibuprofen"], "fn": ["naproxen"], "fp": ["tylenol"]}]
    )
    outcome = run(judge, Rubric(metric_traits=[drug_trait()]))
    call = judge.calls[0]
    assert call.schema is not None
    assert sorted(call.schema["properties"]) == ["fn", "fp", "tp"]
    assert "naproxen" in call.user and RESPONSE in call.user
    lists = outcome.rubric.metric_trait_confusion_lists
    # repeated_extraction (the default) dedupes case-insensitively, keeping the first spelling
    assert lists == {
        "drug_coverage": {
            "tp": ["aspirin", "ibuprofen"],
            "fn": ["naproxen"],
            "fp": ["tylenol"],
            "tn": [],
        }
    }
    scores = outcome.rubric.metric_trait_scores
    assert scores is not None
    assert scores["drug_coverage"] == pytest.approx(
        {"tp": 2.0, "fn": 1.0, "fp": 1.0, "precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3}
    )


def test_metrics_are_zero_when_their_denominators_are_empty() -> None:
    judge = ScriptedJudge([{"tp": [], "fn": [], "fp": []}])
    outcome = run(judge, Rubric(metric_traits=[drug_trait()]))
    assert outcome.rubric.metric_trait_scores == {
        "drug_coverage": {
            "tp": 0.0,
            "fn": 0.0,
            "fp": 0.0,
            "precision": 0.0,
            "recall": 0.0,
            "f1": 0.0,
        }
    }


def test_full_matrix_asks_for_true_negatives_and_computes_specificity() -> None:
    trait = MetricRubricTrait(
        name="safety_items",
        evaluation_mode="full_matrix",
        metrics=["specificity", "accuracy"],
        tp_instructions=["dose limit"],
        tn_instructions=["alcohol is fine", "double the dose"],
    )
    judge = ScriptedJudge(
        [{"tp": ["dose limit"], "fn": [], "fp": ["double the dose"], "tn": ["alcohol is fine"]}]
    )
    outcome = run(judge, Rubric(metric_traits=[trait]))
    assert judge.calls[0].schema is not None
    assert "tn" in judge.calls[0].schema["required"]
    assert "double the dose" in judge.calls[0].user
    assert outcome.rubric.metric_trait_scores == {
        "safety_items": {
            "tp": 1.0,
            "fn": 0.0,
            "fp": 1.0,
            "tn": 1.0,
            "specificity": 0.5,
            "accuracy": 2 / 3,
        }
    }


def test_tp_only_ignores_true_negatives_and_keeps_duplicates_when_asked() -> None:
    trait = drug_trait(repeated_extraction=False)
    lists = confusion_from_reply(trait, {"tp": ["a", "A", " ", 3], "fn": "x", "tn": ["z"]})
    assert lists == {"tp": ["a", "A", "3"], "fn": [], "fp": [], "tn": []}


def test_metric_trait_with_unusable_reply_is_left_out_and_reported() -> None:
    judge = ScriptedJudge([bad_json()])
    outcome = run(judge, Rubric(metric_traits=[drug_trait()]))
    assert outcome.rubric.metric_trait_scores == {}
    assert outcome.rubric.metric_trait_confusion_lists == {}
    assert "confusion lists" in outcome.failed_traits["drug_coverage"]
