"""Rewards from verification results: binary, continuous, hybrid, traits."""

from __future__ import annotations

import pytest
from _support.factories import make_result
from _support.reward import geo_benchmark
from hypothesis import given
from hypothesis import strategies as st

from verifleet.reward import RewardConfig, compose_reward, normalise_trait
from verifleet.schemas import (
    LLMRubricTrait,
    MetricRubricTrait,
    Rubric,
    VerificationResult,
    VerificationResultRubric,
)

RUBRIC = geo_benchmark().global_rubric


def _result(
    verified: bool | None = True,
    *,
    granular: object = None,
    llm: dict[str, bool | int] | None = None,
    regex: dict[str, bool] | None = None,
    metric: dict[str, dict[str, float]] | None = None,
    error: str | None = None,
) -> VerificationResult:
    result = make_result(verified=verified, error=error)
    assert result.template is not None
    result.template.verify_granular_result = granular
    if llm or regex or metric:
        result.rubric = VerificationResultRubric(
            rubric_evaluation_performed=True,
            llm_trait_scores=llm,
            regex_trait_scores=regex,
            metric_trait_scores=metric,
        )
    return result


def _hybrid(*components: tuple[str, str, str | None, float]) -> RewardConfig:
    return RewardConfig.build(
        {
            "mode": "hybrid",
            "components": [
                {"name": n, "source": s, "weight": w, **({"trait": t} if t else {})}
                for n, s, t, w in components
            ],
        }
    )


@pytest.mark.parametrize(("verified", "reward"), [(True, 1.0), (False, 0.0), (None, 0.0)])
def test_binary_reward_follows_verify_result(verified: bool | None, reward: float) -> None:
    assert compose_reward(_result(verified), RewardConfig()).reward == reward


def test_continuous_reward_is_the_granular_score_or_falls_back_to_binary() -> None:
    config = RewardConfig(mode="continuous")
    assert compose_reward(_result(False, granular=0.5), config).reward == 0.5
    assert compose_reward(_result(True), config).reward == 1.0
    # A granular value outside [0, 1] is clamped; a non-number is ignored.
    assert compose_reward(_result(False, granular=1.7), config).reward == 1.0
    assert compose_reward(_result(False, granular="half"), config).reward == 0.0


def test_error_results_get_the_error_reward_and_say_why() -> None:
    config = RewardConfig(error_reward=0.25)
    breakdown = compose_reward(_result(None, error="judge unreachable"), config)
    assert breakdown.reward == 0.25
    assert breakdown.error == "judge unreachable"


def test_hybrid_correctness_and_efficiency_spec_example() -> None:
    config = _hybrid(
        ("correctness", "verify_result", None, 0.7), ("efficiency", "trait", "concise", 0.3)
    )
    right_but_long = compose_reward(_result(True, regex={"concise": False}), config, rubric=RUBRIC)
    assert right_but_long.reward == pytest.approx(0.7)
    assert right_but_long.components == {"correctness": 1.0, "efficiency": 0.0}
    wrong_but_short = compose_reward(_result(False, regex={"concise": True}), config, rubric=RUBRIC)
    assert wrong_but_short.reward == pytest.approx(0.3)


def test_score_traits_are_normalised_and_lower_is_better_flipped() -> None:
    result = _result(True, llm={"clarity": 4, "hedging": True})
    assert normalise_trait(result, "clarity", rubric=RUBRIC) == pytest.approx(0.75)
    assert normalise_trait(result, "hedging", rubric=RUBRIC) == 0.0
    assert normalise_trait(result, "concise", rubric=RUBRIC) is None
    config = _hybrid(
        ("correctness", "verify_granular_result", None, 0.5),
        ("clarity", "trait", "clarity", 0.3),
        ("hedging", "trait", "hedging", 0.2),
    )
    breakdown = compose_reward(
        _result(False, granular=0.5, llm={"clarity": 4, "hedging": False}), config, rubric=RUBRIC
    )
    assert breakdown.reward == pytest.approx(0.5 * 0.5 + 0.3 * 0.75 + 0.2 * 1.0)


def test_missing_component_counts_zero_and_shows_none() -> None:
    config = _hybrid(
        ("correctness", "verify_result", None, 0.6), ("clarity", "trait", "clarity", 0.4)
    )
    breakdown = compose_reward(_result(True), config, rubric=RUBRIC)
    assert breakdown.reward == pytest.approx(0.6)
    assert breakdown.components == {"correctness": 1.0, "clarity": None}


def test_metric_traits_use_the_chosen_metric_and_literal_indices_scale() -> None:
    rubric = Rubric(
        metric_traits=[
            MetricRubricTrait(name="coverage", metrics=["precision", "f1"], tp_instructions=["a"])
        ],
        llm_traits=[
            LLMRubricTrait(name="tone", kind="literal", classes=["rude", "neutral", "kind"])
        ],
    )
    result = _result(True, metric={"coverage": {"precision": 0.5, "f1": 0.8}}, llm={"tone": 1})
    assert normalise_trait(result, "coverage", rubric=rubric) == pytest.approx(0.8)
    assert normalise_trait(result, "coverage", rubric=rubric, metric="precision") == 0.5
    assert normalise_trait(result, "coverage", rubric=rubric, metric="recall") is None
    assert normalise_trait(result, "tone", rubric=rubric) == pytest.approx(0.5)
    invalid_class = _result(True, llm={"tone": -1})
    assert normalise_trait(invalid_class, "tone", rubric=rubric) is None


def test_equivalence_component_uses_the_given_verdict() -> None:
    config = _hybrid(
        ("match", "equivalence", None, 0.5), ("correctness", "verify_result", None, 0.5)
    )
    assert compose_reward(_result(False), config, equivalence=True).reward == 0.5
    assert compose_reward(_result(False), config, equivalence=None).components["match"] is None


@given(
    verified=st.booleans(),
    clarity=st.integers(min_value=1, max_value=5),
    concise=st.booleans(),
    w=st.floats(min_value=0.01, max_value=0.98),
)
def test_hybrid_reward_stays_in_unit_interval(
    verified: bool, clarity: int, concise: bool, w: float
) -> None:
    rest = 1.0 - w
    config = _hybrid(
        ("correctness", "verify_result", None, w),
        ("clarity", "trait", "clarity", rest / 2),
        ("concise", "trait", "concise", rest / 2),
    )
    result = _result(verified, llm={"clarity": clarity}, regex={"concise": concise})
    reward = compose_reward(result, config, rubric=RUBRIC).reward
    assert 0.0 <= reward <= 1.0
    expected = w * verified + rest / 2 * (clarity - 1) / 4 + rest / 2 * concise
    assert reward == pytest.approx(expected)
