"""One real call per model before a job's units run or are queued.

An unreachable endpoint, a wrong model name or a revoked key would otherwise be
found by every unit of the job, each after its whole retry policy: thousands of
errored results and minutes of backoff where one call says it in seconds.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from verifleet.pipeline import ModelCallError, PipelineResources, UsageTracker
from verifleet.schemas import ConfigError, ModelConfig, RetryPolicy, VerificationConfig

__all__ = ["PreflightError", "preflight_models"]

_PROMPT = [{"role": "user", "content": "Reply with the single word OK."}]
# A preflight answers "is this model there at all": two quick attempts, not the
# job's policy, whose backoff would make a dead endpoint take a minute to report.
_POLICY = RetryPolicy(max_attempts=2, initial_delay=0.5, max_delay=2.0)
_OPENAI_STYLE = ("openai_endpoint", "openrouter")


class PreflightError(ConfigError):
    """One or more models failed their preflight call; the message names each."""


def _probe(model: ModelConfig) -> ModelConfig:
    # OpenAI-compatible servers accept a small max_tokens: the reply's content does
    # not matter and a small model would otherwise ramble up to its budget.
    if model.interface in _OPENAI_STYLE:
        return model.model_copy(update={"max_tokens": 8, "mcp_urls_dict": None})
    return model.model_copy(update={"mcp_urls_dict": None})


def preflight_models(
    config: VerificationConfig,
    *,
    resources: PipelineResources | None = None,
    timeout: float = 30.0,
) -> list[str]:
    """Call every distinct answering and parsing model once, all at once.

    ``manual`` models (recorded answers) make no calls and are not checked.

    Args:
        config: The job's config (its models; its request timeout, capped by ``timeout``).
        resources: Whose callers to use (a scripted ``caller_factory`` is honoured).
        timeout: Seconds per attempt at most.

    Returns:
        The ids of the models checked, in config order.

    Raises:
        PreflightError: naming every model whose call failed and why.
    """
    resources = resources or PipelineResources()
    models: dict[str, tuple[str, ModelConfig]] = {}
    for role, group in (("answering", config.answering_models), ("parsing", config.parsing_models)):
        for model in group:
            if model.interface == "manual":
                continue
            models.setdefault(model.model_dump_json(exclude={"id"}), (role, model))
    if not models:
        return []
    probe_config = config.model_copy(
        update={"retry_policy": _POLICY, "request_timeout": min(config.request_timeout, timeout)}
    )

    def check(item: tuple[str, ModelConfig]) -> str | None:
        role, model = item
        caller = resources.caller(_probe(model), tracker=UsageTracker(), config=probe_config)
        try:
            caller.invoke(_PROMPT, stage="preflight")
        except ModelCallError as exc:
            return f"{role} model {model.id}: {exc}"
        except Exception as exc:  # any failure of the one call is the model's problem
            return f"{role} model {model.id}: {type(exc).__name__}: {exc}"
        return None

    with ThreadPoolExecutor(
        max_workers=min(8, len(models)), thread_name_prefix="preflight"
    ) as pool:
        problems = [p for p in pool.map(check, models.values()) if p is not None]
    if problems:
        raise PreflightError(
            "preflight: a model did not answer one test call, nothing was run or queued: "
            + "; ".join(problems)
            + " (--no-preflight skips this check)"
        )
    return [model.id or model.model_name for _role, model in models.values()]
