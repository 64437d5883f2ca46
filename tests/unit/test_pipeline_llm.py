"""The langchain ChatCaller: retries, error classification, JSON replies, usage."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from verifleet.pipeline import ModelCallError, StructuredOutputError
from verifleet.pipeline._llm import (
    ChatModelCache,
    LangchainChatCaller,
    UsageTracker,
    call_with_retry,
    classify_error,
    parse_strict,
    repair_json,
    resolve_api_key,
    schema_errors,
)
from verifleet.schemas import ModelConfig, RetryPolicy

MODEL = ModelConfig(
    model_name="judge", interface="openai_endpoint", endpoint_base_url="http://x/v1"
)
SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}, "name": {"type": "string"}},
    "required": ["count", "name"],
    "additionalProperties": False,
}


def _status_error(cls: type[openai.APIStatusError], status: int, **headers: str) -> Exception:
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    response = httpx.Response(status, request=request, headers=headers)
    return cls("boom", response=response, body=None)


def _reply(text: str, tokens: tuple[int, int] = (10, 5)) -> AIMessage:
    return AIMessage(
        content=text,
        usage_metadata={
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    )


class ScriptedChat(BaseChatModel):
    """A chat model that raises or returns scripted items in order.

    Needed because a real endpoint cannot be told to return a 429 or drop a
    connection on a given call; the integration suite uses a fault-injecting
    server for the same behaviour end to end.
    """

    script: list[Any]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **_: Any) -> ChatResult:
        item = self.script[self.calls]
        self.calls += 1
        if isinstance(item, Exception):
            raise item
        return ChatResult(generations=[ChatGeneration(message=item)])


def _caller(
    chat: BaseChatModel,
    *,
    tracker: UsageTracker | None = None,
    sleeps: list[float] | None = None,
    cache: ChatModelCache | None = None,
) -> LangchainChatCaller:
    cache = ChatModelCache() if cache is None else cache
    cache.put(MODEL, chat, request_timeout=30.0)
    recorded = sleeps if sleeps is not None else []
    return LangchainChatCaller(
        MODEL,
        tracker=tracker or UsageTracker(),
        clients=cache,
        policy=RetryPolicy(max_attempts=4, initial_delay=1.0, multiplier=2.0, jitter=0.0),
        request_timeout=30.0,
        sleep=recorded.append,
    )


# --- classification ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "transient", "text"),
    [
        (_status_error(openai.RateLimitError, 429), True, "429 Too Many Requests"),
        (_status_error(openai.InternalServerError, 503), True, "503 Service Unavailable"),
        (_status_error(openai.BadRequestError, 400), False, "400 Bad Request"),
        (_status_error(openai.AuthenticationError, 401), False, "401 Unauthorized"),
        (openai.APITimeoutError(request=httpx.Request("POST", "http://x")), True, "timed out"),
        (ConnectionResetError("reset by peer"), True, "connection error"),
        (httpx.ConnectError("refused"), True, "connection error"),
        (ValueError("unknown model"), False, "ValueError: unknown model"),
        # Raised about a 200 response (here: a reply that fails validation): the
        # description must say what went wrong, not "200 OK".
        (
            openai.APIResponseValidationError(
                response=httpx.Response(200, request=httpx.Request("POST", "http://x")),
                body=None,
                message="reply does not match the schema",
            ),
            False,
            "APIResponseValidationError: reply does not match the schema",
        ),
    ],
)
def test_classify_error(exc: Exception, transient: bool, text: str) -> None:
    info = classify_error(exc)
    assert info.transient is transient
    assert text in info.description


def test_retry_after_header_is_read() -> None:
    info = classify_error(_status_error(openai.RateLimitError, 429, **{"retry-after": "7"}))
    assert info.retry_after == 7.0


# --- retry loop --------------------------------------------------------------------


def test_transient_errors_back_off_exponentially_then_succeed() -> None:
    sleeps: list[float] = []
    errors = iter([_status_error(openai.RateLimitError, 429)] * 2)

    def flaky() -> str:
        for err in errors:
            raise err
        return "ok"

    policy = RetryPolicy(max_attempts=4, initial_delay=1.0, multiplier=2.0, jitter=0.0)
    assert call_with_retry(flaky, policy=policy, sleep=sleeps.append) == "ok"
    assert sleeps == [1.0, 2.0]


def test_jitter_stays_within_policy_bounds() -> None:
    sleeps: list[float] = []
    errors = iter([_status_error(openai.InternalServerError, 502)] * 3)

    def flaky() -> str:
        for err in errors:
            raise err
        return "ok"

    policy = RetryPolicy(max_attempts=4, initial_delay=1.0, multiplier=2.0, jitter=0.5)
    randoms = iter([0.0, 0.999, 0.5])
    call_with_retry(flaky, policy=policy, sleep=sleeps.append, rand=lambda: next(randoms))
    assert sleeps[0] == pytest.approx(0.5)
    assert sleeps[1] == pytest.approx(2.0 * 1.499, rel=1e-3)
    assert sleeps[2] == pytest.approx(4.0)


def test_retry_after_longer_than_backoff_wins() -> None:
    sleeps: list[float] = []
    errors = iter([_status_error(openai.RateLimitError, 429, **{"retry-after": "9"})])

    def flaky() -> str:
        for err in errors:
            raise err
        return "ok"

    call_with_retry(flaky, policy=RetryPolicy(jitter=0.0), sleep=sleeps.append)
    assert sleeps == [9.0]


def test_exhausted_retries_name_the_cause_and_attempts() -> None:
    sleeps: list[float] = []

    def always_429() -> str:
        raise _status_error(openai.RateLimitError, 429)

    with pytest.raises(ModelCallError) as caught:
        call_with_retry(always_429, policy=RetryPolicy(max_attempts=4), sleep=sleeps.append)
    assert str(caught.value) == "429 Too Many Requests after 4 attempts"
    assert caught.value.transient is True
    assert caught.value.attempts == 4
    assert len(sleeps) == 3


def test_non_transient_error_is_not_retried() -> None:
    calls: list[int] = []

    def bad_request() -> str:
        calls.append(1)
        raise _status_error(openai.BadRequestError, 400)

    with pytest.raises(ModelCallError) as caught:
        call_with_retry(bad_request, policy=RetryPolicy(), sleep=lambda _s: None)
    assert calls == [1]
    assert caught.value.transient is False


def test_deadline_stops_retrying() -> None:
    def always_503() -> str:
        raise _status_error(openai.InternalServerError, 503)

    import time

    with pytest.raises(ModelCallError, match="deadline"):
        call_with_retry(
            always_503,
            policy=RetryPolicy(max_attempts=10, initial_delay=5.0, jitter=0.0),
            deadline=time.monotonic() + 2.0,
            sleep=lambda _s: None,
        )


# --- caller --------------------------------------------------------------------------


def test_invoke_retries_through_the_client_and_records_usage_once() -> None:
    chat = ScriptedChat(
        script=[
            _status_error(openai.RateLimitError, 429),
            ConnectionResetError("reset"),
            _reply("hi"),
        ]
    )
    tracker = UsageTracker()
    sleeps: list[float] = []
    assert (
        _caller(chat, tracker=tracker, sleeps=sleeps).invoke(
            [{"role": "user", "content": "q"}], stage="answer_generation"
        )
        == "hi"
    )
    assert chat.calls == 3
    assert sleeps == [1.0, 2.0]
    assert tracker.stage("answer_generation") == {
        "input_tokens": 10,
        "output_tokens": 5,
        "total_tokens": 15,
        "model": "judge",
    }


def test_invoke_json_without_native_structured_output_parses_prompted_reply() -> None:
    chat = GenericFakeChatModel(messages=iter([_reply('```json\n{"count": 3, "name": "x"}\n```')]))
    cache = ChatModelCache()
    caller = _caller(chat, cache=cache)
    assert caller.invoke_json(
        [{"role": "user", "content": "q"}], stage="parsing", schema=SCHEMA
    ) == {"count": 3, "name": "x"}
    # The provider's lack of structured output is remembered for the process.
    assert cache.structured_output_supported(MODEL) is False


def test_invoke_json_reasks_once_with_the_problem() -> None:
    seen: list[list[BaseMessage]] = []

    class Recording(ScriptedChat):
        def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
            seen.append(messages)
            return super()._generate(messages, stop, **kw)

    chat = Recording(
        script=[_reply('{"count": "three", "name": "x"}'), _reply('{"count": 3, "name": "x"}')]
    )
    tracker = UsageTracker()
    value = _caller(chat, tracker=tracker).invoke_json(
        [{"role": "user", "content": "q"}], stage="parsing", schema=SCHEMA
    )
    assert value == {"count": 3, "name": "x"}
    assert "count: expected integer, got string" in seen[1][-1].text
    usage = tracker.stage("parsing")
    assert usage is not None and usage["total_tokens"] == 30


def test_invoke_json_falls_back_to_repair() -> None:
    chat = ScriptedChat(
        script=[_reply('Sure! {"count": 1, "name": "a",} hope'), _reply("still prose")]
    )
    value = _caller(chat).invoke_json(
        [{"role": "user", "content": "q"}], stage="parsing", schema=SCHEMA
    )
    assert value == {"count": 1, "name": "a"}


def test_invoke_json_gives_up_with_structured_output_error() -> None:
    chat = ScriptedChat(script=[_reply("no json here"), _reply("nor here")])
    with pytest.raises(StructuredOutputError, match="invalid JSON") as caught:
        _caller(chat).invoke_json(
            [{"role": "user", "content": "q"}], stage="parsing", schema=SCHEMA
        )
    assert caught.value.raw == "nor here"


# --- clients and keys -------------------------------------------------------------------


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    model = MODEL.model_copy(update={"api_key_env": "MY_JUDGE_KEY"})
    with pytest.raises(ModelCallError, match="set the environment variable MY_JUDGE_KEY"):
        resolve_api_key(model)


def test_local_endpoint_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert resolve_api_key(MODEL) == "not-needed"


def test_client_is_built_once_per_config() -> None:
    cache = ChatModelCache()
    first = cache.get(MODEL, request_timeout=10.0)
    again = cache.get(MODEL.model_copy(update={"system_prompt": "other"}), request_timeout=10.0)
    other = cache.get(MODEL.model_copy(update={"temperature": 0.7}), request_timeout=10.0)
    assert first is again
    assert other is not first
    assert len(cache) == 2


# --- usage and JSON helpers --------------------------------------------------------------


def test_usage_summary_shape_sums_stages() -> None:
    tracker = UsageTracker()
    assert tracker.summary() is None
    tracker.record("answer_generation", model="a", input_tokens=150, output_tokens=200)
    tracker.record("parsing", model="j", input_tokens=200, output_tokens=80)
    tracker.record("parsing", model="j", input_tokens=1, output_tokens=1)
    summary = tracker.summary()
    assert summary == {
        "answer_generation": {
            "input_tokens": 150,
            "output_tokens": 200,
            "total_tokens": 350,
            "model": "a",
        },
        "parsing": {"input_tokens": 201, "output_tokens": 81, "total_tokens": 282, "model": "j"},
        "total": {"input_tokens": 351, "output_tokens": 281, "total_tokens": 632},
    }


def test_schema_errors_cover_refs_enums_and_nullables() -> None:
    schema = {
        "type": "object",
        "$defs": {"Color": {"enum": ["red", "blue"]}},
        "properties": {
            "color": {"$ref": "#/$defs/Color"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "items": {"type": "array", "items": {"type": "number"}},
        },
        "required": ["color"],
    }
    assert schema_errors({"color": "red", "note": None, "items": [1, 2.5]}, schema) == []
    errors = schema_errors({"color": "green", "note": 3, "items": ["a"]}, schema)
    assert any(e.startswith("color:") for e in errors)
    assert any(e.startswith("note:") for e in errors)
    assert any(e.startswith("items[0]:") for e in errors)


def test_parse_strict_and_repair() -> None:
    assert parse_strict('<think>hm</think> {"a": 1}') == {"a": 1}
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_strict('Answer: {"a": 1}')
    assert repair_json('Answer: {"a": {"b": "}"},} done') == {"a": {"b": "}"}}
    # Commas inside strings are data, not trailing commas (found by hypothesis).
    assert repair_json('{",]": null}') == {",]": None}
    assert repair_json('{"k": ",}", "l": [1, 2, ],}') == {"k": ",}", "l": [1, 2]}
    assert repair_json('{"l": [1, "x", ], "m": "y",}') == {"l": [1, "x"], "m": "y"}
    with pytest.raises(ValueError):
        repair_json("nothing")
    # A reply cut off at max_tokens, and one missing a comma, are recovered.
    assert repair_json('Sure: {"count": 3, "name": "x') == {"count": 3, "name": "x"}
    assert repair_json('{"count": 3 "name": "x"}') == {"count": 3, "name": "x"}


def test_schema_errors_name_missing_and_unexpected_fields() -> None:
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer"}, "name": {"type": "string"}},
        "required": ["count", "name"],
        "additionalProperties": False,
    }
    assert schema_errors({"count": 3.0, "name": "x"}, schema) == []  # 3.0 is an integer
    errors = schema_errors({"count": True, "extra": 1}, schema)
    assert "count: expected integer, got boolean" in errors
    assert "name: required field is missing" in errors
    assert "extra: unexpected field" in errors
    # Ranges are not the reply's shape: a score of 7 on a 1-5 scale is clamped later.
    ranged = {"type": "object", "properties": {"score": {"type": "integer", "maximum": 5}}}
    assert schema_errors({"score": 7}, ranged) == []
    # A schema with a reference nobody defined checks nothing rather than failing.
    assert schema_errors({"a": 1}, {"$ref": "#/$defs/Nowhere"}) == []


def test_client_errors_carry_the_server_message() -> None:
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    body = {"error": {"message": "model 'nope' not found", "type": "invalid_request_error"}}
    exc = openai.NotFoundError("boom", response=httpx.Response(404, request=request), body=body)
    assert classify_error(exc).description == "404 Not Found: model 'nope' not found"


class _RefusesSchema(ScriptedChat):
    """An OpenAI-style model whose endpoint answers 400 to ``response_format``:
    a real provider's refusal cannot be produced on demand."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        request = httpx.Request("POST", "http://x/v1/chat/completions")
        error = openai.BadRequestError(
            "boom",
            response=httpx.Response(400, request=request),
            body={"error": {"message": "response_format json_schema is not supported"}},
        )
        return ScriptedChat(script=[error])


def test_schema_refusal_falls_back_to_prompting_and_is_remembered() -> None:
    cache = ChatModelCache()
    chat = _RefusesSchema(script=[_reply('{"count": 2, "name": "y"}')])
    value = _caller(chat, cache=cache).invoke_json(
        [{"role": "user", "content": "q"}], stage="parsing", schema=SCHEMA
    )
    assert value == {"count": 2, "name": "y"}
    assert cache.structured_output_supported(MODEL) is False


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    value=st.dictionaries(st.text(max_size=6), _JSON_VALUES, max_size=4),
    prose=st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=20),
)
def test_repair_recovers_any_object_wrapped_in_prose(value: dict[str, Any], prose: str) -> None:
    text = json.dumps(value)
    assert parse_strict(text) == value
    assert repair_json(f"{prose}{text}{prose}") == value
