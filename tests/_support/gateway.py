"""A scripted model gateway in front of real endpoints (``bench/endpoint.py``):
it routes each call by its API key, and may rewrite the ``usage`` a model reports.

It plays what a job does not control: a LiteLLM-style gateway that serves a
different backend per key (virtual keys, Azure deployments), and a judge whose
usage block lies (``prompt_tokens: -10000000``). Both are behaviours of the
endpoint, not of verifleet, so the endpoint is scripted; everything on
verifleet's side (the HTTP caller, the call cache, the budget) runs for real.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from bench.endpoint import EndpointApp, EndpointConfig

__all__ = ["Gateway"]

Scope = dict[str, Any]


class Gateway:
    """An ASGI app: ``Authorization: Bearer KEY`` picks the backend of ``KEY``
    (an unknown or missing key gets 401); a reply of a model named in ``usage``
    has its ``usage`` fields replaced by that mapping.

    Attributes:
        calls: Chat calls served, per key.
    """

    def __init__(
        self,
        backends: Mapping[str, EndpointConfig],
        *,
        usage: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._apps = {key: EndpointApp(config) for key, config in backends.items()}
        self._usage = {model: dict(fields) for model, fields in (usage or {}).items()}
        self.calls: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope.get("headers") or [])
        key = headers.get(b"authorization", b"").decode().removeprefix("Bearer ").strip()
        app = self._apps.get(key)
        if app is None:
            body = json.dumps({"error": {"message": "unknown API key", "type": "auth"}}).encode()
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["path"].endswith("/chat/completions"):
            self.calls[key] += 1
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def capture(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.start":
                start.update(event)
            else:
                chunks.append(event.get("body", b""))

        await app(scope, receive, capture)
        body = self._rewrite(b"".join(chunks))
        out = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        out.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": start["status"], "headers": out})
        await send({"type": "http.response.body", "body": body})

    def _rewrite(self, body: bytes) -> bytes:
        try:
            reply = json.loads(body)
        except ValueError:
            return body
        fields = self._usage.get(reply.get("model")) if isinstance(reply, dict) else None
        if fields is None or not isinstance(reply.get("usage"), dict):
            return body
        reply["usage"].update(fields)
        return json.dumps(reply).encode()
