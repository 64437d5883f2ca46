"""Reward config validation: modes, weights, components, files."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.reward import geo_benchmark

from verifleet.reward import RewardConfig, load_reward_config
from verifleet.schemas import ConfigError


def test_default_is_binary_without_components() -> None:
    config = RewardConfig()
    assert config.mode == "binary"
    assert config.components == []
    assert not config.uses_rubric


def test_spec_example_correctness_and_efficiency_is_valid() -> None:
    config = RewardConfig.build(
        {
            "mode": "hybrid",
            "components": [
                {"name": "correctness", "source": "verify_result", "weight": 0.7},
                {"name": "efficiency", "source": "trait", "trait": "concise", "weight": 0.3},
            ],
        }
    )
    assert [c.weight for c in config.components] == [0.7, 0.3]
    assert config.uses_rubric


def test_float_weights_that_sum_to_one_within_rounding_are_accepted() -> None:
    components = [
        {"name": n, "source": "verify_result", "weight": w}
        for n, w in (("a", 0.1), ("b", 0.2), ("c", 0.7))
    ]
    assert len(RewardConfig.build({"mode": "hybrid", "components": components}).components) == 3


def test_weights_not_summing_to_one_are_rejected_with_the_sum() -> None:
    with pytest.raises(ConfigError, match=r"weights must sum to 1.*= 0\.9"):
        RewardConfig.build(
            {
                "mode": "hybrid",
                "components": [
                    {"name": "correctness", "source": "verify_result", "weight": 0.6},
                    {"name": "clarity", "source": "trait", "trait": "clarity", "weight": 0.3},
                ],
            }
        )


def test_hybrid_needs_components_and_others_refuse_them() -> None:
    with pytest.raises(ConfigError, match="at least one component"):
        RewardConfig.build({"mode": "hybrid"})
    with pytest.raises(ConfigError, match="only a hybrid reward has components"):
        RewardConfig.build(
            {
                "mode": "binary",
                "components": [{"name": "c", "source": "verify_result", "weight": 1.0}],
            }
        )


def test_component_rules() -> None:
    with pytest.raises(ConfigError, match="needs the trait's name"):
        RewardConfig.build(
            {"mode": "hybrid", "components": [{"name": "t", "source": "trait", "weight": 1.0}]}
        )
    with pytest.raises(ConfigError, match="unknown metric"):
        RewardConfig.build(
            {
                "mode": "hybrid",
                "components": [
                    {"name": "t", "source": "trait", "trait": "x", "metric": "auc", "weight": 1.0}
                ],
            }
        )
    with pytest.raises(ConfigError, match=r"duplicate names \['a'\]"):
        RewardConfig.build(
            {
                "mode": "hybrid",
                "components": [
                    {"name": "a", "source": "verify_result", "weight": 0.5},
                    {"name": "a", "source": "verify_granular_result", "weight": 0.5},
                ],
            }
        )
    with pytest.raises(ConfigError, match="weight"):
        RewardConfig.build(
            {
                "mode": "hybrid",
                "components": [{"name": "a", "source": "verify_result", "weight": 0}],
            }
        )


def test_unknown_trait_is_reported_against_the_benchmark() -> None:
    config = RewardConfig.build(
        {
            "mode": "hybrid",
            "components": [
                {"name": "correctness", "source": "verify_result", "weight": 0.5},
                {"name": "tone", "source": "trait", "trait": "tone", "weight": 0.5},
            ],
        }
    )
    with pytest.raises(
        ConfigError, match=r"\['tone'\].*known: \['clarity', 'concise', 'hedging'\]"
    ):
        config.check_benchmark(geo_benchmark())


def test_load_from_yaml_and_report_bad_files(tmp_path: Path) -> None:
    good = tmp_path / "reward.yaml"
    good.write_text(
        "mode: hybrid\ncomponents:\n"
        "  - {name: correctness, source: verify_result, weight: 0.5}\n"
        "  - {name: pedagogy, source: trait, trait: clarity, weight: 0.3}\n"
        "  - {name: efficiency, source: trait, trait: concise, weight: 0.2}\n"
    )
    assert [c.name for c in load_reward_config(good).components] == [
        "correctness",
        "pedagogy",
        "efficiency",
    ]
    bad = tmp_path / "bad.yaml"
    bad.write_text("mode: sometimes\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: mode"):
        load_reward_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_reward_config(tmp_path / "missing.yaml")
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_reward_config(listed)


def test_trait_components_refuse_a_template_only_verification() -> None:
    from verifleet.reward import RewardScorer
    from verifleet.schemas import ModelConfig

    config = RewardConfig.build(
        {
            "mode": "hybrid",
            "components": [{"name": "c", "source": "trait", "trait": "clarity", "weight": 1.0}],
            "verification": {"evaluation_mode": "template_only", "rubric_enabled": False},
        }
    )
    judge = ModelConfig.parse("http://127.0.0.1:9/v1#judge")
    with pytest.raises(ConfigError, match="need rubric evaluation"):
        RewardScorer(geo_benchmark(), [judge], config)
    with pytest.raises(ConfigError, match="request_timeout"):
        RewardScorer(geo_benchmark(), [judge], RewardConfig(verification={"request_timeout": -1}))


def test_rewards_record_no_model_calls_unless_the_config_asks() -> None:
    # A /verify answer carries the whole result: recorded calls (whose judge
    # prompt repeats the rollout) would double what every answer encodes.
    from verifleet.reward import RewardScorer
    from verifleet.schemas import ModelConfig

    judge = ModelConfig.parse("http://127.0.0.1:9/v1#judge")
    assert RewardScorer(geo_benchmark(), [judge], RewardConfig()).config.record_model_calls is False
    asked = RewardConfig(verification={"record_model_calls": True})
    assert RewardScorer(geo_benchmark(), [judge], asked).config.record_model_calls is True
