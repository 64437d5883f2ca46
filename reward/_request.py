"""What ``POST /verify`` and a rollouts file accept.

Two request shapes:

* the spec's ``BaseVerifyRequest``: ``responses_create_params`` (the task: ``input``
  messages, ``model``, ``tools``, ``metadata``) and ``response`` (the agent's full
  trajectory: Responses-API ``output`` items). Extra top-level fields of a rollout
  (``question_id``, ``expected_answer``...) are kept and echoed back.
* a plain form: ``question_id`` or an inline ``question`` (text + answer template),
  and the response as ``response`` text or ``messages``.

The question of a spec-shaped request is found by ``question_id`` (top level, or in
``responses_create_params.metadata``), else by the text of its last user message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from verifleet.pipeline import CachedAnswer
from verifleet.schemas import Rubric, VerifleetError

__all__ = [
    "AgentResponse",
    "InlineQuestion",
    "InvalidRequestError",
    "PlainVerifyRequest",
    "ResponseCreateParams",
    "ResponsesVerifyRequest",
    "UnknownQuestionError",
    "VerifyRequest",
    "request_answer",
    "request_kind",
    "requested_question_id",
    "requested_question_text",
]

_ROLE_ALIASES = {"ai": "assistant", "human": "user", "function": "tool"}


class InvalidRequestError(VerifleetError, ValueError):
    """A request that cannot be verified: no usable response, an unknown question.

    The service answers it with a 4xx; the rollouts scorer reports its line.
    """


class UnknownQuestionError(InvalidRequestError):
    """The request names a question the benchmark does not have."""


class ResponseCreateParams(BaseModel):
    """The task the agent was given (a Responses-API create request)."""

    model_config = ConfigDict(extra="allow")

    input: str | list[dict[str, object]]
    model: str | None = None
    instructions: str | None = None
    tools: list[dict[str, object]] | None = None
    metadata: dict[str, object] | None = None


class AgentResponse(BaseModel):
    """The agent's complete response: ``output`` items (messages, function calls,
    function call outputs, reasoning) in order."""

    model_config = ConfigDict(extra="allow")

    id: str | None = None
    model: str | None = None
    output: list[dict[str, object]]


class ResponsesVerifyRequest(BaseModel):
    """The spec's ``BaseVerifyRequest``; extra fields travel along unchanged.

    A rollout in the spec's output format, with the trajectory as a top-level
    ``output`` list instead of ``response.output``, is accepted too.
    """

    model_config = ConfigDict(extra="allow")

    responses_create_params: ResponseCreateParams
    response: AgentResponse
    question_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _top_level_output(cls, data: object) -> object:
        if isinstance(data, Mapping) and "response" not in data and "output" in data:
            data = dict(data)
            data["response"] = {"output": data.pop("output")}
        return data


class InlineQuestion(BaseModel):
    """A question sent with the request instead of one of the benchmark's."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    text: str = Field(min_length=1)
    answer_template: str = Field(min_length=1)
    raw_answer: str | None = None
    question_rubric: Rubric | None = None


class PlainVerifyRequest(BaseModel):
    """The plain form: one question and one response."""

    model_config = ConfigDict(extra="forbid")

    question_id: str | None = None
    question: InlineQuestion | None = None
    response: str | None = None
    messages: list[dict[str, object]] | None = None

    @model_validator(mode="after")
    def _exactly_one_each(self) -> PlainVerifyRequest:
        if (self.question_id is None) == (self.question is None):
            raise ValueError("give exactly one of 'question_id' and 'question'")
        if (self.response is None) == (self.messages is None):
            raise ValueError("give exactly one of 'response' and 'messages'")
        return self


def request_kind(body: object) -> str:
    """Which request shape ``body`` is: ``responses`` when it carries
    ``responses_create_params``, a ``response`` object or an ``output`` list,
    else ``plain``."""
    if isinstance(body, Mapping):
        if "responses_create_params" in body or isinstance(body.get("response"), Mapping):
            return "responses"
        if isinstance(body.get("output"), list):
            return "responses"
    elif isinstance(body, ResponsesVerifyRequest):
        return "responses"
    return "plain"


VerifyRequest = Annotated[
    Annotated[ResponsesVerifyRequest, Tag("responses")]
    | Annotated[PlainVerifyRequest, Tag("plain")],
    Discriminator(request_kind),
]
"""Either request shape, told apart by :func:`request_kind`."""


def _text(content: object) -> str:
    """Text of a message ``content``: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
        ]
        return "".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def requested_question_id(request: ResponsesVerifyRequest | PlainVerifyRequest) -> str | None:
    """The question id the request names, if any."""
    if isinstance(request, PlainVerifyRequest):
        return request.question.id if request.question else request.question_id
    if request.question_id:
        return request.question_id
    metadata = request.responses_create_params.metadata or {}
    value = metadata.get("question_id")
    return str(value) if value else None


def requested_question_text(request: ResponsesVerifyRequest) -> str:
    """The text of the task's last user message (the question asked)."""
    params = request.responses_create_params
    if isinstance(params.input, str):
        return params.input.strip()
    for item in reversed(params.input):
        if item.get("role") == "user":
            return _text(item.get("content")).strip()
    return ""


def _output_messages(items: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """Responses-API output items as chat messages (reasoning items are dropped:
    they are not what the agent answered)."""
    messages: list[dict[str, object]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" or (kind is None and "role" in item):
            role = str(item.get("role") or "assistant")
            messages.append(
                {"role": _ROLE_ALIASES.get(role, role), "content": _text(item.get("content"))}
            )
        elif kind == "function_call":
            call = {
                "id": item.get("call_id") or item.get("id") or "",
                "type": "function",
                "function": {
                    "name": item.get("name", ""),
                    "arguments": item.get("arguments", ""),
                },
            }
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "content": _text(item.get("output")),
                    "tool_call_id": item.get("call_id", ""),
                }
            )
    return messages


def _chat_messages(messages: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    out = []
    for index, message in enumerate(messages):
        role = message.get("role") or message.get("type")
        if not isinstance(role, str) or not role:
            raise InvalidRequestError(f"messages[{index}]: a message needs a 'role'")
        entry = {k: v for k, v in message.items() if k != "type"}
        entry["role"] = _ROLE_ALIASES.get(role.lower(), role.lower())
        entry["content"] = _text(message.get("content"))
        out.append(entry)
    return out


def _render(messages: Sequence[Mapping[str, object]]) -> str:
    blocks = []
    for message in messages:
        body = str(message.get("content", ""))
        if message.get("tool_calls"):
            body += "\n[tool calls] " + json.dumps(message["tool_calls"], ensure_ascii=False)
        blocks.append(f"--- {message.get('role', '?')} ---\n{body}".rstrip())
    return "\n\n".join(blocks)


def _answer_from_messages(messages: list[dict[str, Any]], where: str) -> CachedAnswer:
    if not any(m["role"] == "assistant" and m["content"].strip() for m in messages):
        raise InvalidRequestError(f"{where}: no assistant message with text to verify")
    if len(messages) == 1 and not messages[0].get("tool_calls"):
        # A single reply is a plain answer, exactly as the answering stage makes one.
        return CachedAnswer(raw_llm_response=messages[0]["content"])
    return CachedAnswer(raw_llm_response=_render(messages), trace_messages=messages)


def request_answer(request: ResponsesVerifyRequest | PlainVerifyRequest) -> CachedAnswer:
    """The response to verify, as the pipeline's cached answer (no generation).

    A single assistant message becomes a plain answer; a trajectory with tool
    calls becomes a trace whose final AI message templates read.

    Raises:
        InvalidRequestError: the response has no assistant text, or a message has
            no role.
    """
    if isinstance(request, PlainVerifyRequest):
        if request.response is not None:
            if not request.response.strip():
                raise InvalidRequestError("response: the response text is empty")
            return CachedAnswer(raw_llm_response=request.response)
        return _answer_from_messages(_chat_messages(request.messages or []), "messages")
    return _answer_from_messages(_output_messages(request.response.output), "response.output")
