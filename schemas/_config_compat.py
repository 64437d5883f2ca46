"""Read the original framework's ``VerificationConfig`` and ``ModelConfig`` fields.

A preset written by the original holds fields verifleet does not have. Each one is
either used (mapped onto the verifleet field that does the same) or accepted and
dropped with a :class:`ConfigCompatibilityWarning` saying why; nothing the original
writes makes the config fail to load, except a value verifleet cannot honour
safely (an unknown model ``interface`` still fails, naming the field). A dropped
field that holds the original's default value (what a full preset lists) is
dropped silently: it asks for nothing. ``docs/compatibility.md`` lists every field.
"""

from __future__ import annotations

import warnings
from collections.abc import Container, Mapping

__all__ = [
    "IGNORED_CONFIG_FIELDS",
    "IGNORED_MODEL_FIELDS",
    "ConfigCompatibilityWarning",
    "adapt_original_config",
    "adapt_original_model",
    "unwrap_preset",
]


class ConfigCompatibilityWarning(UserWarning):
    """A field of the original framework's configuration is accepted but has no
    effect in verifleet (the message names it and says why)."""


_NO_DEFAULT = object()

# field -> (the original's default, why verifleet drops it)
IGNORED_CONFIG_FIELDS: dict[str, tuple[object, str]] = {
    "allow_partial_trace_scoring": (True, "verifleet has no answer-generation timeout truncation"),
    "include_extraction_hints": (True, "the parsing prompt is fixed"),
    "async_enabled": (True, "units always run in parallel (max_concurrency, the fleet)"),
    "async_max_workers": (2, "parallelism is max_concurrency and the number of workers"),
    "batch_timeout_seconds": (None, "use unit_deadline (per unit) instead"),
    "task_ordering": ("auto", "the broker decides the order units run in"),
    "answerer_concurrency_limits": (None, "set max_concurrency on each model instead"),
    "agentic_parsing": (False, "agentic parsing is not implemented"),
    "agentic_parsing_trigger": ("always", "agentic parsing is not implemented"),
    "agentic_judge_context": ("workspace_only", "agentic parsing is not implemented"),
    "agentic_parsing_max_turns": (15, "agentic parsing is not implemented"),
    "agentic_parsing_timeout": (120.0, "agentic parsing is not implemented"),
    "agentic_parsing_materialize_trace": (False, "agentic parsing is not implemented"),
    "agentic_parsing_persist_trace": (False, "agentic parsing is not implemented"),
    "agentic_rubric_strategy": ("individual", "each agentic trait runs on its own"),
    "agentic_rubric_parallel": (False, "each agentic trait runs on its own"),
    "workspace_copy": (True, "question workspaces are not implemented"),
    "workspace_cleanup": (True, "question workspaces are not implemented"),
    "workspace_output_mode": ("none", "question workspaces are not implemented"),
    "workspace_output_dir": (None, "question workspaces are not implemented"),
    "workspace_output_exclude_patterns": (_NO_DEFAULT, "question workspaces are not implemented"),
    "db_config": (None, "results go to the result store (Redis) and export files"),
    "replay_store": (None, "replay stores are not implemented"),
    "replay_parse_on_hydration_mismatch": ("fall_through", "replay stores are not implemented"),
    "skip_triples": (None, "use resume (done units are skipped) instead"),
    "custom_error_patterns": (_NO_DEFAULT, "transient errors are classified by status code"),
    "max_requeue_count": (5, "the broker redelivers lost units itself"),
    # The original strips this one itself (its from_overrides injects it).
    "deep_judgment_rubric_search_enabled": (_NO_DEFAULT, "not a field of the original either"),
}

# ModelConfig field -> (the original's default, why verifleet drops it)
IGNORED_MODEL_FIELDS: dict[str, tuple[object, str]] = {
    "max_retries": (2, "retries follow the run's retry_policy"),
    "mcp_tool_description_overrides": (None, "MCP tools keep their own descriptions"),
    "mcp_http_timeout": (None, "MCP calls use request_timeout"),
    "mcp_sse_read_timeout": (None, "MCP calls use request_timeout"),
    "endpoint_api_key": (None, "keys are never stored in a config: set api_key_env"),
    "anthropic_base_url": (None, "use interface openai_endpoint with endpoint_base_url"),
    "anthropic_api_key": (None, "keys are never stored in a config: set api_key_env"),
    "agent_runtime": (None, "agent runtimes are not implemented"),
    "agent_middleware": (None, "agent middleware is not implemented"),
    "max_context_tokens": (None, "not used by this version"),
    "agent_timeout": (None, "use the run's unit_deadline"),
    "request_timeout": (None, "use the run's request_timeout"),
    "retry_policy": (None, "use the run's retry_policy"),
    "manual_traces": (None, "use manual_traces_path"),
}

_PROMPT_SHORTCUTS = {
    "generation_instructions": "generation",
    "parsing_instructions": "parsing",
    "abstention_detection_instructions": "abstention_detection",
    "sufficiency_detection_instructions": "sufficiency_detection",
    "rubric_evaluation_instructions": "rubric_evaluation",
    "deep_judgment_instructions": "deep_judgment",
    "agentic_parsing_instructions": "agentic_parsing",
}

_RETRY_FIELDS = {"max_attempts", "initial_delay", "multiplier", "max_delay", "jitter"}


def _warn(what: str, name: str, why: str) -> None:
    warnings.warn(
        f"{what} field {name!r} of the original framework has no effect in verifleet: {why}",
        ConfigCompatibilityWarning,
        stacklevel=4,
    )


def _drop(
    data: dict[str, object],
    table: Mapping[str, tuple[object, str]],
    known: Container[str],
    what: str,
) -> None:
    for name, (default, why) in table.items():
        if name in known or name not in data:
            continue  # a field verifleet has (now or after a merge) is never dropped
        value = data.pop(name)
        if value is None or value == default or value in ([], {}):
            continue
        _warn(what, name, why)


def unwrap_preset(data: dict[str, object]) -> dict[str, object]:
    """The config of an original preset file (``{"name", "description",
    "config": {...}}``, comments under ``_comment*`` keys); other data as is."""
    inner = data.get("config")
    if isinstance(inner, dict) and "parsing_models" not in data:
        return dict(inner)
    return {k: v for k, v in data.items() if not k.startswith("_comment")}


def adapt_original_config(data: dict[str, object], known: Container[str]) -> dict[str, object]:
    """Map or drop the original's ``VerificationConfig`` fields in ``data``.

    Args:
        data: The raw field mapping (not modified).
        known: verifleet's own field names (never touched).

    Returns:
        A new mapping with only verifleet's fields; warnings name each dropped
        field that asked for something.
    """
    data = dict(data)
    mode = data.pop("deep_judgment_mode", None) if "deep_judgment_mode" not in known else None
    if mode is not None:
        if mode not in ("disabled", "reasoning_only", "full"):
            data["deep_judgment_mode"] = mode  # let validation name the bad value
        else:
            data.setdefault("deep_judgment_enabled", mode != "disabled")
            if mode == "reasoning_only":
                data.setdefault("deep_judgment_excerpts_enabled", False)
    if data.get("rubric_evaluation_strategy", "batch") is None:
        data["rubric_evaluation_strategy"] = "batch"  # the original allows None
    if "max_concurrent_requests" in data and "max_concurrent_requests" not in known:
        value = data.pop("max_concurrent_requests")
        if value is not None:
            data.setdefault("max_concurrency", value)
    shortcuts = {
        target: data.pop(name)
        for name, target in _PROMPT_SHORTCUTS.items()
        if name in data and name not in known
    }
    shortcuts = {k: v for k, v in shortcuts.items() if v is not None}
    prompt = data.get("prompt_config")
    if shortcuts or isinstance(prompt, dict):
        merged = dict(prompt) if isinstance(prompt, dict) else {}
        for key, value in shortcuts.items():
            merged.setdefault(key, value)
        agentic = merged.pop("agentic_parsing", None)
        if agentic:
            _warn("PromptConfig", "agentic_parsing", "agentic parsing is not implemented")
        data["prompt_config"] = merged
    retry = data.get("retry_policy")
    if isinstance(retry, dict) and set(retry) - _RETRY_FIELDS:
        # The original's policy has per-error-category budgets; ours is one curve.
        data.pop("retry_policy")
        _warn("VerificationConfig", "retry_policy", "per-category budgets; the default is used")
    _drop(data, IGNORED_CONFIG_FIELDS, known, "VerificationConfig")
    return data


def adapt_original_model(data: dict[str, object], known: Container[str]) -> dict[str, object]:
    """Map or drop the original's ``ModelConfig`` fields in ``data`` (see
    :func:`adapt_original_config`); a manual model without a name is named
    ``manual`` as in the original."""
    data = dict(data)
    if data.get("extra_kwargs", {}) is None:
        data["extra_kwargs"] = {}
    if data.get("model_name") is None and data.get("interface") == "manual":
        data["model_name"] = "manual"
    if data.get("max_tokens") is None:
        data.pop("max_tokens", None)
    _drop(data, IGNORED_MODEL_FIELDS, known, "ModelConfig")
    return data
