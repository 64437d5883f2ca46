"""The host checks judge replies against a template-made schema only in its safe
reduction: no regular expression is evaluated, no reference leaves the document,
and exponential expansions are refused or stopped by a step budget. A regression
here freezes or hangs the test (the timeout marks turn that into a failure)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from referencing.exceptions import Unresolvable

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.pipeline._llm import (
    ChatModelCache,
    LangchainChatCaller,
    OpenAIHttpChatCaller,
    UsageTracker,
    schema_errors,
)
from verifleet.pipeline._llm._safe_schema import (
    MAX_EXPANSION,
    MAX_STEPS,
    BudgetExceeded,
    UnsafeSchema,
    bounded_validator,
    reduce_schema,
    step_budget,
)
from verifleet.schemas import ModelConfig, RetryPolicy

pytestmark = pytest.mark.integration

pytestmark = pytest.mark.timeout(60)

REDOS_VALUE = "a" * 40 + "!"


class SilentListener:
    """A local server that accepts connections and never answers: a host that
    fetched a reference from it would wait for ever. Records every connection."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self.connections: list[Any] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections.append((conn, peer))  # held open, never answered

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for conn, _peer in self.connections:
            conn.close()
        self._sock.close()


@pytest.fixture
def listener() -> Iterator[SilentListener]:
    server = SilentListener()
    yield server
    server.close()


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


def test_a_backtracking_pattern_is_never_evaluated_on_the_host() -> None:
    schema = _object(value={"type": "string", "pattern": "^(a+)+$"})
    assert "pattern" not in reduce_schema(schema)["properties"]["value"]
    assert schema_errors({"value": REDOS_VALUE}, schema) == []
    # The shape is still checked.
    assert schema_errors({"value": 3}, schema) == ["value: expected string, got integer"]
    # Nor pattern-keyed properties, nor formats.
    keyed = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}}
    assert schema_errors({REDOS_VALUE: "x"}, keyed) == []
    dated = _object(when={"type": "string", "format": "date"})
    assert schema_errors({"when": "not a date"}, dated) == []


def test_dropping_patterns_never_invents_an_unexpected_field() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "patternProperties": {"^x_": {"type": "string"}},
        "additionalProperties": False,
    }
    assert schema_errors({"a": 1, "x_note": "fine"}, schema) == []
    assert schema_errors({"a": "one"}, schema) == ["a: expected integer, got string"]


def test_one_of_branches_told_apart_by_dropped_keywords_still_match() -> None:
    # Two string forms told apart only by their patterns: after the patterns are
    # dropped "exactly one" would fail an honest reply, "at least one" does not.
    schema = _object(code={"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string"}]})
    assert schema_errors({"code": "abc"}, schema) == []
    errors = schema_errors({"code": 5}, schema)
    assert errors == ["code: 5 matches none of the allowed forms"]


def test_a_remote_reference_is_never_fetched(listener: SilentListener) -> None:
    url = f"http://127.0.0.1:{listener.port}/schema.json"
    schema = _object(value={"type": "string", "$ref": url}, other={"$ref": "#/$defs/Other"})
    schema["$defs"] = {"Other": {"$ref": url + "#/x"}}
    assert schema_errors({"value": "x", "other": 1}, schema) == []
    assert schema_errors({"value": "x"}, schema) == ["other: required field is missing"]
    # A base URI of its own cannot send the local references elsewhere either.
    rebased = {
        **_object(value={"$ref": "#/$defs/V"}),
        "$id": url,
        "$defs": {"V": {"type": "integer"}},
    }
    assert schema_errors({"value": "x"}, rebased) == ["value: expected integer, got string"]
    nested = _object(value={"$id": url, "$ref": "#/$defs/V"})
    assert schema_errors({"value": "x"}, nested) == []
    assert listener.connections == []


def test_the_validator_registry_refuses_every_retrieval(listener: SilentListener) -> None:
    # Defence in depth: even a schema that skipped the reduction cannot fetch.
    url = f"http://127.0.0.1:{listener.port}/schema.json"
    validator = bounded_validator({"$ref": url})
    with pytest.raises(Unresolvable), step_budget():
        list(validator.iter_errors({"a": 1}))
    assert listener.connections == []


def _doubling_chain(depth: int) -> dict[str, Any]:
    definitions: dict[str, Any] = {
        f"D{i}": {"anyOf": [{"$ref": f"#/$defs/D{i + 1}"}, {"$ref": f"#/$defs/D{i + 1}"}]}
        for i in range(depth)
    }
    definitions[f"D{depth}"] = {"type": "integer"}
    return {**_object(value={"$ref": "#/$defs/D0"}), "$defs": definitions}


def test_an_exponential_any_of_chain_is_refused_before_any_check() -> None:
    with pytest.raises(UnsafeSchema, match=f"more than {MAX_EXPANSION} subschemas"):
        reduce_schema(_doubling_chain(40))
    assert schema_errors({"value": "not an integer"}, _doubling_chain(40)) == []
    # A short chain is an ordinary schema and is checked.
    assert schema_errors({"value": "x"}, _doubling_chain(3)) == [
        'value: "x" matches none of the allowed forms'
    ]


def test_a_reference_cycle_that_never_descends_is_refused() -> None:
    schema = {"$ref": "#/$defs/A", "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}]}}}
    with pytest.raises(UnsafeSchema, match="refers to itself"):
        reduce_schema(schema)
    assert schema_errors({"a": 1}, schema) == []


def test_recursive_models_are_still_checked() -> None:
    node = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
        "required": ["name"],
    }
    schema = {"$ref": "#/$defs/Node", "$defs": {"Node": node}}
    tree = {"name": "root", "children": [{"name": "leaf", "children": []}]}
    assert schema_errors(tree, schema) == []
    bad = {"name": "root", "children": [{"children": []}]}
    assert schema_errors(bad, schema) == ["children[0].name: required field is missing"]


def test_a_reply_cannot_make_a_recursive_schema_exponential() -> None:
    # Statically small (each alternative descends into a property), but a deep
    # reply that fails at the bottom would be tried 2**depth times if each
    # reference were evaluated again: it is evaluated once per part of the reply.
    branch = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}}
    schema = {"$ref": "#/$defs/A", "$defs": {"A": {"anyOf": [branch, dict(branch)]}}}
    reply: Any = 1
    for _ in range(40):
        reply = {"x": reply}
    with step_budget(MAX_STEPS):
        errors = list(bounded_validator(reduce_schema(schema)).iter_errors(reply))
    assert [e.validator for e in errors] == ["anyOf"]
    assert schema_errors(reply, schema) == [
        f"the reply: {json.dumps(reply)[:80]} matches none of the allowed forms"
    ]
    assert schema_errors({"x": {"x": {}}}, schema) == []


def test_a_check_past_its_step_budget_checks_nothing() -> None:
    schema = _object(rows={"type": "array", "items": _object(a={"type": "string"})})
    small = {"rows": [{"a": 1}] * 10}
    assert len(schema_errors(small, schema)) == 10
    huge = {"rows": [{"a": 1}] * (MAX_STEPS // 2)}
    assert schema_errors(huge, schema) == []
    with pytest.raises(BudgetExceeded), step_budget(20):
        list(bounded_validator(reduce_schema(schema)).iter_errors(small))


def test_oversized_and_overdeep_schemas_are_not_checked() -> None:
    wide = _object(**{f"f{i}": {"type": "string", "description": "x" * 100} for i in range(3000)})
    with pytest.raises(UnsafeSchema, match="characters"):
        reduce_schema(wide)
    assert schema_errors({"f0": 1}, wide) == []
    deep: dict[str, Any] = {"type": "integer"}
    for _ in range(40):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(UnsafeSchema, match="nests deeper"):
        reduce_schema(deep)


@pytest.mark.parametrize("caller_class", [LangchainChatCaller, OpenAIHttpChatCaller])
def test_both_callers_ask_with_a_hostile_schema_and_touch_nothing(
    caller_class: type[LangchainChatCaller] | type[OpenAIHttpChatCaller],
    listener: SilentListener,
) -> None:
    # The real callers against the scripted endpoint: the schema goes out as the
    # request's response_format (plain JSON) and the reply comes back unharmed.
    url = f"http://127.0.0.1:{listener.port}/schema.json"
    schema = _doubling_chain(40)
    schema["properties"] = {
        "value": {"type": "string", "pattern": "^(a+)+$"},
        "remote": {"type": "string", "$ref": url},
        "chained": {"$ref": "#/$defs/D0"},
    }
    schema["required"] = ["value", "remote"]
    fields = {"value": REDOS_VALUE, "remote": "r"}
    question = "Fill the hostile schema?"
    with run_endpoint_in_thread(
        EndpointConfig(answers={question: {"text": "x", "fields": fields}})
    ) as endpoint:
        model = ModelConfig(
            model_name="judge", interface="openai_endpoint", endpoint_base_url=endpoint.base_url
        )
        caller = caller_class(
            model,
            tracker=UsageTracker(),
            clients=ChatModelCache(),
            policy=RetryPolicy(),
            request_timeout=10.0,
        )
        value = caller.invoke_json(
            [{"role": "user", "content": question}], stage="parsing", schema=schema
        )
    assert value["value"] == REDOS_VALUE and value["remote"] == "r"
    assert listener.connections == []


def test_every_field_that_refers_to_one_definition_gets_its_own_message() -> None:
    schema = {
        **_object(a={"$ref": "#/$defs/S"}, b={"$ref": "#/$defs/S"}),
        "$defs": {"S": {"type": "string"}},
    }
    assert schema_errors({"a": 1, "b": 1}, schema) == [
        "a: expected string, got integer",
        "b: expected string, got integer",
    ]
