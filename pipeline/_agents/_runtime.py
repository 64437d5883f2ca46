"""The built-in agent runtime: langchain's ``create_agent`` over the model's chat
client, with the tools of its MCP servers.

One run: open a session per MCP server (once), load their tools, run the agent
until it answers without a tool call or reaches the turn limit, close every
session (on every path), and return the trace. The agent's model calls pass the
same endpoint gate, retry policy and usage accounting as plain model calls
(:class:`~._middleware.GatedModelMiddleware`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from verifleet.schemas import ModelConfig, RetryPolicy, VerificationConfig

from .._answer import CachedAnswer
from .._llm import CallCache, CallGate, ChatModelCache, UsageTracker
from .._llm_protocol import Message
from .._trace import render_trace
from ._convert import agent_metrics, trace_of
from ._loop import run_on_agent_loop
from ._middleware import GatedModelMiddleware, ToolTimeoutMiddleware
from ._servers import open_tools

__all__ = ["TOOL_TIMEOUT_ENV", "AgentRun", "McpAgentRunner"]

#: Seconds one tool call may take (default: the run's ``request_timeout``).
TOOL_TIMEOUT_ENV = "VERIFLEET_MCP_TOOL_TIMEOUT"

_STAGE = "answer_generation"


@dataclass
class AgentRun:
    """What one agent run produced.

    Attributes:
        trace: ``trace_messages`` (see :func:`~._convert.trace_of`).
        recursion_limit_reached: The run was stopped at its turn limit; the
            trace holds every message up to that point.
        metrics: ``agent_metrics`` of the trace.
        model_calls: Model requests made (retries included).
    """

    trace: list[dict[str, Any]] = field(default_factory=list)
    recursion_limit_reached: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    model_calls: int = 0

    @property
    def text(self) -> str:
        """The trace rendered as text (what ``raw_llm_response`` holds)."""
        return render_trace(self.trace)


def tool_timeout(request_timeout: float) -> float:
    """Seconds per tool call: ``VERIFLEET_MCP_TOOL_TIMEOUT`` when set to a positive
    number, else ``request_timeout``."""
    raw = os.environ.get(TOOL_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else 0.0
    except ValueError:
        value = 0.0
    return value if value > 0 else request_timeout


def _lc_messages(messages: Sequence[Message]) -> tuple[str | None, list[BaseMessage]]:
    system: list[str] = []
    out: list[BaseMessage] = []
    for message in messages:
        role, content = message.get("role"), str(message.get("content", ""))
        if role == "system":
            system.append(content)
        elif role == "assistant":
            out.append(AIMessage(content=content))
        else:
            out.append(HumanMessage(content=content))
    return ("\n\n".join(system) or None), out


class McpAgentRunner:
    """Runs tool-using agents for a process; the default ``PipelineResources.agent``.

    Thread-safe: any number of units may run agents at once; they share the
    process's chat clients and its agent event loop.

    Args:
        clients: The per-process chat client cache (the agent uses the model's
            langchain client from it).
        call_gate: The endpoint gate every model call of an agent enters.
        call_cache: The call cache, used by runs whose config has ``cache: true``.
    """

    def __init__(
        self,
        *,
        clients: ChatModelCache,
        call_gate: CallGate | None = None,
        call_cache: CallCache | None = None,
    ) -> None:
        self._clients = clients
        self._gate = call_gate
        self._cache = call_cache

    def __call__(
        self,
        model: ModelConfig,
        messages: Sequence[Message],
        *,
        tracker: UsageTracker,
        config: VerificationConfig,
        deadline: float | None,
    ) -> CachedAnswer:
        """Answer ``messages`` with ``model``'s agent (the ``AgentRunner`` protocol).

        Returns:
            The trace as a :class:`CachedAnswer` (rendered text, messages,
            recursion flag, agent metrics); usage is in ``tracker`` under
            ``answer_generation``.

        Raises:
            McpServerError: a server is refused or unreachable.
            ModelCallError: a model call of the agent failed for good.
            AgentDeadlineError: the unit deadline passed during the run.
        """
        run = self.run(
            model,
            messages,
            servers=dict(model.mcp_urls_dict or {}),
            tool_filter=model.mcp_tool_filter,
            recursion_limit=model.agent_recursion_limit,
            tracker=tracker,
            stage=_STAGE,
            policy=config.retry_policy,
            request_timeout=config.request_timeout,
            deadline=deadline,
            cache=config.cache,
        )
        return CachedAnswer(
            raw_llm_response=run.text,
            trace_messages=run.trace,
            recursion_limit_reached=run.recursion_limit_reached,
            agent_metrics=run.metrics,
        )

    def run(
        self,
        model: ModelConfig,
        messages: Sequence[Message],
        *,
        servers: dict[str, str],
        tool_filter: Sequence[str] | None,
        recursion_limit: int,
        tracker: UsageTracker,
        stage: str,
        policy: RetryPolicy,
        request_timeout: float,
        deadline: float | None,
        cache: bool = False,
    ) -> AgentRun:
        """Run one agent to its end (blocking); see :meth:`__call__` for failures.

        Args:
            model: The agent's model.
            messages: The prompt (system messages become the agent's system prompt).
            servers: ``{name: address}`` of its MCP servers.
            tool_filter: Tool names to offer (None: all).
            recursion_limit: langgraph's step limit: each model turn and each round
                of tool calls is one step.
            tracker: Where usage goes, under ``stage``.
            stage: Usage label.
            policy: Retry policy of the model calls.
            request_timeout: Seconds per model request (tool calls: see
                :func:`tool_timeout`).
            deadline: ``time.monotonic()`` by which the run must end.
            cache: Answer the agent's steps from the call cache where they were
                made before (with the runtime's ``call_cache``).
        """
        coro = self._arun(
            model,
            messages,
            servers=servers,
            tool_filter=tool_filter,
            recursion_limit=recursion_limit,
            tracker=tracker,
            stage=stage,
            policy=policy,
            request_timeout=request_timeout,
            deadline=deadline,
            cache=self._cache if cache else None,
        )
        return run_on_agent_loop(coro, deadline=deadline)

    async def _arun(
        self,
        model: ModelConfig,
        messages: Sequence[Message],
        *,
        servers: dict[str, str],
        tool_filter: Sequence[str] | None,
        recursion_limit: int,
        tracker: UsageTracker,
        stage: str,
        policy: RetryPolicy,
        request_timeout: float,
        deadline: float | None,
        cache: CallCache | None = None,
    ) -> AgentRun:
        from langchain.agents import create_agent
        from langgraph.errors import GraphRecursionError

        system_prompt, prompt = _lc_messages(messages)
        chat = self._clients.get(model, request_timeout=request_timeout)
        gated = GatedModelMiddleware(
            model,
            tracker=tracker,
            stage=stage,
            gate=self._gate,
            policy=policy,
            request_timeout=request_timeout,
            deadline=deadline,
            cache=cache,
        )
        async with AsyncExitStack() as stack:
            tools = (
                await open_tools(stack, servers, timeout=request_timeout, tool_filter=tool_filter)
                if servers
                else []
            )
            agent: Any = create_agent(
                chat,
                tools,
                system_prompt=system_prompt,
                middleware=[gated, ToolTimeoutMiddleware(tool_timeout(request_timeout))],
            )
            state: list[BaseMessage] = list(prompt)
            reached = False
            try:
                async for values in agent.astream(
                    {"messages": prompt},
                    config={"recursion_limit": recursion_limit},
                    stream_mode="values",
                ):
                    state = list(values.get("messages", state))
            except GraphRecursionError:
                # The state streamed after each step is the trace up to the limit.
                reached = True
        trace = trace_of(state, system_prompt)
        return AgentRun(
            trace=trace,
            recursion_limit_reached=reached,
            metrics=agent_metrics(trace),
            model_calls=gated.model_calls,
        )
