"""Request shapes: the spec's responses form, the plain form, trajectories."""

from __future__ import annotations

import pytest
from _support.reward import CORRECT, nemo_request
from pydantic import TypeAdapter, ValidationError

from verifleet.reward import (
    InvalidRequestError,
    PlainVerifyRequest,
    ResponsesVerifyRequest,
    VerifyRequest,
    request_answer,
)
from verifleet.reward._request import requested_question_id, requested_question_text

ADAPTER: TypeAdapter[ResponsesVerifyRequest | PlainVerifyRequest] = TypeAdapter(VerifyRequest)


def test_spec_shape_is_recognised_and_extra_fields_kept() -> None:
    request = ADAPTER.validate_python(nemo_request(CORRECT, expected_answer="Paris"))
    assert isinstance(request, ResponsesVerifyRequest)
    assert request.model_dump(exclude_unset=True)["expected_answer"] == "Paris"
    answer = request_answer(request)
    assert answer.raw_llm_response == CORRECT
    assert answer.trace_messages == []


def test_question_found_by_id_in_metadata_or_top_level_or_by_prompt() -> None:
    body = nemo_request(CORRECT)
    body["responses_create_params"]["metadata"] = {"question_id": "geo"}
    assert requested_question_id(ADAPTER.validate_python(body)) == "geo"
    assert (
        requested_question_id(ADAPTER.validate_python(nemo_request(CORRECT, question_id="x")))
        == "x"
    )
    plain_prompt = ADAPTER.validate_python(nemo_request(CORRECT, question="  Why?  "))
    assert isinstance(plain_prompt, ResponsesVerifyRequest)
    assert requested_question_id(plain_prompt) is None
    assert requested_question_text(plain_prompt) == "Why?"


def test_tool_trajectory_becomes_a_trace_ending_with_the_answer() -> None:
    body = nemo_request(CORRECT)
    body["response"]["output"] = [
        {"type": "reasoning", "summary": []},
        {
            "type": "function_call",
            "name": "search",
            "arguments": '{"q": "France"}',
            "call_id": "c1",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "Paris is the capital"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": CORRECT}],
        },
    ]
    answer = request_answer(ADAPTER.validate_python(body))
    roles = [m["role"] for m in answer.trace_messages]
    assert roles == ["assistant", "tool", "assistant"]
    assert answer.trace_messages[0]["tool_calls"][0]["function"]["name"] == "search"
    assert answer.trace_messages[-1]["content"] == CORRECT
    assert "Paris is the capital" in answer.raw_llm_response


def test_response_without_assistant_text_is_refused() -> None:
    body = nemo_request(CORRECT)
    body["response"]["output"] = [{"type": "function_call", "name": "f", "arguments": "{}"}]
    with pytest.raises(InvalidRequestError, match="no assistant message"):
        request_answer(ADAPTER.validate_python(body))
    with pytest.raises(InvalidRequestError, match="empty"):
        request_answer(PlainVerifyRequest(question_id="geo", response="  "))


def test_plain_form_rules() -> None:
    request = ADAPTER.validate_python({"question_id": "geo", "response": CORRECT})
    assert isinstance(request, PlainVerifyRequest)
    messages = ADAPTER.validate_python(
        {
            "question_id": "geo",
            "messages": [{"role": "user", "content": "q"}, {"type": "ai", "content": CORRECT}],
        }
    )
    assert request_answer(messages).trace_messages[-1] == {"role": "assistant", "content": CORRECT}
    with pytest.raises(ValidationError, match="exactly one of 'question_id' and 'question'"):
        ADAPTER.validate_python({"response": CORRECT})
    with pytest.raises(ValidationError, match="exactly one of 'response' and 'messages'"):
        ADAPTER.validate_python({"question_id": "geo"})
    with pytest.raises(ValidationError, match="Extra inputs"):
        ADAPTER.validate_python({"question_id": "geo", "response": CORRECT, "colour": 1})
    with pytest.raises(InvalidRequestError, match=r"messages\[0\]: a message needs a 'role'"):
        request_answer(PlainVerifyRequest(question_id="geo", messages=[{"content": "hi"}]))


def test_rollout_with_top_level_output_is_the_responses_shape() -> None:
    body = nemo_request(CORRECT)
    body["output"] = body.pop("response")["output"]
    request = ADAPTER.validate_python(body)
    assert isinstance(request, ResponsesVerifyRequest)
    assert request_answer(request).raw_llm_response == CORRECT
