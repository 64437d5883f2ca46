"""AbstentionCheck: did the answering model decline to answer?"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from verifleet.pipeline._llm_protocol import ChatCaller

from .outcomes import CheckOutcome
from .prompting import build_messages, object_schema, validate_reply

__all__ = ["ABSTENTION_REPLY_SCHEMA", "ABSTENTION_STAGE", "detect_abstention"]

ABSTENTION_STAGE = "abstention_check"

ABSTENTION_REPLY_SCHEMA = object_schema(
    {"reasoning": {"type": "string"}, "abstention_detected": {"type": "boolean"}},
    title="AbstentionVerdict",
)

_SYSTEM = """You review answers written by another AI model. Decide whether the answer \
ABSTAINS: whether the model, in the end, declines to give an answer to the question \
that was asked.

It IS an abstention when the answer:
- refuses outright or says it cannot or will not answer ("I can't answer that", \
"I'm not able to help with this", "that is against my guidelines");
- says it lacks the knowledge, data or access needed and then gives no answer of its own;
- is evasive: it answers a different or more general question, or talks around the \
topic without ever committing to an answer to this one;
- deflects: it only sends the reader elsewhere ("consult an expert", "ask your \
doctor", "check the official documentation") instead of answering.

It is NOT an abstention when the answer commits to an answer, even if it:
- adds caveats, disclaimers or advice to double-check ("this may have changed, \
please verify");
- answers only part of the question;
- gives an approximate, estimated, hedged or uncertain value ("roughly 40", \
"most likely X");
- is wrong. Correctness is judged elsewhere; you only judge whether an answer was given.

Work as follows: look for a statement that the model will not or cannot answer, or \
for deflection. Then check whether the answer nevertheless commits to a specific \
answer of its own (a value, a name, a yes/no, a definite claim). If it commits, it \
is not an abstention. If you are unsure, it is not an abstention.

Reply with a JSON object: "reasoning" (quote the decisive sentence of the answer, \
if any, and explain your verdict in one or two sentences) followed by \
"abstention_detected" (true or false)."""

_USER = """<question>
{question}
</question>

<answer>
{response}
</answer>

Does this answer abstain from answering the question? Reply with the JSON object."""


class _AbstentionReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str
    abstention_detected: bool


def detect_abstention(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    instructions: str | None = None,
) -> CheckOutcome:
    """Ask the judge whether ``response`` abstains from answering ``question``.

    Args:
        judge: The parsing model, bound to the unit.
        question: The question as asked.
        response: The answering model's response (final message or full trace).
        instructions: The user's extra instructions
            (``prompt_config.abstention_detection``).

    Returns:
        ``detected`` is True when the response is a refusal, an evasion or a deflection.

    Raises:
        CheckReplyError: the judge's object lacks the fields or has wrong types.
        ModelCallError, StructuredOutputError: from the judge, unchanged.
    """
    messages = build_messages(
        _SYSTEM, _USER.format(question=question, response=response), instructions
    )
    reply = judge.invoke_json(
        messages,
        stage=ABSTENTION_STAGE,
        schema=ABSTENTION_REPLY_SCHEMA,
        schema_name="abstention_verdict",
    )
    verdict = validate_reply(_AbstentionReply, reply, stage=ABSTENTION_STAGE)
    return CheckOutcome(detected=verdict.abstention_detected, reasoning=verdict.reasoning)
