"""SufficiencyCheck: does the response hold enough to fill the answer template?"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from verifleet.pipeline._llm_protocol import ChatCaller

from .outcomes import CheckOutcome
from .prompting import build_messages, dump_json, object_schema, validate_reply

__all__ = ["SUFFICIENCY_REPLY_SCHEMA", "SUFFICIENCY_STAGE", "detect_sufficiency"]

SUFFICIENCY_STAGE = "sufficiency_check"

SUFFICIENCY_REPLY_SCHEMA = object_schema(
    {"reasoning": {"type": "string"}, "sufficient": {"type": "boolean"}},
    title="SufficiencyVerdict",
)

_SYSTEM = """You review answers written by another AI model before they are parsed \
into a structured template. Decide whether the answer contains ENOUGH information to \
fill in the template's required fields.

The template is given as a JSON schema. Consider only the fields listed under \
"required" (if the schema has no "required" list, consider every field). Fields \
that are optional or have a default value do not count.

A required field is covered when the answer contains something that can be mapped \
to it: an explicit value, a hedged or approximate value ("about 50", "probably X"), \
a value that follows directly from what is written, or a qualified answer that still \
commits to a value. Use the field's description and the question to understand what \
the field needs. Be lenient: one plausible span is enough.

A required field is NOT covered when nothing in the answer maps to it, when the \
answer says the information is unknown or unavailable, or when the answer is so \
vague that it offers no candidate value for that field.

You do not judge correctness: a wrong but explicit value still covers its field.

Go through the required fields one by one, then give the verdict: the answer is \
sufficient only if every required field is covered. Reply with a JSON object: \
"reasoning" (one short line per required field) followed by "sufficient" (true or \
false)."""

_USER = """<question>
{question}
</question>

<answer>
{response}
</answer>

<template_schema>
{schema}
</template_schema>

Is the answer sufficient to fill every required field of the template? Reply with \
the JSON object."""


class _SufficiencyReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str
    sufficient: bool


def detect_sufficiency(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    schema: dict[str, object],
    instructions: str | None = None,
) -> CheckOutcome:
    """Ask the judge whether ``response`` holds enough to fill ``schema``.

    Args:
        judge: The parsing model, bound to the unit.
        question: The question as asked.
        response: The answering model's response.
        schema: The JSON schema of the template's parsed fields (with descriptions).
        instructions: The user's extra instructions
            (``prompt_config.sufficiency_detection``).

    Returns:
        ``detected`` is True when the response IS sufficient.

    Raises:
        CheckReplyError: the judge's object lacks the fields or has wrong types.
        ModelCallError, StructuredOutputError: from the judge, unchanged.
    """
    user = _USER.format(question=question, response=response, schema=dump_json(schema))
    reply = judge.invoke_json(
        build_messages(_SYSTEM, user, instructions),
        stage=SUFFICIENCY_STAGE,
        schema=SUFFICIENCY_REPLY_SCHEMA,
        schema_name="sufficiency_verdict",
    )
    verdict = validate_reply(_SufficiencyReply, reply, stage=SUFFICIENCY_STAGE)
    return CheckOutcome(detected=verdict.sufficient, reasoning=verdict.reasoning)
