"""VerificationConfig / ModelConfig: defaults, env overrides, field-naming errors."""

from __future__ import annotations

import pytest

from verifleet.schemas import ConfigError, ModelConfig, RetryPolicy, VerificationConfig


def _cfg(**kw: object) -> VerificationConfig:
    base: dict[str, object] = {
        "answering_models": [{"model_name": "a", "model_provider": "openai"}],
        "parsing_models": [{"model_name": "p", "model_provider": "openai"}],
    }
    base.update(kw)
    return VerificationConfig.build(**base)


def test_spec_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("EMBEDDING_CHECK", "EMBEDDING_CHECK_MODEL", "EMBEDDING_CHECK_THRESHOLD"):
        monkeypatch.delenv(var, raising=False)
    cfg = _cfg()
    assert cfg.evaluation_mode == "template_only"
    assert cfg.replicate_count == 1
    assert cfg.abstention_enabled is False and cfg.sufficiency_enabled is False
    assert cfg.embedding_check_enabled is False
    assert cfg.embedding_check_model == "all-MiniLM-L6-v2"
    assert cfg.embedding_check_threshold == 0.85
    assert cfg.deep_judgment_max_excerpts_per_attribute == 3
    assert cfg.deep_judgment_fuzzy_match_threshold == 0.80
    assert cfg.deep_judgment_excerpt_retry_attempts == 2
    assert cfg.rubric_evaluation_strategy == "batch"
    assert cfg.use_full_trace_for_template is False and cfg.use_full_trace_for_rubric is True
    assert cfg.answering_models[0].system_prompt and cfg.parsing_models[0].system_prompt


def test_embedding_env_overrides_only_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDING_CHECK", "true")
    monkeypatch.setenv("EMBEDDING_CHECK_MODEL", "other-model")
    monkeypatch.setenv("EMBEDDING_CHECK_THRESHOLD", "0.5")
    cfg = _cfg()
    assert (cfg.embedding_check_enabled, cfg.embedding_check_model) == (True, "other-model")
    assert cfg.embedding_check_threshold == 0.5
    explicit = _cfg(embedding_check_enabled=False, embedding_check_threshold=0.9)
    assert explicit.embedding_check_enabled is False
    assert explicit.embedding_check_threshold == 0.9


def test_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"parsing_models\[0\]\.model_name: must not be empty"):
        _cfg(parsing_models=[{"model_name": " "}])
    with pytest.raises(ConfigError, match="embedding_check_threshold"):
        _cfg(embedding_check_threshold=1.5)
    with pytest.raises(ConfigError, match="rubric_enabled"):
        _cfg(rubric_enabled=True)
    with pytest.raises(ConfigError, match="answering_models"):
        _cfg(answering_models=[])


def test_rubric_modes_enable_rubrics() -> None:
    cfg = _cfg(evaluation_mode="rubric_only")
    assert cfg.rubric_enabled and cfg.rubric_stages_enabled and not cfg.template_stages_enabled


@pytest.mark.parametrize(
    ("spec", "interface", "name", "extra"),
    [
        ("openai:gpt-4.1-mini", "langchain", "gpt-4.1-mini", ("model_provider", "openai")),
        (
            "http://127.0.0.1:8080/v1#smol",
            "openai_endpoint",
            "smol",
            ("endpoint_base_url", "http://127.0.0.1:8080/v1"),
        ),
        (
            "manual:answers.jsonl",
            "manual",
            "answers.jsonl",
            ("manual_traces_path", "answers.jsonl"),
        ),
    ],
)
def test_model_spec_forms(spec: str, interface: str, name: str, extra: tuple[str, str]) -> None:
    model = ModelConfig.parse(spec)
    assert (model.interface, model.model_name) == (interface, name)
    assert getattr(model, extra[0]) == extra[1]


def test_bad_model_spec() -> None:
    with pytest.raises(ConfigError, match="expected 'provider:model'"):
        ModelConfig.parse("gpt4")


def test_identity_of_answering_and_parsing() -> None:
    model = ModelConfig(model_name="m", mcp_urls_dict={"b": "u", "a": "v"})
    assert model.identity().tools == ["a", "b"]
    assert model.identity().display_string == "langchain:m +[a, b]"
    assert model.identity().canonical_key == "langchain:m:a|b"
    assert model.identity(role="parsing").tools == []


def test_retry_delays_grow_and_cap() -> None:
    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, max_delay=5.0, jitter=0.0)
    assert [policy.delay_before(n, 0.5) for n in (1, 2, 3, 4, 5)] == [0.0, 1.0, 2.0, 4.0, 5.0]
    jittered = RetryPolicy(initial_delay=1.0, jitter=0.5)
    assert jittered.delay_before(2, 0.0) == 0.5 and jittered.delay_before(2, 0.999) > 1.49
