"""Abstention and sufficiency checks against a scripted judge.

The judge is scripted because these tests need exact replies on demand, including
malformed ones a real model only produces by accident.
"""

from __future__ import annotations

from typing import Any

import pytest
from _support.judges import ScriptedJudge

from verifleet.pipeline._checks import (
    CheckOutcome,
    CheckReplyError,
    detect_abstention,
    detect_sufficiency,
)
from verifleet.pipeline._llm_protocol import ChatCaller, ModelCallError

QUESTION = "Which organ is KRAS most essential in?"
RESPONSE = "I can't help with that; please consult an oncologist."


def test_scripted_judge_satisfies_the_protocol() -> None:
    assert isinstance(ScriptedJudge(), ChatCaller)


def test_abstention_prompt_carries_question_response_and_instructions() -> None:
    judge = ScriptedJudge({"reasoning": "deflects to an expert", "abstention_detected": True})
    outcome = detect_abstention(
        judge, question=QUESTION, response=RESPONSE, instructions="Treat jokes as refusals."
    )
    assert outcome == CheckOutcome(detected=True, reasoning="deflects to an expert")
    call = judge.calls[0]
    assert call["stage"] == "abstention_check"
    assert set(call["schema"]["required"]) == {"reasoning", "abstention_detected"}
    assert QUESTION in call["messages"][1]["content"]
    assert RESPONSE in call["messages"][1]["content"]
    # Instructions extend the judge's rules, so they belong in the system message.
    assert "Treat jokes as refusals." in call["messages"][0]["content"]


def test_abstention_prompt_states_what_is_and_is_not_abstention() -> None:
    judge = ScriptedJudge({"reasoning": "commits", "abstention_detected": False})
    outcome = detect_abstention(judge, question=QUESTION, response="The pancreas, probably.")
    assert outcome.detected is False
    system = judge.calls[0]["messages"][0]["content"].lower()
    for phrase in ("refuse", "evasive", "consult an expert", "caveats", "part of", "approximate"):
        assert phrase in system


def test_no_instructions_leaves_no_empty_instruction_block() -> None:
    judge = ScriptedJudge({"reasoning": "r", "abstention_detected": False})
    detect_abstention(judge, question=QUESTION, response="x", instructions="   ")
    assert "additional_instructions" not in judge.text()


@pytest.mark.parametrize(
    "reply",
    [
        {"reasoning": "missing verdict"},
        {"reasoning": "r", "abstention_detected": "yes"},
        {"reasoning": 3, "abstention_detected": True},
        ["not", "an", "object"],
    ],
)
def test_malformed_abstention_reply_raises_check_reply_error(reply: Any) -> None:
    judge = ScriptedJudge(reply)
    with pytest.raises(CheckReplyError) as info:
        detect_abstention(judge, question=QUESTION, response=RESPONSE)
    assert info.value.stage == "abstention_check"
    assert info.value.reply == reply


def test_model_errors_pass_through_unchanged() -> None:
    failure = ModelCallError("503 after 4 attempts", transient=True, attempts=4)
    with pytest.raises(ModelCallError) as info:
        detect_abstention(ScriptedJudge(failure), question=QUESTION, response=RESPONSE)
    assert info.value is failure


SCHEMA = {
    "type": "object",
    "properties": {"tissue": {"type": "string", "description": "Organ where KRAS matters most"}},
    "required": ["tissue"],
}


def test_sufficiency_prompt_carries_schema_question_response_and_instructions() -> None:
    judge = ScriptedJudge({"reasoning": "tissue: pancreas", "sufficient": True})
    outcome = detect_sufficiency(
        judge,
        question=QUESTION,
        response="Mostly the pancreas.",
        schema=SCHEMA,
        instructions="Hedged organs count.",
    )
    assert outcome == CheckOutcome(detected=True, reasoning="tissue: pancreas")
    call = judge.calls[0]
    assert call["stage"] == "sufficiency_check"
    user = call["messages"][1]["content"]
    assert QUESTION in user and "Mostly the pancreas." in user
    assert "Organ where KRAS matters most" in user
    assert "Hedged organs count." in call["messages"][0]["content"]


def test_insufficient_response_is_reported_as_not_detected() -> None:
    judge = ScriptedJudge({"reasoning": "tissue: nothing maps", "sufficient": False})
    outcome = detect_sufficiency(judge, question=QUESTION, response=RESPONSE, schema=SCHEMA)
    assert outcome.detected is False
    assert outcome.reasoning == "tissue: nothing maps"


def test_malformed_sufficiency_reply_raises_check_reply_error() -> None:
    judge = ScriptedJudge({"reasoning": "r", "abstention_detected": True})
    with pytest.raises(CheckReplyError, match="sufficient"):
        detect_sufficiency(judge, question=QUESTION, response=RESPONSE, schema=SCHEMA)
