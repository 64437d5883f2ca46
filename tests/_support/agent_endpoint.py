"""A scripted OpenAI-compatible chat endpoint that drives tool-using agents.

Agent tests and the agent demo need a model that calls MCP tools the same way on
every run; the bundled 135M model cannot. The script is written in the question:

* ``[tool:NAME {json args}]``: the answering agent calls these tools, one per
  turn, in order, then answers ``The result is <last tool output>.``;
* ``[loop]``: the answering agent calls ``add`` forever (to hit the turn limit);
* ``[malformed]``: the answering agent ends with an empty message (a trace the
  pipeline must reject);
* ``[check:NAME {json args}]``: what an investigating agent (an agentic rubric
  trait; its system prompt mentions investigating) calls before concluding;
* ``[findings {flat json object}]``: an investigating agent ends its conclusion
  with this object (what a ``template``-kind agentic trait is told to do).

Judge calls (a ``json_schema`` ``response_format``) get an object of the schema's
shape: integers/strings from the last ``result is X`` in the prompt, booleans True
(False for abstention-like fields), scores at their maximum.
Every reply reports token usage (characters / 4). Counters are at ``GET /stats``.

Run it by hand: ``python tests/_support/agent_endpoint.py --port 7401``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import threading
import time
from collections import Counter
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = ["ScriptedEndpoint", "build_app", "main"]

_TOOL = re.compile(r"\[tool:(\w+)\s+(\{.*?\})\]")
_CHECK = re.compile(r"\[check:(\w+)\s+(\{.*?\})\]")
_FINDINGS = re.compile(r"\[findings\s+(\{.*?\})\]")
_RESULT = re.compile(r"result is ([^\s<]+?)(?:[.,;]?\s|[.,;]?$|[.,;]?<)", re.IGNORECASE)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)


class ScriptedEndpoint:
    """The endpoint's behaviour and counters (thread-safe)."""

    def __init__(self, *, agent_latency: float = 0.02) -> None:
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self.agent_latency = agent_latency
        self.in_flight: Counter[str] = Counter()
        #: The most agent calls in flight at once, per requested model name.
        self.max_in_flight: Counter[str] = Counter()

    def enter(self, model: str) -> None:
        """An agent call to ``model`` starts (counted for :attr:`max_in_flight`)."""
        with self._lock:
            self.in_flight[model] += 1
            self.max_in_flight[model] = max(self.max_in_flight[model], self.in_flight[model])

    def leave(self, model: str) -> None:
        """An agent call to ``model`` ends."""
        with self._lock:
            self.in_flight[model] -= 1

    def count(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat completion for a request ``body``."""
        messages = body.get("messages", [])
        prompt = "\n".join(_text(m.get("content")) for m in messages)
        if body.get("tools"):
            message = self._agent_turn(messages)
        elif isinstance(body.get("response_format"), dict):
            self.count("judge")
            schema = body["response_format"].get("json_schema", {}).get("schema", {})
            message = {"role": "assistant", "content": json.dumps(_fill(schema, prompt))}
        else:
            self.count("plain")
            message = {"role": "assistant", "content": "The result is unknown."}
        reply_text = _text(message.get("content")) + json.dumps(message.get("tool_calls", ""))
        prompt_tokens, completion_tokens = len(prompt) // 4 + 1, len(reply_text) // 4 + 1
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _agent_turn(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        system = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
        user = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
        results = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
        investigating = "investigat" in system.lower()
        self.count("investigation" if investigating else "agent")
        if not investigating and "[malformed]" in user:
            return {"role": "assistant", "content": ""}
        if not investigating and "[loop]" in user:
            plan = [("add", {"a": 1, "b": len(results)})] * (len(results) + 1)
        else:
            pattern = _CHECK if investigating else _TOOL
            # An investigation shows the question twice (asked, and in the trace).
            found = list(dict.fromkeys(pattern.findall(user)))
            plan = [(name, json.loads(args)) for name, args in found]
        if len(results) < len(plan):
            name, args = plan[len(results)]
            call = {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        last = results[-1].strip() if results else "unknown"
        findings = _FINDINGS.findall(user) if investigating else []
        if findings:
            return {"role": "assistant", "content": f"The result is {last}.\n{findings[-1]}"}
        return {"role": "assistant", "content": f"The result is {last}."}


def _value(prompt: str) -> str | None:
    section = prompt.rsplit("<response>", 1)[-1] if "<response>" in prompt else prompt
    found = _RESULT.findall(section)
    return found[-1] if found else None


def _fill(schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    value = _value(prompt)
    out: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        out[name] = _field(name, spec, value)
    return out


def _field(name: str, spec: dict[str, Any], value: str | None) -> Any:
    for option in spec.get("anyOf", []):
        if option.get("type") != "null":
            return _field(name, option, value)
    kind = spec.get("type")
    if "enum" in spec:
        return spec["enum"][0]
    if kind == "boolean":
        return "abstention" not in name.lower() and "refus" not in name.lower()
    if kind == "integer":
        if "maximum" in spec:
            return spec["maximum"]
        return int(value) if value is not None and value.lstrip("-").isdigit() else 0
    if kind == "number":
        try:
            return float(value) if value is not None else 0.0
        except ValueError:
            return 0.0
    if kind == "array":
        return []
    if kind == "object":
        return _fill(spec, "")
    return value if value is not None else "unknown"


def build_app(endpoint: ScriptedEndpoint | None = None) -> Starlette:
    """The ASGI app: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /stats``."""
    state = endpoint or ScriptedEndpoint()

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        if not body.get("tools"):
            return JSONResponse(state.reply(body))
        # Agent calls take a little time, so unlimited concurrent agents overlap
        # and an endpoint limit shows in max_in_flight.
        model = str(body.get("model"))
        state.enter(model)
        try:
            await asyncio.sleep(state.agent_latency)
            return JSONResponse(state.reply(body))
        finally:
            state.leave(model)

    async def models(_request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def stats(_request: Request) -> JSONResponse:
        return JSONResponse({**state.counts, "max_in_flight": dict(state.max_in_flight)})

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models),
            Route("/stats", stats),
        ]
    )
    app.state.endpoint = state
    return app


def main(argv: list[str] | None = None) -> int:
    """Serve the scripted endpoint until interrupted."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=7401)
    args = parser.parse_args(argv)
    uvicorn.run(build_app(), host="127.0.0.1", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
