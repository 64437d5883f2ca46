"""Agent middleware: every model call of the agent goes through the endpoint gate,
the retry policy and the unit's usage tracker, like a plain model call; every tool
call is bounded by a timeout.

The agent runs on an event loop of its own (one per agent run, see ``_runtime``),
while the gates are blocking context managers shared with the synchronous
pipeline: entering one is done in a worker thread so a wait for capacity does not
stall the MCP sessions on the loop.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage

from verifleet.limits import Slot
from verifleet.schemas import ModelConfig, RetryPolicy

from .._llm import CallCache, CallGate, UsageTracker, classify_error
from .._llm._bound import no_gate
from .._llm._gate import estimate_tokens, gate_attempt, report_usage, usage_tokens
from .._llm_protocol import ModelCallError
from ._cached_steps import StepCache
from ._convert import _text

__all__ = ["GatedModelMiddleware", "ToolTimeoutMiddleware"]

Handler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


async def _enter(gate: AbstractContextManager[Slot]) -> Slot:
    """Enter ``gate`` in a thread; if this task is cancelled meanwhile, the gate
    is left again as soon as the thread got in (no leaked slot)."""
    task = asyncio.ensure_future(asyncio.to_thread(gate.__enter__))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:

        def _release(done: asyncio.Future[Slot]) -> None:
            if not done.cancelled() and done.exception() is None:
                gate.__exit__(None, None, None)

        task.add_done_callback(_release)
        raise


class GatedModelMiddleware(AgentMiddleware[Any, Any]):
    """Wraps each model call of the agent: gate, request timeout, retries, usage.

    Args:
        model: The agent's model configuration (the gate's key, the token estimate).
        tracker: The unit's usage tracker; every call is recorded under ``stage``.
        stage: Usage label (``answer_generation``, or ``rubric_evaluation`` for a
            trait investigation).
        gate: The endpoint gate (None: no limit).
        policy: Retry policy for transient errors.
        request_timeout: Seconds one model request may take.
        deadline: ``time.monotonic()`` after which no attempt starts.
        cache: The call cache, when the run uses it (``cache: true``).

    Failure: a call that fails for good raises :class:`ModelCallError` (non-transient
    at once; transient ones after the policy's attempts or at the deadline), which
    ends the agent run.
    """

    def __init__(
        self,
        model: ModelConfig,
        *,
        tracker: UsageTracker,
        stage: str,
        gate: CallGate | None,
        policy: RetryPolicy,
        request_timeout: float,
        deadline: float | None,
        cache: CallCache | None = None,
    ) -> None:
        super().__init__()
        self._model = model
        self._tracker = tracker
        self._stage = stage
        self._gate = gate or no_gate
        self._policy = policy
        self._timeout = request_timeout
        self._deadline = deadline
        self.model_calls = 0
        self._steps = StepCache(cache, model, tracker, stage) if cache is not None else None

    @property
    def name(self) -> str:
        """Middleware name shown in langchain's graph."""
        return "VerifleetGatedModel"

    async def _attempt(self, request: ModelRequest[Any], handler: Handler) -> ModelResponse[Any]:
        texts = [{"content": _text(m.content)} for m in request.messages]
        if request.system_message is not None:
            texts.append({"content": _text(request.system_message.content)})
        gate = gate_attempt(self._gate, self._model, estimate_tokens(self._model, texts))
        slot = await _enter(gate)
        try:
            response = await asyncio.wait_for(handler(request), timeout=self._timeout)
        except BaseException as exc:
            # The gate reads the failure (e.g. a 429's Retry-After pauses the endpoint).
            gate.__exit__(type(exc), exc, exc.__traceback__)
            raise
        usage = None
        for message in response.result:
            if isinstance(message, AIMessage):
                usage = message.usage_metadata
        try:
            report_usage(slot, usage_tokens(dict(usage) if usage else None))
        finally:
            gate.__exit__(None, None, None)
        self._tracker.record_usage(
            self._stage, model=self._model.model_name, usage=dict(usage) if usage else None
        )
        return response

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Handler
    ) -> ModelResponse[Any]:
        """One model call of the agent, retried per the policy (see the class);
        from the call cache when the run has one and the same step was made."""
        if self._steps is None:
            return await self._call(request, handler)
        key = self._steps.key(request)
        stored = await self._steps.lookup(key)
        if stored is not None:
            self.model_calls += 1
            return stored
        return await self._steps.keep(key, await self._call(request, handler))

    async def _call(self, request: ModelRequest[Any], handler: Handler) -> ModelResponse[Any]:
        attempt = 0
        label = f"agent model call ({self._model.model_name})"
        while True:
            attempt += 1
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise ModelCallError(
                    f"unit deadline exceeded before attempt {attempt} of {label}",
                    transient=True,
                    attempts=attempt - 1,
                )
            self.model_calls += 1
            try:
                return await self._attempt(request, handler)
            except ModelCallError:
                raise
            except Exception as exc:
                info = classify_error(exc)
                if not info.transient:
                    raise ModelCallError(
                        info.description, transient=False, attempts=attempt
                    ) from exc
                if attempt >= self._policy.max_attempts:
                    raise ModelCallError(
                        f"{info.description} after {attempt} attempts",
                        transient=True,
                        attempts=attempt,
                    ) from exc
                delay = self._policy.delay_before(attempt + 1, random.random())
                if info.retry_after is not None and info.retry_after > delay:
                    delay = info.retry_after
                if self._deadline is not None and time.monotonic() + delay >= self._deadline:
                    raise ModelCallError(
                        f"{info.description} after {attempt} attempts (the next retry "
                        "would pass the unit deadline)",
                        transient=True,
                        attempts=attempt,
                    ) from exc
                await asyncio.sleep(delay)


class ToolTimeoutMiddleware(AgentMiddleware[Any, Any]):
    """Bounds each tool call by ``timeout`` seconds.

    A tool call that takes longer, or whose MCP session fails (a dropped
    connection, a protocol error), becomes an error tool message the agent sees
    (``status="error"``) instead of ending the run: the model may try another
    way, and the failure is counted in ``suspect_failed_tool_calls``.
    """

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self._timeout = timeout

    @property
    def name(self) -> str:
        """Middleware name shown in langchain's graph."""
        return "VerifleetToolTimeout"

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run the tool call with the timeout (see the class)."""
        call = request.tool_call
        try:
            return await asyncio.wait_for(handler(request), timeout=self._timeout)
        except TimeoutError:
            text = f"error: tool '{call['name']}' timed out after {self._timeout:g} s"
        except Exception as exc:
            from ._servers import describe_server_error

            text = f"error: tool '{call['name']}' failed: {describe_server_error(exc)}"
        return ToolMessage(
            content=text, tool_call_id=call.get("id") or "", name=call["name"], status="error"
        )
