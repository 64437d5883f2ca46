"""The call cache for an agent's model calls (its steps): a step's reply is
reused when the model, its parameters, the conversation so far (tool results
included), the tools offered and, for answer generation, the replicate are the
same, so an agent run replays from the cache as far as nothing changed.

A step's key leaves out what is not part of the conversation the model sees:
langchain's message and content-block ids and metadata. Tool-call ids stay (the
model sees them).
Cut-off or filtered replies are not kept, the first step stored is kept, and a
cache that fails is a miss, counted (as for plain calls: ``_llm/_call_cache.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict, messages_to_dict
from langchain_core.utils.function_calling import convert_to_openai_tool

from verifleet.schemas import ModelConfig

from .._llm import CallCache, UsageTracker, call_key
from .._llm._call_cache import ANSWER_STAGE, store_failed

__all__ = ["StepCache"]

_INCOMPLETE = ("length", "max_tokens", "content_filter", "refusal")


def _content(content: Any) -> Any:
    # Content blocks carry ids langchain makes up per run ("lc_<uuid>").
    if isinstance(content, list):
        return [
            {k: v for k, v in block.items() if k != "id"} if isinstance(block, dict) else block
            for block in content
        ]
    return content


def _message(message: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.type, "content": _content(message.content)}
    if isinstance(message, AIMessage) and message.tool_calls:
        out["tool_calls"] = [
            {"name": c["name"], "args": c["args"], "id": c.get("id")} for c in message.tool_calls
        ]
    tool_call_id = getattr(message, "tool_call_id", None)
    if tool_call_id:
        out["tool_call_id"] = tool_call_id
    return out


def _tool(tool: Any) -> Any:
    try:
        return convert_to_openai_tool(tool)
    except Exception:  # an odd tool object: its name still keys the call
        return getattr(tool, "name", str(tool))


class StepCache:
    """Looks up and stores an agent's steps for one run.

    Args:
        cache: The call cache.
        model: The agent's model.
        tracker: The unit's tracker (pricing, replicate; hits are recorded here).
        stage: The usage stage of the run's calls.
    """

    def __init__(
        self, cache: CallCache, model: ModelConfig, tracker: UsageTracker, stage: str
    ) -> None:
        self._cache = cache
        self._model = model
        self._tracker = tracker
        self._stage = stage

    def key(self, request: ModelRequest[Any]) -> str:
        """The step's cache key."""
        messages = [request.system_message] if request.system_message is not None else []
        conversation = [_message(m) for m in [*messages, *request.messages]]
        schema = {
            "tools": [_tool(t) for t in request.tools],
            "tool_choice": request.tool_choice,
            "settings": request.model_settings,
        }
        return call_key(
            self._model,
            conversation,
            kind="agent-step",
            schema=schema,
            sample=self._tracker.replicate if self._stage == ANSWER_STAGE else None,
        )

    async def _store(self, what: str, action: Callable[[], bytes | None]) -> bytes | None:
        try:
            return await asyncio.to_thread(action)
        except Exception as exc:  # any store failure: a miss, counted (store_failed)
            store_failed(what, exc)
            return None

    def _response(self, blob: bytes | None) -> tuple[ModelResponse[Any], Any] | None:
        if blob is None:
            return None
        try:
            entry = json.loads(blob)
            return ModelResponse(result=messages_from_dict(entry["messages"])), entry.get("usage")
        except (ValueError, KeyError, TypeError):
            return None

    async def lookup(self, key: str) -> ModelResponse[Any] | None:
        """The stored step (its usage recorded as a cache hit), or None."""
        found = self._response(await self._store("read", lambda: self._cache.get(key)))
        if found is None:
            return None
        response, usage = found
        usage = usage or {"model": self._model.model_name}
        self._tracker.merge_stage(self._stage, usage, cache_hit=True)
        return response

    async def keep(self, key: str, response: ModelResponse[Any]) -> ModelResponse[Any]:
        """Store a step unless its reply was cut off or filtered; return the step
        to go on with: ``response``, or the one stored first by another run."""
        usage = None
        for message in response.result:
            if isinstance(message, AIMessage):
                meta = message.response_metadata or {}
                reason = meta.get("finish_reason") or meta.get("stop_reason")
                if reason in _INCOMPLETE or (message.additional_kwargs or {}).get("refusal"):
                    return response
                usage = message.usage_metadata or usage
        own = UsageTracker(pricing=self._tracker.pricing)
        own.record_usage(
            self._stage, model=self._model.model_name, usage=dict(usage) if usage else None
        )
        blob = json.dumps(
            {"messages": messages_to_dict(response.result), "usage": own.stage(self._stage)},
            default=str,
        ).encode()
        kept = await self._store("write", lambda: self._cache.put(key, blob))
        first = self._response(kept) if kept is not None and kept != blob else None
        return first[0] if first is not None else response
