"""How a verification result becomes a reward: the per-benchmark reward config.

Three modes (docs/reward.md, "Rewards"):

* ``binary``: 1.0 when ``verify_result`` is True, else 0.0.
* ``continuous``: ``verify_granular_result`` (partial credit in [0, 1]); templates
  without a granular score fall back to the binary value.
* ``hybrid``: a weighted sum of components (template correctness, granular score,
  rubric traits, an LLM equivalence verdict); the weights must sum to 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from verifleet.schemas import VALID_METRICS, Benchmark, ConfigError

__all__ = ["ComponentSource", "RewardComponent", "RewardConfig", "RewardMode", "load_reward_config"]

RewardMode = Literal["binary", "continuous", "hybrid"]
ComponentSource = Literal["verify_result", "verify_granular_result", "trait", "equivalence"]

#: Weights are floats from a YAML file: 0.7 + 0.2 + 0.1 is not exactly 1.0.
_WEIGHT_TOLERANCE = 1e-6


class RewardComponent(BaseModel):
    """One weighted part of a hybrid reward.

    Attributes:
        name: Label of the component in ``reward_components`` (e.g. ``correctness``).
        source: ``verify_result`` (1.0/0.0), ``verify_granular_result`` (partial
            credit, falling back to ``verify_result``), ``trait`` (a rubric trait,
            normalised to 0-1 with ``higher_is_better`` respected) or
            ``equivalence`` (an LLM judge compares the response with the question's
            reference answer; see ``swap_check``).
        trait: The rubric trait's name (``source="trait"`` only).
        metric: The metric read from a metric trait (default ``f1``).
        weight: Share of the reward, in (0, 1].
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    source: ComponentSource
    trait: str | None = None
    metric: str = "f1"
    weight: float = Field(gt=0.0, le=1.0)

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        if value not in VALID_METRICS:
            raise ValueError(f"unknown metric {value!r}; valid: {sorted(VALID_METRICS)}")
        return value

    @model_validator(mode="after")
    def _trait_named(self) -> RewardComponent:
        if self.source == "trait" and not self.trait:
            raise ValueError(f"component {self.name!r}: source 'trait' needs the trait's name")
        if self.source != "trait" and self.trait is not None:
            raise ValueError(f"component {self.name!r}: 'trait' is only for source 'trait'")
        return self


class RewardConfig(BaseModel):
    """The reward of one benchmark.

    Attributes:
        mode: ``binary``, ``continuous`` or ``hybrid``.
        components: The weighted components (``hybrid`` only; weights sum to 1).
        error_reward: Reward of a rollout whose verification did not complete
            (judge unreachable after retries, template error). Default 0.0.
        swap_check: Ask the equivalence judge twice with the reference and the
            response swapped; only a verdict given both ways counts as equivalent.
        verification: Extra :class:`~verifleet.schemas.VerificationConfig` fields
            (e.g. ``abstention_enabled``, ``use_full_trace_for_template``).

    Raises:
        pydantic.ValidationError: unknown fields, a hybrid config whose weights do
            not sum to 1, duplicate component names, components outside hybrid mode.
    """

    model_config = ConfigDict(extra="forbid")

    mode: RewardMode = "binary"
    components: list[RewardComponent] = Field(default_factory=list)
    error_reward: float = Field(default=0.0, ge=0.0, le=1.0)
    swap_check: bool = False
    verification: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _components_fit_mode(self) -> RewardConfig:
        if self.mode != "hybrid":
            if self.components:
                raise ValueError(
                    f"components: only a hybrid reward has components, not {self.mode}"
                )
            return self
        if not self.components:
            raise ValueError("components: a hybrid reward needs at least one component")
        names = [c.name for c in self.components]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"components: duplicate names {repeated}")
        total = math.fsum(c.weight for c in self.components)
        if abs(total - 1.0) > _WEIGHT_TOLERANCE:
            shown = " + ".join(f"{c.name} {c.weight:g}" for c in self.components)
            raise ValueError(f"components: weights must sum to 1, got {shown} = {total:g}")
        return self

    @property
    def uses_rubric(self) -> bool:
        """Whether a component reads a rubric trait (rubric evaluation must run)."""
        return any(c.source == "trait" for c in self.components)

    @property
    def uses_equivalence(self) -> bool:
        """Whether a component asks the equivalence judge."""
        return any(c.source == "equivalence" for c in self.components)

    @classmethod
    def build(cls, data: object) -> RewardConfig:
        """Validate ``data`` into a config.

        Raises:
            ConfigError: every problem as ``field.path: message``.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise _config_error(exc, prefix="reward config") from None

    def check_benchmark(self, benchmark: Benchmark) -> None:
        """Check that every trait component names a trait the benchmark defines.

        Raises:
            ConfigError: a component's trait is in no rubric of the benchmark.
        """
        known: set[str] = set()
        for _qid, rubric in benchmark.all_rubrics():
            known.update(trait.name for trait in rubric.all_traits())
        missing = sorted(
            c.trait for c in self.components if c.trait is not None and c.trait not in known
        )
        if missing:
            raise ConfigError(
                f"reward config: components name traits {missing} that no rubric of "
                f"benchmark {benchmark.name!r} defines (known: {sorted(known) or 'none'})"
            )


def _config_error(exc: ValidationError, *, prefix: str) -> ConfigError:
    problems = []
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return ConfigError(f"{prefix}: " + "; ".join(problems))


def load_reward_config(path: str | Path) -> RewardConfig:
    """Read a reward config from a YAML or JSON file.

    Raises:
        ConfigError: the file is unreadable, not YAML/JSON, or invalid.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read reward config: {exc.strerror}") from None
    try:
        data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{file}: not valid {file.suffix.lstrip('.') or 'YAML'}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a mapping of reward config fields")
    try:
        return RewardConfig.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, prefix=str(file)) from None
