"""The investigator of agentic rubric traits, backed by the agent runtime."""

from __future__ import annotations

import time
from typing import Any

from verifleet.schemas import ModelConfig

from .._context import VerificationContext
from .._llm_protocol import Message

__all__ = ["TraitInvestigator"]

_STAGE = "rubric_evaluation"


class TraitInvestigator:
    """Runs the investigation of an agentic trait for one unit (the ``Investigate``
    function of rubric evaluation).

    The trait's agent is ``trait.model_override`` or the unit's parsing model; its
    tools are that model's MCP servers (opened for this investigation and closed
    after it). It may take ``max_turns`` model turns and ``timeout_seconds``
    (never past the unit deadline). Without MCP servers, a trait whose
    ``context_mode`` shows the answer is judged in one model call; a
    ``workspace_only`` trait then has nothing to investigate and fails.
    Usage goes to the unit's ``rubric_evaluation`` entry; model calls pass the
    endpoint gate.
    """

    def __init__(self, ctx: VerificationContext) -> None:
        self._ctx = ctx

    def _model(self, trait: Any) -> ModelConfig:
        override = getattr(trait, "model_override", None)
        return override if isinstance(override, ModelConfig) else self._ctx.parsing

    def has_tools(self, trait: Any) -> bool:
        """Whether the trait's agent gets MCP tools."""
        return bool(self._model(trait).mcp_urls_dict)

    def __call__(self, trait: Any, messages: list[Message]) -> str:
        """The investigation's trace as text.

        Raises:
            McpServerError: a server of the trait's model cannot be used.
            ModelCallError: a model call failed for good.
            AgentDeadlineError: the trait's ``timeout_seconds`` (or the unit deadline)
                passed.
            ValueError: a ``workspace_only`` trait whose model has no MCP servers.
        """
        ctx = self._ctx
        model = self._model(trait)
        deadline = time.monotonic() + float(trait.timeout_seconds)
        if ctx.deadline is not None:
            deadline = min(deadline, ctx.deadline)
        if not model.mcp_urls_dict:
            if trait.context_mode == "workspace_only":
                raise ValueError(
                    f"context_mode 'workspace_only' needs MCP servers on model "
                    f"'{model.model_name}' (model_override or the parsing model)"
                )
            caller = ctx.resources.caller(
                model, tracker=ctx.usage, config=ctx.config, deadline=deadline
            )
            return caller.invoke(messages, stage=_STAGE)
        run = ctx.resources.agent_runtime().run(
            model,
            messages,
            servers=dict(model.mcp_urls_dict),
            tool_filter=model.mcp_tool_filter,
            # One step per model turn and one per round of tool calls.
            recursion_limit=2 * int(trait.max_turns),
            tracker=ctx.usage,
            stage=_STAGE,
            policy=ctx.config.retry_policy,
            request_timeout=ctx.config.request_timeout,
            deadline=deadline,
            cache=ctx.config.cache,
        )
        text = run.text
        if run.recursion_limit_reached:
            text += f"\n\n[investigation stopped at its limit of {trait.max_turns} turns]"
        return text
