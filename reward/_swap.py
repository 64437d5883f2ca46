"""A pairwise equivalence judge with an optional swap check.

An LLM asked "are these two answers equivalent?" tends to favour one position
(docs/reward.md, "Swap check"). With the swap check the judge
is asked twice, the reference and the response in both orders, and the response
counts as equivalent only when both verdicts say so; a disagreement is recorded
as inconsistent and scores as not equivalent.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from verifleet.pipeline import ChatCaller, Message

__all__ = ["EQUIVALENCE_SCHEMA", "EquivalenceVerdict", "equivalence_messages", "judge_equivalence"]

EQUIVALENCE_SCHEMA = {
    "type": "object",
    "properties": {"equivalent": {"type": "boolean"}},
    "required": ["equivalent"],
    "additionalProperties": False,
}

_STAGE = "equivalence_judge"
_SYSTEM = (
    "You compare two answers to the same question. Decide whether they give the same "
    "final answer (the same facts or values, in any wording or notation). Ignore style, "
    'length and explanations. Reply with a JSON object {"equivalent": true|false}.'
)


class EquivalenceVerdict(BaseModel):
    """The judge's verdict.

    Attributes:
        equivalent: The verdict used for the reward.
        first: Verdict with the reference first.
        swapped: Verdict with the response first (None without swap check).
        consistent: Both orders agreed (True without swap check).
    """

    model_config = ConfigDict(extra="forbid")

    equivalent: bool
    first: bool
    swapped: bool | None = None
    consistent: bool = True


def equivalence_messages(question: str, answer_1: str, answer_2: str) -> list[Message]:
    """The judge prompt comparing ``answer_1`` and ``answer_2`` in that order."""
    user = (
        f"QUESTION:\n{question}\n\nANSWER 1:\n{answer_1}\n\nANSWER 2:\n{answer_2}\n\n"
        "Do ANSWER 1 and ANSWER 2 give the same final answer?"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def _ask(caller: ChatCaller, messages: list[Message]) -> bool:
    reply = caller.invoke_json(
        messages, stage=_STAGE, schema=EQUIVALENCE_SCHEMA, schema_name="equivalence"
    )
    return bool(reply["equivalent"])


def judge_equivalence(
    caller: ChatCaller,
    *,
    question: str,
    reference: str,
    response: str,
    swap_check: bool,
) -> EquivalenceVerdict:
    """Ask ``caller`` whether ``response`` gives the same answer as ``reference``.

    Raises:
        ModelCallError: the judge could not be reached after retries.
        StructuredOutputError: the judge never returned ``{"equivalent": bool}``.
    """
    first = _ask(caller, equivalence_messages(question, reference, response))
    if not swap_check:
        return EquivalenceVerdict(equivalent=first, first=first)
    swapped = _ask(caller, equivalence_messages(question, response, reference))
    return EquivalenceVerdict(
        equivalent=first and swapped, first=first, swapped=swapped, consistent=first == swapped
    )
