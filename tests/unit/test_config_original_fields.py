"""The original framework's configuration loads: presets, its current
VerificationConfig / ModelConfig / FewShotConfig fields, k-shot sampling."""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from verifleet.orchestrator.cli.config import add_config_arguments, build_config
from verifleet.schemas import (
    ConfigCompatibilityWarning,
    ConfigError,
    FewShotConfig,
    VerificationConfig,
)

JUDGE = {"model_name": "judge", "interface": "openai_endpoint", "endpoint_base_url": "http://x/v1"}


def _original_model(name: str) -> dict[str, Any]:
    """A model as the original's full preset lists it (every field, mostly null)."""
    return {
        "id": name,
        "model_provider": None,
        "model_name": name,
        "temperature": 0.1,
        "max_tokens": 16384,
        "interface": "openai_endpoint",
        "endpoint_base_url": "http://127.0.0.1:9/v1",
        "system_prompt": None,
        "max_retries": 2,
        "mcp_urls_dict": None,
        "mcp_tool_filter": None,
        "mcp_tool_description_overrides": None,
        "mcp_http_timeout": None,
        "mcp_sse_read_timeout": None,
        "endpoint_api_key": None,
        "anthropic_base_url": None,
        "anthropic_api_key": None,
        "agent_runtime": None,
        "extra_kwargs": None,
        "agent_middleware": None,
        "max_context_tokens": None,
        "agent_timeout": None,
        "request_timeout": None,
        "retry_policy": None,
    }


def _original_fields() -> dict[str, Any]:
    """The original's current VerificationConfig fields at their defaults."""
    return {
        "answering_models": [_original_model("answerer")],
        "parsing_models": [_original_model("judge")],
        "replicate_count": 1,
        "parsing_only": False,
        "evaluation_mode": "template_only",
        "rubric_trait_names": None,
        "rubric_evaluation_strategy": "batch",
        "use_full_trace_for_template": False,
        "use_full_trace_for_rubric": True,
        "allow_partial_trace_scoring": True,
        "abstention_enabled": False,
        "sufficiency_enabled": False,
        "include_extraction_hints": True,
        "embedding_check_enabled": False,
        "embedding_check_model": "all-MiniLM-L6-v2",
        "embedding_check_threshold": 0.85,
        "async_enabled": True,
        "async_max_workers": 2,
        "max_concurrent_requests": None,
        "batch_timeout_seconds": None,
        "task_ordering": "auto",
        "answerer_concurrency_limits": None,
        "deep_judgment_mode": "disabled",
        "deep_judgment_max_excerpts_per_attribute": 3,
        "deep_judgment_fuzzy_match_threshold": 0.8,
        "deep_judgment_excerpt_retry_attempts": 2,
        "deep_judgment_search_enabled": False,
        "deep_judgment_search_tool": "tavily",
        "deep_judgment_rubric_mode": "disabled",
        "deep_judgment_rubric_global_excerpts": True,
        "deep_judgment_rubric_config": None,
        "deep_judgment_rubric_max_excerpts_default": 7,
        "deep_judgment_rubric_fuzzy_match_threshold_default": 0.8,
        "deep_judgment_rubric_excerpt_retry_attempts_default": 2,
        "deep_judgment_rubric_search_tool": "tavily",
        "few_shot_config": None,
        "prompt_config": None,
        "agentic_parsing": False,
        "agentic_parsing_trigger": "always",
        "agentic_judge_context": "workspace_only",
        "agentic_parsing_max_turns": 15,
        "agentic_parsing_timeout": 120.0,
        "agentic_parsing_materialize_trace": False,
        "agentic_parsing_persist_trace": False,
        "agentic_rubric_strategy": "individual",
        "agentic_rubric_parallel": False,
        "workspace_copy": True,
        "workspace_cleanup": True,
        "workspace_output_mode": "none",
        "workspace_output_dir": None,
        "workspace_output_exclude_patterns": [],
        "db_config": None,
        "request_timeout": 120.0,
        "scenario_turn_limit": 20,
        "replay_parse_on_hydration_mismatch": "fall_through",
        "custom_error_patterns": [],
        "max_requeue_count": 5,
    }


def test_a_full_original_preset_loads_silently() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defaults ask for nothing: no warning
        config = VerificationConfig.build(**_original_fields())
    assert config.deep_judgment_enabled is False
    assert config.parsing_models[0].temperature == 0.1
    assert config.parsing_models[0].extra_kwargs == {}


def test_fields_verifleet_has_are_used() -> None:
    fields = _original_fields()
    fields.update(
        deep_judgment_mode="full",
        max_concurrent_requests=7,
        parsing_instructions="Quote numbers exactly.",
        rubric_evaluation_strategy=None,
    )
    config = VerificationConfig.build(**fields)
    assert config.deep_judgment_enabled is True
    assert config.max_concurrency == 7
    assert config.prompt_config is not None
    assert config.prompt_config.parsing == "Quote numbers exactly."
    assert config.rubric_evaluation_strategy == "batch"
    fields["deep_judgment_mode"] = "reasoning_only"
    reasoning = VerificationConfig.build(**fields)
    assert (reasoning.deep_judgment_enabled, reasoning.deep_judgment_excerpts_enabled) == (
        True,
        False,
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("async_max_workers", 8),
        ("agentic_parsing", True),
        ("workspace_output_mode", "full"),
        ("batch_timeout_seconds", 600.0),
    ],
)
def test_fields_without_a_feature_are_accepted_with_a_warning(field: str, value: Any) -> None:
    fields = _original_fields()
    fields[field] = value
    with pytest.warns(ConfigCompatibilityWarning, match=field):
        VerificationConfig.build(**fields)


def test_model_fields_without_a_feature_warn() -> None:
    fields = _original_fields()
    fields["parsing_models"][0]["max_context_tokens"] = 8000
    with pytest.warns(ConfigCompatibilityWarning, match="max_context_tokens"):
        config = VerificationConfig.build(**fields)
    assert config.parsing_models[0].model_name == "judge"


def test_an_unknown_field_is_still_refused() -> None:
    with pytest.raises(ConfigError, match="not_a_field"):
        VerificationConfig.build(parsing_models=[JUDGE], parsing_only=True, not_a_field=1)


def test_original_preset_file_is_unwrapped_by_the_cli(tmp_path: Path) -> None:
    preset = {
        "_comment_overview": "saved by the original",
        "name": "mine",
        "description": None,
        "config": {**_original_fields(), "abstention_enabled": True},
    }
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(preset))
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = build_config(parser.parse_args(["--config", str(path)]))
    assert config.abstention_enabled is True
    assert [m.model_name for m in config.answering_models] == ["answerer"]


# --- few-shot -------------------------------------------------------------------


EXAMPLES = [{"question": f"Q{i}?", "answer": f"A{i}"} for i in range(10)]


def _originals_draw(question_id: str, pool: list[dict[str, str]], k: int) -> list[dict[str, str]]:
    """What the original computes: the global generator seeded with the low 31
    bits of the MD5 of the question id, then random.sample."""
    state = random.getstate()
    try:
        random.seed(int(hashlib.md5(question_id.encode()).hexdigest(), 16) & 0x7FFFFFFF)
        return random.sample(pool, k)
    finally:
        random.setstate(state)


def test_k_shot_samples_seeded_by_the_question_id() -> None:
    config = FewShotConfig(global_mode="k-shot", global_k=3)
    first = config.resolve("q-alpha", EXAMPLES)
    assert first == _originals_draw("q-alpha", EXAMPLES, 3)
    assert first != EXAMPLES[:3]  # sampled, not the first k
    assert config.resolve("q-alpha", EXAMPLES) == first  # same question, same draw
    assert config.resolve("q-beta", EXAMPLES) == _originals_draw("q-beta", EXAMPLES, 3)
    assert config.resolve("q-small", EXAMPLES[:2]) == EXAMPLES[:2]  # fewer than k: all


def test_few_shot_config_in_the_originals_current_fields() -> None:
    config = FewShotConfig.model_validate(
        {
            "source": "both",
            "pool_mode": "k-shot",
            "pool_k": 2,
            "global_examples": [{"question": "G?", "answer": "g"}],
            "question_configs": {"q1": {"mode": "all"}},
        }
    )
    assert config.global_mode == "k-shot" and config.global_k == 2
    shown = config.resolve("q2", EXAMPLES)
    assert shown == [*_originals_draw("q2", EXAMPLES, 2), {"question": "G?", "answer": "g"}]
    assert len(config.resolve("q1", EXAMPLES)) == 11
    pool_only = FewShotConfig.model_validate({**config.model_dump(), "source": "question_pool"})
    assert {"question": "G?", "answer": "g"} not in pool_only.resolve("q1", EXAMPLES)
    only_global = FewShotConfig.model_validate(
        {"source": "global", "global_examples": EXAMPLES[:1]}
    )
    assert only_global.resolve("q1", EXAMPLES) == EXAMPLES[:1]
    disabled = FewShotConfig.model_validate({"source": "disabled", "pool_mode": "all"})
    assert disabled.resolve("q1", EXAMPLES) == []


def test_compatibility_doc_names_every_dropped_field() -> None:
    from verifleet.schemas._config_compat import IGNORED_CONFIG_FIELDS, IGNORED_MODEL_FIELDS

    doc = (Path(__file__).parents[2] / "docs" / "compatibility.md").read_text()
    # Rows such as `agentic_parsing_*` cover every field with that prefix.
    prefixes = tuple(f"{p}_" for p in re.findall(r"`([a-z_]+)_\*`", doc))
    for name in [*IGNORED_CONFIG_FIELDS, *IGNORED_MODEL_FIELDS]:
        assert f"`{name}`" in doc or name.startswith(prefixes), name
