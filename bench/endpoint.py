"""An OpenAI-compatible chat endpoint that injects latency and faults, without a GPU.

Throughput benches and fault tests need a model server whose behaviour is known in
advance: how long a reply takes, when it answers 429 or 5xx, what it answers. This
server gives deterministic replies per question (plain answers for the answering
model, schema-valid JSON for parsing and judge calls that send a ``json_schema``
``response_format``) and counts what it did, readable over HTTP.

Routes: ``POST /v1/chat/completions`` (non-streaming), ``GET /v1/models``,
``GET /stats``, ``POST /stats/reset``, ``GET /health``.

Requests the configured model would refuse get 400 with an OpenAI-style error body
before anything else: ``reject_json_schema`` refuses ``json_schema`` response
formats (as servers without structured output do), ``context_chars`` refuses
prompts longer than that many characters (``context_length_exceeded``).
``record_requests`` keeps every decoded request body in ``EndpointApp.requests``
(in-process only), so a test can compare what two clients sent.

Fault injection, decided in this order for every other chat call:

1. ``max_concurrency``: a call arriving while that many are in flight gets 429
   with ``Retry-After`` at once (it never counts as in flight).
   ``serve_concurrency`` instead makes calls beyond that many wait their turn,
   as a server with that many batch slots does: latency rises with load.
2. ``fail_first``: the first N calls for each distinct prompt get 500.
3. ``rate_429`` / ``rate_5xx``: that fraction of calls gets 429 / 503.
4. ``timeout_rate``: that fraction of calls waits ``slow_ms`` instead of the
   drawn latency (longer than a client's timeout).

Random draws hash (seed, prompt, attempt number), so the same prompt meets the same
faults in the same order whatever the interleaving of concurrent calls.

Answers come from a map keyed by question text or id (``--answers FILE``, JSON): a
value is either the answer text, an object of template field values, or
``{"text": ..., "fields": {...}}`` with both (plus an optional ``"delay_ms"``: extra
latency for that question). A call whose prompt contains a key uses that entry (the
longest key wins); other calls get type-appropriate defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, Literal

import httpx
import uvicorn
from pydantic import BaseModel, ConfigDict, Field, field_validator

try:
    from ._endpoint_fill import MISSING, fill_schema
except ImportError:  # run as a script: python bench/endpoint.py
    from _endpoint_fill import MISSING, fill_schema  # type: ignore[no-redef]

__all__ = [
    "AnswerEntry",
    "EndpointApp",
    "EndpointConfig",
    "EndpointStats",
    "RunningEndpoint",
    "fill_schema",
    "main",
    "run_endpoint_in_thread",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: Past this many answer keys, prompts are scanned through a prefix index instead
#: of one substring search per key (which costs milliseconds at 10k questions).
_LINEAR_SCAN_MAX = 32
_PREFIX = 16


class AnswerEntry(BaseModel):
    """What the endpoint answers for one question.

    Attributes:
        text: The plain-text answer (also the fallback for string fields).
        fields: Field values for structured (``json_schema``) replies, by property name;
            nested objects take nested maps.
        delay_ms: Extra latency of replies to this question, on top of the
            endpoint's (one slow question among fast ones, for time-limit tests).
        finish_reason: The plain-text reply's ``finish_reason`` (``length``: cut
            off by the token limit; ``content_filter``); ``stop`` when None.
        refusal: Sets the plain-text reply's ``message.refusal`` (a model that
            declines), as OpenAI's API reports one.
    """

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)
    delay_ms: float = Field(default=0.0, ge=0)
    finish_reason: Literal["stop", "length", "content_filter"] | None = None
    refusal: str | None = None

    @classmethod
    def coerce(cls, value: Any) -> AnswerEntry:
        """Read one answers-map value: a string, a field map, or ``{text, fields, delay_ms}``.

        Raises:
            ValueError: the value is none of those.
        """
        if isinstance(value, AnswerEntry):
            return value
        if isinstance(value, str):
            return cls(text=value)
        if isinstance(value, dict):
            if value and set(value) <= {"text", "fields", "delay_ms", "finish_reason", "refusal"}:
                return cls.model_validate(value)
            return cls(fields=value)
        raise ValueError(f"an answer must be a string or an object, got {type(value).__name__}")

    def plain_text(self) -> str:
        """The reply to an unstructured call: the text, else the fields as ``k: v``."""
        if self.text is not None:
            return self.text
        return "; ".join(f"{key}: {value}" for key, value in self.fields.items())


class EndpointConfig(BaseModel):
    """How the endpoint behaves. Rates are probabilities in [0, 1].

    Raises:
        pydantic.ValidationError: on out-of-range values or malformed answers.
    """

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535, description="0 picks a free port")
    model: str = "fake-model"
    latency_ms: float = Field(default=0.0, ge=0, description="mean reply latency")
    latency_dist: Literal["fixed", "uniform", "exp"] = "fixed"
    reply_tokens: int | None = Field(
        default=None, ge=1, description="completion tokens per reply (default: ~chars/4)"
    )
    max_concurrency: int | None = Field(default=None, ge=1)
    serve_concurrency: int | None = Field(
        default=None, ge=1, description="calls served at once; later ones queue"
    )
    retry_after_s: int = Field(default=1, ge=0)
    rate_429: float = Field(default=0.0, ge=0, le=1)
    rate_5xx: float = Field(default=0.0, ge=0, le=1)
    fail_first: int = Field(default=0, ge=0, description="500s per distinct prompt first")
    timeout_rate: float = Field(default=0.0, ge=0, le=1)
    slow_ms: float = Field(default=30_000.0, ge=0)
    seed: int = 0
    reject_json_schema: bool = Field(
        default=False, description="answer 400 to a json_schema response_format"
    )
    context_chars: int | None = Field(
        default=None, ge=1, description="answer 400 to prompts longer than this"
    )
    record_requests: bool = Field(default=False, description="keep request bodies in memory")
    answers: dict[str, AnswerEntry] = Field(default_factory=dict)

    @field_validator("answers", mode="before")
    @classmethod
    def _coerce_answers(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(key): AnswerEntry.coerce(item) for key, item in value.items()}
        return value

    @staticmethod
    def load_answers(path: Path) -> dict[str, AnswerEntry]:
        """Read an answers file (a JSON object: question text or id -> answer).

        Raises:
            ValueError: the file is not a JSON object of valid answers.
            OSError: the file cannot be read.
        """
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object mapping questions to answers")
        return {str(key): AnswerEntry.coerce(value) for key, value in data.items()}


class EndpointStats(BaseModel):
    """The endpoint's counters (``GET /stats``)."""

    calls: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    sent_429: int = 0
    sent_5xx: int = 0
    by_status: dict[str, int] = Field(default_factory=dict)
    #: Calls admitted (not refused) in each 100 ms since the last reset.
    admitted: list[int] = Field(default_factory=list)


def _prompt_text(messages: list[Any]) -> str:
    """All message contents joined: what answer keys are searched in and hashed."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n\x00".join(parts)


class EndpointApp:
    """The ASGI application. Counters live on one event loop, so they need no lock."""

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.stats = EndpointStats()
        self._reset_at = time.monotonic()
        #: Decoded chat request bodies in arrival order, when ``record_requests``.
        self.requests: list[dict[str, Any]] = []
        self._attempts: dict[str, int] = {}
        self._serving: asyncio.Semaphore | None = None  # made on the serving loop
        self._keys = sorted((k for k in config.answers if k), key=len, reverse=True)
        # Only look the prompt up for a delay when some answer has one: benches
        # push thousands of calls per second through here.
        self._delayed = any(entry.delay_ms for entry in config.answers.values())
        self._prefix_len = min([_PREFIX, *(len(k) for k in self._keys)])
        self._index: dict[str, list[str]] | None = None
        if len(self._keys) > _LINEAR_SCAN_MAX:
            self._index = {}
            for key in self._keys:  # longest first, so each bucket stays sorted
                self._index.setdefault(key[: self._prefix_len], []).append(key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"].rstrip("/") or "/"
        headers: list[tuple[bytes, bytes]] = []
        if method == "POST" and path in ("/v1/chat/completions", "/chat/completions"):
            status, payload, headers = await self._chat(await _read_body(receive))
            self.stats.by_status[str(status)] = self.stats.by_status.get(str(status), 0) + 1
        elif method == "GET" and path in ("/v1/models", "/models"):
            model = {"id": self.config.model, "object": "model", "created": 0, "owned_by": "bench"}
            status, payload = 200, {"object": "list", "data": [model]}
        elif method == "GET" and path == "/stats":
            status, payload = 200, self.stats.model_dump()
        elif method == "POST" and path == "/stats/reset":
            self.reset()
            status, payload = 200, self.stats.model_dump()
        elif method == "GET" and path == "/health":
            status, payload = 200, {"status": "ok"}
        else:
            status, payload = 404, _error_body(f"no route {method} {path}", "not_found")
        await _respond(send, status, payload, headers)

    def reset(self) -> None:
        """Zero the counters and forget prompt attempts (``fail_first`` starts over).

        Calls still in flight stay counted as in flight.
        """
        # In place: calls in flight hold a reference and decrement it when done.
        stats = self.stats
        stats.calls = stats.sent_429 = stats.sent_5xx = 0
        stats.peak_in_flight = stats.in_flight
        stats.by_status = {}
        stats.admitted = []
        self._reset_at = time.monotonic()
        self._attempts.clear()
        self.requests.clear()

    async def _chat(self, body: bytes) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
        stats, config = self.stats, self.config
        stats.calls += 1
        try:
            request = json.loads(body)
            messages = request["messages"]
            if not isinstance(messages, list):
                raise TypeError("messages must be a list")
            if request.get("stream"):
                raise ValueError("streaming is not supported; send stream=false")
        except (ValueError, KeyError, TypeError) as exc:
            return 400, _error_body(f"bad request: {exc}", "invalid_request_error"), []
        if config.record_requests:
            self.requests.append(request)
        refusal = self._refusal(request, messages)
        if refusal is not None:
            return 400, refusal, []
        if config.max_concurrency is not None and stats.in_flight >= config.max_concurrency:
            stats.sent_429 += 1
            retry = [(b"retry-after", str(config.retry_after_s).encode())]
            return 429, _error_body("too many concurrent requests", "rate_limit_exceeded"), retry
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        bucket = int((time.monotonic() - self._reset_at) * 10)
        if bucket >= len(stats.admitted):
            stats.admitted.extend([0] * (bucket + 1 - len(stats.admitted)))
        stats.admitted[bucket] += 1
        try:
            return await self._serve_chat(request, _prompt_text(messages))
        finally:
            stats.in_flight -= 1

    def _refusal(self, request: dict[str, Any], messages: list[Any]) -> dict[str, Any] | None:
        """The 400 body of a request this model refuses, or None."""
        response_format = request.get("response_format")
        if (
            self.config.reject_json_schema
            and isinstance(response_format, dict)
            and response_format.get("type") == "json_schema"
        ):
            return _error_body(
                "response_format of type json_schema is not supported by this model",
                "invalid_request_error",
            )
        limit = self.config.context_chars
        if limit is None:
            return None
        size = len(_prompt_text(messages))
        if size <= limit:
            return None
        return _error_body(
            f"the prompt has {size} characters, more than this model's context of {limit}",
            "context_length_exceeded",
        )

    async def _serve_chat(
        self, request: dict[str, Any], prompt: str
    ) -> tuple[int, dict[str, Any], list[tuple[bytes, bytes]]]:
        config, stats = self.config, self.stats
        digest = hashlib.blake2b(prompt.encode(), digest_size=8).hexdigest()
        attempt = self._attempts.get(digest, 0)
        self._attempts[digest] = attempt + 1
        if attempt < config.fail_first:
            stats.sent_5xx += 1
            return 500, _error_body(f"injected failure {attempt + 1}", "server_error"), []
        if config.rate_429 and self._draw(digest, attempt, "429") < config.rate_429:
            stats.sent_429 += 1
            retry = [(b"retry-after", str(config.retry_after_s).encode())]
            return 429, _error_body("injected rate limit", "rate_limit_exceeded"), retry
        if config.rate_5xx and self._draw(digest, attempt, "5xx") < config.rate_5xx:
            stats.sent_5xx += 1
            return 503, _error_body("injected overload", "server_error"), []
        if config.timeout_rate and self._draw(digest, attempt, "slow") < config.timeout_rate:
            delay_ms = config.slow_ms
        else:
            delay_ms = self._latency_ms(self._draw(digest, attempt, "latency"))
        if self._delayed:
            entry = self.lookup(prompt)
            delay_ms += entry.delay_ms if entry is not None else 0.0
        if config.serve_concurrency is not None:
            if self._serving is None:
                self._serving = asyncio.Semaphore(config.serve_concurrency)
            async with self._serving:  # queued calls wait here: latency grows
                await asyncio.sleep(delay_ms / 1000)
        elif delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        return 200, self._completion(request, prompt, digest), []

    def _draw(self, digest: str, attempt: int, purpose: str) -> float:
        """A uniform [0, 1) draw fixed by (seed, prompt, attempt, purpose)."""
        raw = f"{self.config.seed}:{digest}:{attempt}:{purpose}".encode()
        return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big") / 2**64

    def _latency_ms(self, u: float) -> float:
        mean = self.config.latency_ms
        if self.config.latency_dist == "uniform":
            return 2 * mean * u
        if self.config.latency_dist == "exp":
            return -mean * math.log(1.0 - u)
        return mean

    def lookup(self, prompt: str) -> AnswerEntry | None:
        """The answer entry whose key occurs in ``prompt`` (longest key wins), if any."""
        answers = self.config.answers
        if self._index is None:
            hit = next((key for key in self._keys if key in prompt), None)
            return answers[hit] if hit is not None else None
        best: str | None = None
        width, get = self._prefix_len, self._index.get
        for pos in range(len(prompt) - width + 1):
            bucket = get(prompt[pos : pos + width])
            if bucket:
                for key in bucket:
                    if best is not None and len(key) <= len(best):
                        break
                    if prompt.startswith(key, pos):
                        best = key
                        break
        return answers[best] if best is not None else None

    def _completion(self, request: dict[str, Any], prompt: str, digest: str) -> dict[str, Any]:
        entry = self.lookup(prompt)
        hint = entry.fields if entry is not None else MISSING
        text = entry.text if entry is not None else None
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        response_format = request.get("response_format") or {}
        tools = request.get("tools") or []
        if response_format.get("type") == "json_schema":
            spec = response_format.get("json_schema") or {}
            value = fill_schema(spec.get("schema") or {}, hint, text=text)
            message["content"] = json.dumps(value)
        elif response_format.get("type") == "json_object":
            message["content"] = json.dumps(entry.fields if entry is not None else {})
        elif tools and request.get("tool_choice") != "none":
            function = _chosen_tool(tools, request.get("tool_choice"))
            arguments = fill_schema(function.get("parameters") or {}, hint, text=text)
            call = {"name": function.get("name", "tool"), "arguments": json.dumps(arguments)}
            message["tool_calls"] = [{"id": f"call_{digest}", "type": "function", "function": call}]
            finish = "tool_calls"
        elif entry is not None:
            message["content"] = entry.plain_text()
            finish = entry.finish_reason or finish
            if entry.refusal is not None:
                message["refusal"] = entry.refusal
        else:
            filler = " word" * max((self.config.reply_tokens or 0) - 3, 0)
            message["content"] = f"Deterministic reply {digest}.{filler}"
        produced = message["content"] or json.dumps(message.get("tool_calls"))
        prompt_tokens = max(1, len(prompt) // 4)
        completion_tokens = self.config.reply_tokens or max(1, len(produced) // 4)
        return {
            "id": f"chatcmpl-{digest}-{self._attempts.get(digest, 1)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.config.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _chosen_tool(tools: list[Any], choice: Any) -> dict[str, Any]:
    functions = [t.get("function") or {} for t in tools if isinstance(t, dict)]
    wanted = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    return next(
        (f for f in functions if f.get("name") == wanted), functions[0] if functions else {}
    )


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        event = await receive()
        chunks.append(event.get("body", b""))
        if not event.get("more_body"):
            return b"".join(chunks)


async def _respond(
    send: Send, status: int, payload: dict[str, Any], extra: list[tuple[bytes, bytes]]
) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _bind(host: str, port: int) -> socket.socket:
    """Bind before serving, so port 0 resolves to a known port with no race."""
    # An explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted connections
    # (it checks ``sock.proto``); with proto 0, Nagle holds the response body behind
    # the headers until the client's delayed ACK: +40 ms per call.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _server(app: EndpointApp) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=30,
        # Slow replies (timeout injection) must not hold up a stop for their full delay.
        timeout_graceful_shutdown=1,
    )
    return uvicorn.Server(config)


class RunningEndpoint:
    """An endpoint served from a background thread; a context manager that stops it."""

    def __init__(
        self, app: EndpointApp, server: uvicorn.Server, thread: threading.Thread, port: int
    ) -> None:
        self.app = app
        self.port = port
        self._server = server
        self._thread = thread
        # One client for the counters: building an httpx client loads a CA bundle,
        # which costs more than a hundred calls to this endpoint.
        self._http = httpx.Client(base_url=self.url, timeout=10, trust_env=False)

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:PORT``."""
        return f"http://{self.app.config.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``.../v1``) to give a client."""
        return f"{self.url}/v1"

    def stats(self) -> EndpointStats:
        """The counters, read over HTTP like any client would.

        Raises:
            httpx.HTTPError: the endpoint is not reachable.
        """
        response = self._http.get("/stats")
        response.raise_for_status()
        return EndpointStats.model_validate(response.json())

    def reset(self) -> None:
        """Zero the counters over HTTP (see :meth:`EndpointApp.reset`).

        Raises:
            httpx.HTTPError: the endpoint is not reachable.
        """
        self._http.post("/stats/reset").raise_for_status()

    def stop(self) -> None:
        """Stop serving and wait for the thread (at most ~10 s); safe to call twice."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._http.close()

    def __enter__(self) -> RunningEndpoint:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def run_endpoint_in_thread(
    config: EndpointConfig, *, start_timeout: float = 15.0
) -> RunningEndpoint:
    """Start an endpoint in a daemon thread and return once it accepts connections.

    Raises:
        OSError: the host/port cannot be bound.
        RuntimeError: the server did not start within ``start_timeout`` seconds.
    """
    sock = _bind(config.host, config.port)
    app = EndpointApp(config)
    server = _server(app)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="bench-endpoint", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("the bench endpoint did not start (see the log above)")
        time.sleep(0.01)
    return RunningEndpoint(app, server, thread, sock.getsockname()[1])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/endpoint.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    add("--port", type=int, default=0, help="port; 0 picks a free one and prints it")
    add("--model", default="fake-model", help="model id listed by /v1/models")
    add("--latency-ms", type=float, default=0.0, help="mean reply latency in ms")
    add("--latency-dist", choices=["fixed", "uniform", "exp"], default="fixed")
    add("--reply-tokens", type=int, default=None, help="completion tokens per reply")
    add("--max-concurrency", type=int, default=None, help="calls in flight; excess gets 429")
    add("--serve-concurrency", type=int, default=None, help="calls served at once; excess queue")
    add("--retry-after", dest="retry_after_s", type=int, default=1, help="Retry-After on 429 (s)")
    add("--rate-429", type=float, default=0.0, help="fraction of calls answered 429")
    add("--rate-5xx", type=float, default=0.0, help="fraction of calls answered 503")
    add("--fail-first", type=int, default=0, help="500s for the first N calls per prompt")
    add("--timeout-rate", type=float, default=0.0, help="fraction of calls replied slowly")
    add("--slow-ms", type=float, default=30_000.0, help="delay of a slow reply in ms")
    add("--seed", type=int, default=0, help="seed of the fault and latency draws")
    add(
        "--reject-json-schema",
        action="store_true",
        help="answer 400 to json_schema response formats (no structured output)",
    )
    add("--context-chars", type=int, default=None, help="answer 400 to longer prompts")
    add("--answers", type=Path, default=None, help="JSON file: question text/id -> answer")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted. Prints the bound address first (one line, stdout).

    Returns:
        The exit status (2 on a bad option or answers file).
    """
    args = _parser().parse_args(argv)
    try:
        answers = EndpointConfig.load_answers(args.answers) if args.answers else {}
        options = {k: v for k, v in vars(args).items() if k != "answers"}
        config = EndpointConfig(**options, answers=answers)
    except (OSError, ValueError) as exc:
        print(f"endpoint: {exc}", file=sys.stderr)
        return 2
    sock = _bind(config.host, config.port)
    port = sock.getsockname()[1]
    print(f"listening on http://{config.host}:{port}/v1 port={port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        _server(EndpointApp(config)).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
