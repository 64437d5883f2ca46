"""The direct HTTP caller for OpenAI-compatible endpoints against the real
fault-injecting endpoint of bench/endpoint.py, side by side with the langchain
caller it replaces: same requests, same replies, same errors, same usage.

Only the backoff sleep is recorded instead of slept, to keep the suite fast.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from _support.pipeline_fakes import TEMPLATE, make_question
from langchain_openai import ChatOpenAI

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.limits import LocalCallGate, Slot, no_gate
from verifleet.pipeline import (
    ChatModelCache,
    LangchainChatCaller,
    ModelCallError,
    OpenAIHttpChatCaller,
    PipelineResources,
    RecordingCaller,
    UsageTracker,
    make_chat_caller,
    verify_question,
)
from verifleet.pipeline._llm import direct_http_applies
from verifleet.pipeline._llm._http import Sender
from verifleet.pipeline._llm._openai_http import (
    _ALIASES,
    _TRANSPORTS,
    BODY_OPTIONS,
    LANGCHAIN_ONLY_OPTIONS,
    EndpointReplyError,
    _reply,
)
from verifleet.schemas import ModelConfig, RetryPolicy, VerificationConfig

pytestmark = pytest.mark.integration

QUESTION = "Which gene encodes the anti-apoptotic protein?"
PARSE_KEY = "PARSE-AS-JSON"
SCHEMA = {"type": "object", "properties": {"gene": {"type": "string"}}, "required": ["gene"]}
ANSWERS: dict[str, Any] = {
    QUESTION: {"text": "It is BCL2.", "fields": {"gene": "BCL2"}},
    # A prompted (no response_format) call containing this key gets JSON text back.
    PARSE_KEY: '{"gene": "TP53"}',
}
CALLERS = [LangchainChatCaller, OpenAIHttpChatCaller]
Caller = type[LangchainChatCaller] | type[OpenAIHttpChatCaller]


def _endpoint(**config: Any) -> RunningEndpoint:
    return run_endpoint_in_thread(
        EndpointConfig(answers=ANSWERS, record_requests=True, reply_tokens=7, **config)
    )


@pytest.fixture(scope="module")
def healthy() -> Iterator[RunningEndpoint]:
    with _endpoint() as endpoint:
        yield endpoint


def _model(endpoint: RunningEndpoint, name: str = "fake-model", **extra: Any) -> ModelConfig:
    return ModelConfig(
        model_name=name,
        interface="openai_endpoint",
        endpoint_base_url=endpoint.base_url,
        **extra,
    )


def _caller(
    kind: Caller,
    model: ModelConfig,
    *,
    sleeps: list[float] | None = None,
    tracker: UsageTracker | None = None,
    clients: ChatModelCache | None = None,
    timeout: float = 10.0,
    **policy: float,
) -> LangchainChatCaller | OpenAIHttpChatCaller:
    recorded = sleeps if sleeps is not None else []
    return kind(
        model,
        tracker=tracker or UsageTracker(),
        clients=ChatModelCache() if clients is None else clients,
        policy=RetryPolicy(jitter=0.0, **policy),  # type: ignore[arg-type]
        request_timeout=timeout,
        sleep=recorded.append,
    )


def _ask(text: str = QUESTION) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]


# --- the happy path, request for request ----------------------------------------------


def test_plain_call_sends_the_same_request_and_records_usage(healthy: RunningEndpoint) -> None:
    model = _model(healthy, temperature=0.2, max_tokens=64, extra_kwargs={"seed": 5, "top_p": 0.9})
    bodies, trackers = [], []
    for kind in CALLERS:
        healthy.reset()
        tracker = UsageTracker()
        assert _caller(kind, model, tracker=tracker).invoke(_ask(), stage="answer") == "It is BCL2."
        [body] = healthy.app.requests
        bodies.append(body)
        trackers.append(tracker.stage("answer"))
    assert bodies[0] == bodies[1]
    assert bodies[1]["max_completion_tokens"] == 64 and bodies[1]["seed"] == 5
    assert bodies[1]["stream"] is False and bodies[1]["temperature"] == 0.2
    prompt_tokens = len("Be brief.\n\x00" + QUESTION) // 4
    expected = {
        "input_tokens": prompt_tokens,
        "output_tokens": 7,
        "total_tokens": prompt_tokens + 7,
        "model": "fake-model",
    }
    assert trackers == [expected, expected]


def test_structured_call_sends_json_schema_under_the_same_name(healthy: RunningEndpoint) -> None:
    bodies, values, usage = [], [], []
    for kind in CALLERS:
        healthy.reset()
        tracker = UsageTracker()
        caller = _caller(kind, _model(healthy), tracker=tracker)
        values.append(
            caller.invoke_json(_ask(), stage="parsing", schema=SCHEMA, schema_name="The Answer!")
        )
        [body] = healthy.app.requests
        bodies.append(body)
        usage.append(tracker.stage("parsing"))
    assert values == [{"gene": "BCL2"}, {"gene": "BCL2"}]
    assert bodies[0] == bodies[1]
    assert bodies[1]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "The_Answer_", "schema": SCHEMA},
    }
    assert usage[0] == usage[1] and usage[1] is not None and usage[1]["output_tokens"] == 7


@pytest.mark.parametrize(
    "extra",
    [
        {"extra_body": {"top_k": 3, "temperature": 1.0}},
        {"max_completion_tokens": 9, "stop_sequences": ["END"]},
        {"stop": [], "seed": None, "temperature": None},
        {"model_kwargs": {"user": "u-1"}},
    ],
)
def test_extra_kwargs_become_the_same_body_fields(
    healthy: RunningEndpoint, extra: dict[str, Any]
) -> None:
    model = _model(healthy, max_tokens=32, extra_kwargs=extra)
    bodies = []
    for kind in CALLERS:
        healthy.reset()
        _caller(kind, model).invoke(_ask(), stage="answer")
        bodies.append(healthy.app.requests[0])
    assert bodies[0] == bodies[1]


# --- faults: both callers fail (or recover) the same way ------------------------------


@pytest.mark.parametrize("kind", CALLERS)
def test_5xx_are_retried_with_backoff_then_succeed(kind: Caller) -> None:
    sleeps: list[float] = []
    entered: list[str] = []

    @contextlib.contextmanager
    def gate(model: ModelConfig, /, *, tokens: int = 0) -> Iterator[Slot]:
        entered.append(model.model_name)
        with no_gate(model) as slot:
            yield slot

    with _endpoint(fail_first=2) as endpoint:
        caller = kind(
            _model(endpoint),
            tracker=UsageTracker(),
            clients=ChatModelCache(),
            policy=RetryPolicy(jitter=0.0),
            request_timeout=10.0,
            call_gate=gate,
            sleep=sleeps.append,
        )
        assert caller.invoke(_ask(), stage="answer") == "It is BCL2."
        assert endpoint.stats().by_status == {"500": 2, "200": 1}
    assert sleeps == [1.0, 2.0]
    assert entered == ["fake-model"] * 3  # the gate is entered around every attempt


@pytest.mark.parametrize("kind", CALLERS)
def test_token_gate_gets_the_estimate_and_the_reported_usage(
    kind: Caller, healthy: RunningEndpoint
) -> None:
    model = _model(healthy, max_tokens=100, tokens_per_minute=1000)
    gate = LocalCallGate(max_wait=0)
    reserved: list[int | None] = []

    class Watching:
        """Records what the caller reserves; admission is the real gate's."""

        def __call__(
            self, model: ModelConfig, /, *, tokens: int = 0
        ) -> contextlib.AbstractContextManager[Slot]:
            reserved.append(tokens)
            return gate(model, tokens=tokens)

    caller = kind(
        model,
        tracker=UsageTracker(),
        clients=ChatModelCache(),
        policy=RetryPolicy(max_attempts=1),
        request_timeout=10.0,
        call_gate=Watching(),
    )
    prompt = "z" * 200  # the endpoint counts len // 4 = 50 prompt tokens
    caller.invoke([{"role": "user", "content": prompt}], stage="answer")
    assert reserved == [50 + 100]  # 200 chars / 4 + max_tokens
    assert gate.tokens_in_window(model) == 50 + 7  # what the endpoint reported


@pytest.mark.parametrize("kind", CALLERS)
def test_429_honours_retry_after_then_gives_up(kind: Caller) -> None:
    sleeps: list[float] = []
    with _endpoint(rate_429=1.0, retry_after_s=7) as endpoint:
        with pytest.raises(ModelCallError) as caught:
            _caller(kind, _model(endpoint), sleeps=sleeps, max_attempts=3).invoke(
                _ask(), stage="answer"
            )
        assert endpoint.stats().sent_429 == 3
    assert str(caught.value) == "429 Too Many Requests after 3 attempts"
    assert caught.value.transient and caught.value.attempts == 3
    assert sleeps == [7.0, 7.0]  # Retry-After, longer than the 1 s and 2 s backoff


@pytest.mark.parametrize("kind", CALLERS)
def test_400_carries_the_endpoint_message_and_is_not_retried(kind: Caller) -> None:
    sleeps: list[float] = []
    with _endpoint(context_chars=20) as endpoint:
        with pytest.raises(ModelCallError) as caught:
            _caller(kind, _model(endpoint), sleeps=sleeps).invoke(_ask(), stage="answer")
        assert endpoint.stats().calls == 1
    size = len("Be brief.\n\x00" + QUESTION)
    assert str(caught.value) == (
        f"400 Bad Request: the prompt has {size} characters, more than this model's context of 20"
    )
    assert not caught.value.transient and caught.value.attempts == 1
    assert sleeps == []


@pytest.mark.parametrize("kind", CALLERS)
def test_refused_json_schema_falls_back_to_the_prompt_and_is_remembered(kind: Caller) -> None:
    clients = ChatModelCache()
    with _endpoint(reject_json_schema=True) as endpoint:
        model = _model(endpoint)
        caller = _caller(kind, model, clients=clients)
        for _ in range(2):
            value = caller.invoke_json(_ask(PARSE_KEY), stage="parsing", schema=SCHEMA)
            assert value == {"gene": "TP53"}
        statuses = endpoint.stats().by_status
        prompted = [r for r in endpoint.app.requests if "response_format" not in r]
    assert statuses == {"400": 1, "200": 2}  # refused once, then asked by prompt
    assert clients.structured_output_supported(model) is False
    assert len(prompted) == 2 and "JSON" in prompted[0]["messages"][-1]["content"]


@pytest.mark.parametrize("kind", CALLERS)
def test_slow_reply_times_out_as_a_transient_error(kind: Caller) -> None:
    sleeps: list[float] = []
    with _endpoint(timeout_rate=1.0, slow_ms=3000) as endpoint:
        with pytest.raises(ModelCallError) as caught:
            _caller(kind, _model(endpoint), sleeps=sleeps, timeout=0.3, max_attempts=2).invoke(
                _ask(), stage="answer"
            )
        assert endpoint.stats().calls == 2
    assert str(caught.value) == "request timed out after 2 attempts"
    assert caught.value.transient and sleeps == [1.0]


@pytest.mark.parametrize("kind", CALLERS)
def test_refused_connection_is_transient(kind: Caller) -> None:
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = ModelConfig(
        model_name="m", interface="openai_endpoint", endpoint_base_url=f"http://127.0.0.1:{port}/v1"
    )
    sleeps: list[float] = []
    with pytest.raises(ModelCallError) as caught:
        _caller(kind, model, sleeps=sleeps, max_attempts=2).invoke(_ask(), stage="answer")
    assert str(caught.value).startswith("connection error (")
    assert caught.value.transient and caught.value.attempts == 2 and sleeps == [1.0]


@pytest.mark.parametrize("kind", CALLERS)
def test_passed_deadline_makes_no_request(kind: Caller, healthy: RunningEndpoint) -> None:
    healthy.reset()
    caller = kind(
        _model(healthy),
        tracker=UsageTracker(),
        clients=ChatModelCache(),
        policy=RetryPolicy(),
        request_timeout=10.0,
        deadline=time.monotonic() - 1.0,
    )
    with pytest.raises(ModelCallError, match=r"^unit deadline exceeded before attempt 1"):
        caller.invoke(_ask(), stage="answer")
    assert healthy.stats().calls == 0


@pytest.mark.parametrize("kind", CALLERS)
def test_missing_openrouter_key_names_the_variable(
    kind: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    clients = ChatModelCache()
    model = ModelConfig(model_name="vendor/model", interface="openrouter")
    with pytest.raises(ModelCallError, match="OPENROUTER_API_KEY") as caught:
        _caller(kind, model, clients=clients).invoke(_ask(), stage="answer")
    assert not caught.value.transient and caught.value.attempts == 0
    assert len(clients) == 0  # nothing cached: a key set later is picked up


def test_unusable_success_replies_are_not_retried() -> None:
    # Replies the fault endpoint never sends (it always answers well-formed
    # completions), built as real httpx responses.
    request = httpx.Request("POST", "http://x/v1/chat/completions")

    def reply(payload: Any) -> httpx.Response:
        return httpx.Response(200, request=request, content=json.dumps(payload).encode())

    cut = {"choices": [{"message": {"content": '{"ge'}, "finish_reason": "length"}]}
    with pytest.raises(EndpointReplyError, match="cut off"):
        _reply(reply(cut), structured=True)
    # Plain calls keep it, marked so that the call cache never keeps it.
    assert _reply(reply(cut), structured=False) == ('{"ge', {"verifleet_incomplete": True})
    refused = {"choices": [{"message": {"content": "", "refusal": "no"}, "finish_reason": "stop"}]}
    assert _reply(reply(refused), structured=False)[1] == {"verifleet_incomplete": True}
    with pytest.raises(EndpointReplyError, match="no choices"):
        _reply(reply({"object": "chat.completion"}), structured=False)
    with pytest.raises(EndpointReplyError, match="error"):
        _reply(reply({"error": {"message": "overloaded"}, "choices": None}), structured=False)


# --- routing --------------------------------------------------------------------------


def test_openai_compatible_models_go_direct_unless_told_or_needed() -> None:
    endpoint = ModelConfig(
        model_name="m", interface="openai_endpoint", endpoint_base_url="http://h"
    )
    assert direct_http_applies(endpoint)
    assert direct_http_applies(ModelConfig(model_name="a/b", interface="openrouter"))
    assert not direct_http_applies(ModelConfig(model_name="gpt-4o", model_provider="openai"))
    for option in ({"default_headers": {"X": "y"}}, {"use_responses_api": True}):
        assert not direct_http_applies(endpoint.model_copy(update={"extra_kwargs": option}))
    for name in ("o3-mini", "gpt-5", "gpt-5.1-codex"):
        assert not direct_http_applies(endpoint.model_copy(update={"model_name": name}))
    assert direct_http_applies(endpoint.model_copy(update={"extra_kwargs": {"top_p": 0.5}}))
    # The model's chat_client decides over the automatic choice, both ways.
    assert direct_http_applies(
        endpoint.model_copy(update={"model_name": "gpt-5", "chat_client": "http"})
    )
    forced = endpoint.model_copy(update={"chat_client": "langchain"})
    assert not direct_http_applies(forced)
    caller = make_chat_caller(
        forced,
        tracker=UsageTracker(),
        clients=ChatModelCache(),
        policy=RetryPolicy(),
        request_timeout=1.0,
    )
    assert isinstance(caller, LangchainChatCaller)


def test_every_chatopenai_option_is_classified() -> None:
    # A langchain-openai upgrade that adds an option must decide its path here:
    # unclassified options would silently become request-body fields.
    names = set()
    for name, field in ChatOpenAI.model_fields.items():
        names |= {name, *(a for a in (field.alias, field.validation_alias) if isinstance(a, str))}
    known = BODY_OPTIONS | LANGCHAIN_ONLY_OPTIONS | set(_ALIASES) | {"extra_body", "model_kwargs"}
    assert names - known == set()
    assert BODY_OPTIONS.isdisjoint(LANGCHAIN_ONLY_OPTIONS)


def test_models_of_one_endpoint_share_a_client_per_thread(healthy: RunningEndpoint) -> None:
    clients = ChatModelCache()
    for name in ("answerer", "judge"):
        _caller(OpenAIHttpChatCaller, _model(healthy, name), clients=clients).invoke(
            _ask(), stage="answer"
        )
    assert len(clients) == 2  # request settings per model configuration
    mine = _TRANSPORTS.get(healthy.base_url, "not-needed")
    assert _TRANSPORTS.get(healthy.base_url, "not-needed") is mine
    assert _TRANSPORTS.get(healthy.base_url, "another-key") is not mine
    theirs: list[Sender] = []
    worker = threading.Thread(
        target=lambda: theirs.append(_TRANSPORTS.get(healthy.base_url, "not-needed"))
    )
    worker.start()
    worker.join()
    assert theirs[0] is not mine  # no thread scans another's connections


# --- a whole unit through each path -----------------------------------------------------


# result_id hashes the timestamp in, so it differs between any two runs.
_TIMINGS = ("execution_time", "timestamp", "result_id")


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_run_unit_gives_equal_results_through_either_path(healthy: RunningEndpoint) -> None:
    runs: dict[str, tuple[list[Any], list[dict[str, Any]]]] = {}
    for path in ("direct", "langchain"):
        client = {"direct": "http", "langchain": "langchain"}[path]
        answering, judge = (
            _model(healthy, name).model_copy(update={"chat_client": client})
            for name in ("answerer", "judge")
        )
        config = VerificationConfig(answering_models=[answering], parsing_models=[judge])
        resources = PipelineResources()
        recording = resources.caller(judge, tracker=UsageTracker(), config=config)
        assert isinstance(recording, RecordingCaller)
        kind = type(recording.inner)
        assert kind is (OpenAIHttpChatCaller if path == "direct" else LangchainChatCaller)
        healthy.reset()
        results = verify_question(
            make_question(TEMPLATE),
            answering,
            [judge],
            config,
            replicate=1,
            resources=resources,
        )
        runs[path] = ([r.model_dump(mode="json") for r in results], list(healthy.app.requests))
    direct, langchain = runs["direct"], runs["langchain"]
    assert _without_timings(direct[0]) == _without_timings(langchain[0])
    assert direct[1] == langchain[1]  # the same requests, in the same order
    [result] = direct[0]
    assert result["metadata"]["completed_without_errors"], result["metadata"]["error"]
    assert result["template"]["verify_result"] is True
    assert set(result["template"]["usage_metadata"]) == {"answer_generation", "parsing", "total"}


# --- the sender: redirects and proxies as httpx.Client handles them ---------------------


class _OneRoute(http.server.BaseHTTPRequestHandler):
    """Answers every POST with what ``reply`` returns for its request line; keeps
    the request lines it saw."""

    seen: list[str] = []
    reply: Callable[[str], tuple[int, dict[str, str], bytes]] = staticmethod(
        lambda line: (500, {}, b"")
    )

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append(self.requestline)
        status, headers, body = type(self).reply(self.requestline)
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@contextlib.contextmanager
def _route(reply: Callable[[str], tuple[int, dict[str, str], bytes]]) -> Iterator[type[_OneRoute]]:
    handler = type("Route", (_OneRoute,), {"seen": [], "reply": staticmethod(reply)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.port = server.server_address[1]  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_is_followed(healthy: RunningEndpoint) -> None:
    target = f"{healthy.base_url}/chat/completions"
    # 307 keeps the method and the body, as a moved API endpoint would send it.
    with _route(lambda _line: (307, {"Location": target}, b"")) as moved:
        model = _model(healthy).model_copy(
            update={"endpoint_base_url": f"http://127.0.0.1:{moved.port}/v1"}  # type: ignore[attr-defined]
        )
        reply = _caller(OpenAIHttpChatCaller, model).invoke(_ask(), stage="answer")
    assert reply == "It is BCL2."
    assert len(moved.seen) == 1


def test_a_proxy_named_in_the_environment_carries_the_requests(
    healthy: RunningEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    completion = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "via proxy"},
            }
        ],
    }
    body = json.dumps(completion).encode()
    with _route(lambda _line: (200, {"Content-Type": "application/json"}, body)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")  # type: ignore[attr-defined]
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        result: list[str] = []
        # A new thread: senders are per thread, and this one is built under the proxy.
        worker = threading.Thread(
            target=lambda: result.append(
                _caller(OpenAIHttpChatCaller, _model(healthy)).invoke(_ask(), stage="answer")
            )
        )
        worker.start()
        worker.join()
    assert result == ["via proxy"]
    # A proxied request names the whole URL.
    assert proxy.seen[0].startswith(f"POST {healthy.base_url}/chat/completions")
