"""One real call per model before a job's units run or are queued.

An unreachable endpoint, a wrong model name or a revoked key would otherwise be
found by every unit of the job, each after its whole retry policy: thousands of
errored results and minutes of backoff where one call says it in seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from verifleet.pipeline import ModelCallError, PipelineResources, UsageTracker
from verifleet.schemas import (
    ConfigError,
    ModelConfig,
    RetryPolicy,
    VerificationConfig,
    interface_kind,
)

__all__ = ["PreflightError", "PreflightGate", "preflight_models"]

_PROMPT = [{"role": "user", "content": "Reply with the single word OK."}]
# A preflight answers "is this model there at all": two quick attempts, not the
# job's policy, whose backoff would make a dead endpoint take a minute to report.
_POLICY = RetryPolicy(max_attempts=2, initial_delay=0.5, max_delay=2.0)


class PreflightError(ConfigError):
    """One or more models failed their preflight call; the message names each."""


def _probe(model: ModelConfig) -> ModelConfig:
    # OpenAI-compatible servers accept a small max_tokens: the reply's content does
    # not matter and a small model would otherwise ramble up to its budget.
    if interface_kind(model.interface) == "openai_compatible":
        return model.model_copy(update={"max_tokens": 8, "mcp_urls_dict": None})
    return model.model_copy(update={"mcp_urls_dict": None})


def _distinct(config: VerificationConfig) -> dict[str, tuple[str, ModelConfig]]:
    """(role, model) of each distinct model that makes calls, by its key."""
    models: dict[str, tuple[str, ModelConfig]] = {}
    for role, group in (("answering", config.answering_models), ("parsing", config.parsing_models)):
        for model in group:
            if model.interface == "manual":
                continue
            models.setdefault(_key(model), (role, model))
    return models


def _key(model: ModelConfig) -> str:
    return model.model_dump_json(exclude={"id"})


def _checker(
    config: VerificationConfig, resources: PipelineResources | None, timeout: float
) -> Callable[[tuple[str, ModelConfig]], str | None]:
    """The probe of one (role, model): None when it answered, else why not."""
    resources = resources or PipelineResources()
    probe_config = config.model_copy(
        update={
            "retry_policy": _POLICY,
            "request_timeout": min(config.request_timeout, timeout),
            "cache": False,  # a preflight asks the model, never the cache
        }
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

    return check


def _error(problems: list[str], *, ran: str = "nothing was run or queued") -> PreflightError:
    return PreflightError(
        f"preflight: a model did not answer one test call, {ran}: "
        + "; ".join(problems)
        + " (--no-preflight skips this check)"
    )


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
    models = _distinct(config)
    if not models:
        return []
    check = _checker(config, resources, timeout)
    with ThreadPoolExecutor(
        max_workers=min(8, len(models)), thread_name_prefix="preflight"
    ) as pool:
        problems = [p for p in pool.map(check, models.values()) if p is not None]
    if problems:
        raise _error(problems)
    return [model.id or model.model_name for _role, model in models.values()]


class PreflightGate:
    """The preflight of a local run, beside its start-up and first units.

    Each model's test call runs in a thread of its own: all at once when the
    gate is made (``lazy`` False), or, for a run that answers calls from its
    cache (``lazy`` True), when the run first needs a real call of that model,
    so a re-run served wholly from the cache calls no model at all. The units'
    calls do not wait for it (a test call's round trip would otherwise be the
    job's first one, with nothing else in flight): the run records a result
    only once every test call started so far answered (:meth:`wait`), and a
    failed test call stops the run at once (:meth:`failure`, polled by the
    runner), so a model that does not answer still leaves nothing recorded.
    :meth:`before_call` (the pipeline's ``before_call`` hook) starts a lazy
    test call.

    Args:
        config: The run's config.
        lazy: Start a model's test call only when the run first needs it.
        timeout: Seconds per attempt at most.
    """

    def __init__(self, config: VerificationConfig, *, lazy: bool, timeout: float = 30.0) -> None:
        self._models = _distinct(config)
        self._check = _checker(config, None, timeout)
        self._threads = ThreadPoolExecutor(
            max_workers=max(1, min(8, len(self._models))), thread_name_prefix="preflight"
        )
        self._started: dict[str, Future[str | None]] = {}
        self._lock = threading.Lock()
        if not lazy:
            for key in self._models:
                self._start(key)

    def _start(self, key: str) -> Future[str | None]:
        with self._lock:
            future = self._started.get(key)
            if future is None:
                future = self._threads.submit(self._check, self._models[key])
                self._started[key] = future
            return future

    def before_call(self, model: ModelConfig) -> None:
        """Start ``model``'s test call if it has not started; waits for nothing
        and raises nothing (a failed test call stops the run from the thread
        that records its results, within a few hundredths of a second: a unit
        failing on it too would only log the same failure once per unit)."""
        if model.interface == "manual":
            return
        key = _key(model)
        for k in [key] if key in self._models else list(self._models):
            self._start(k)

    def wait(self) -> None:
        """Wait until every test call started so far answered.

        Raises:
            PreflightError: One or more did not (the message names each model).
        """
        with self._lock:
            futures = list(self._started.values())
        problems = [p for p in (f.result() for f in futures) if p is not None]
        if problems:
            raise _error(problems, ran="the run stopped")

    def failure(self) -> PreflightError | None:
        """The error of every test call that failed so far, None while none did."""
        with self._lock:
            done = [f for f in self._started.values() if f.done()]
        problems = [p for p in (f.result() for f in done) if p is not None]
        return _error(problems, ran="the run stopped") if problems else None

    def answered(self) -> int:
        """How many models answered their test call."""
        with self._lock:
            futures = list(self._started.values())
        return sum(1 for f in futures if f.done() and f.result() is None)

    def close(self) -> None:
        """Stop waiting for test calls not answered yet (their threads end with them)."""
        self._threads.shutdown(wait=False, cancel_futures=True)
