"""The answering model's output, as stage 2 produces it and later units reuse it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from verifleet.schemas import ModelCall

__all__ = ["CachedAnswer"]


class CachedAnswer(BaseModel):
    """One generated answer: reused by every parsing model of a unit, or passed in
    by a caller that already has it (e.g. a resumed task).

    Attributes:
        raw_llm_response: The response text (a rendered trace for agents/traces).
        trace_messages: Structured messages when the answer is a trace.
        recursion_limit_reached: The agent hit its turn limit.
        agent_metrics: Tool-call metrics of an agent, if one answered.
        answering_mcp_servers: MCP servers attached to the answering model.
        usage: The ``answer_generation`` usage entry
            (``input_tokens``, ``output_tokens``, ``total_tokens``, ``model``).
        few_shot_example_count: How many few-shot examples the prompt carried.
        error: Why generation failed; every result of the unit reports it.
        calls: The answering call(s) as recorded (messages sent, raw reply);
            every result of the unit shows them.
    """

    model_config = ConfigDict(extra="forbid")

    raw_llm_response: str = ""
    trace_messages: list[dict[str, object]] = Field(default_factory=list)
    recursion_limit_reached: bool = False
    agent_metrics: dict[str, object] | None = None
    answering_mcp_servers: list[str] | None = None
    usage: dict[str, object] | None = None
    few_shot_example_count: int = 0
    error: str | None = None
    calls: list[ModelCall] = Field(default_factory=list)
