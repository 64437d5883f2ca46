"""A reward in [0, 1] from one :class:`~verifleet.schemas.VerificationResult`.

Pure functions: the same result and config always give the same reward, which is
what makes the reward deterministic once the judge's replies are (temperature 0
plus the judge-call cache).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from verifleet.schemas import MetricRubricTrait, Rubric, VerificationResult

from ._config import RewardComponent, RewardConfig, RewardMode

__all__ = ["RewardBreakdown", "compose_reward", "normalise_trait"]


class RewardBreakdown(BaseModel):
    """The reward and how it was reached.

    Attributes:
        reward: The reward in [0.0, 1.0].
        mode: The reward mode that produced it.
        components: Each hybrid component's value in [0, 1] before weighting;
            ``None`` when the result lacks it (it then contributes 0).
        verify_result: The template verdict (None when no template ran).
        verify_granular_result: The partial-credit score, when the template has one.
        equivalence: The equivalence judge's verdict, when a component asked it.
        error: Why verification did not complete (the reward is then
            ``error_reward``); None on success.
    """

    model_config = ConfigDict(extra="forbid")

    reward: float
    mode: RewardMode
    components: dict[str, float | None] = Field(default_factory=dict)
    verify_result: bool | None = None
    verify_granular_result: float | None = None
    equivalence: bool | None = None
    error: str | None = None


def _unit(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _granular(result: VerificationResult) -> float | None:
    raw: object = result.template.verify_granular_result if result.template else None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        return None
    return _unit(raw)


def normalise_trait(
    result: VerificationResult, name: str, *, rubric: Rubric | None, metric: str = "f1"
) -> float | None:
    """The trait ``name`` of ``result`` as a value in [0, 1].

    Booleans are 1/0; score and literal traits map ``min_score..max_score`` onto
    0..1; metric traits give their ``metric``; ``higher_is_better=False`` flips the
    value. Returns None when the trait was not scored, a literal judge reply named
    no valid class (-1), or a score has no known range.
    """
    found = result.rubric.get_trait_by_name(name) if result.rubric else None
    if found is None:
        return None
    value, _kind = found
    trait = rubric.get_trait(name) if rubric is not None else None
    if isinstance(value, dict):
        metric_value = value.get(metric)
        return _unit(metric_value) if isinstance(metric_value, int | float) else None
    if isinstance(value, bool):
        score = 1.0 if value else 0.0
    elif isinstance(value, int | float):
        low = getattr(trait, "min_score", None)
        high = getattr(trait, "max_score", None)
        if getattr(trait, "kind", None) == "literal" and value < 0:
            return None
        if low is None or high is None or high <= low:
            if not 0.0 <= value <= 1.0:
                return None
            score = float(value)
        else:
            score = _unit((value - low) / (high - low))
    else:
        return None
    # Metric values are always higher-is-better; other traits may say otherwise.
    lower_is_better = getattr(trait, "higher_is_better", True) is False
    if lower_is_better and not isinstance(trait, MetricRubricTrait):
        score = 1.0 - score
    return score


def _component_value(
    component: RewardComponent,
    result: VerificationResult,
    *,
    rubric: Rubric | None,
    verified: float,
    granular: float | None,
    equivalence: bool | None,
) -> float | None:
    if component.source == "verify_result":
        return verified
    if component.source == "verify_granular_result":
        return granular if granular is not None else verified
    if component.source == "equivalence":
        return None if equivalence is None else float(equivalence)
    assert component.trait is not None  # guaranteed by RewardComponent
    return normalise_trait(result, component.trait, rubric=rubric, metric=component.metric)


def compose_reward(
    result: VerificationResult,
    config: RewardConfig,
    *,
    rubric: Rubric | None = None,
    equivalence: bool | None = None,
) -> RewardBreakdown:
    """The reward of ``result`` under ``config``.

    Args:
        result: The verification result of the rollout.
        config: The benchmark's reward config.
        rubric: The question's merged rubric (trait ranges and directions).
        equivalence: The equivalence judge's verdict, if ``config`` asked for it.

    Returns:
        The breakdown. A result that did not complete gets ``config.error_reward``;
        a missing component counts 0.0 and shows as None. Never raises.
    """
    template = result.template
    verify = template.verify_result if template else None
    granular = _granular(result)
    base = {
        "mode": config.mode,
        "verify_result": verify,
        "verify_granular_result": granular,
        "equivalence": equivalence,
    }
    if not result.metadata.completed_without_errors:
        error = result.metadata.error or "verification did not complete"
        return RewardBreakdown(reward=config.error_reward, error=error, **base)
    verified = 1.0 if verify is True else 0.0
    if config.mode == "binary":
        return RewardBreakdown(reward=verified, **base)
    if config.mode == "continuous":
        return RewardBreakdown(reward=granular if granular is not None else verified, **base)
    values = {
        c.name: _component_value(
            c, result, rubric=rubric, verified=verified, granular=granular, equivalence=equivalence
        )
        for c in config.components
    }
    total = math.fsum(c.weight * (values[c.name] or 0.0) for c in config.components)
    return RewardBreakdown(reward=_unit(round(total, 12)), components=values, **base)
