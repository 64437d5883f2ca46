"""The model calls behind one result: what was sent and what came back.

Not in the original framework's result (it keeps the system prompts and the
answering model's response, ``raw_llm_response``); verifleet records every call of
a result's pipeline so a result page can show the exact prompts and replies, as
inspect_ai's sample transcript does. Stored in the template section
(``VerificationResultTemplate.model_calls``), bounded by
``ResultLimits.calls`` (:func:`bound_calls`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .._result_limits import ResultLimits, json_size

__all__ = ["TRUNCATION_MARK", "ModelCall", "bound_calls"]

#: Appended to a text cut to fit the limit, followed by the counts.
TRUNCATION_MARK = "\n[... truncated by verifleet:"


class ModelCall(BaseModel):
    """One call to a model, as the pipeline stage made it.

    Attributes:
        stage: The stage the call's tokens are counted under (``answer_generation``,
            ``parsing``, ``abstention_check``, ``sufficiency_check``,
            ``rubric_evaluation``, ``deep_judgment``, ...).
        model: The model's name.
        kind: ``text`` (a plain reply) or ``json`` (a JSON object asked for with a
            schema; the reply is the object as the judge's reply yielded it, after
            at most one re-ask and repair).
        messages: The messages sent, ``{"role", "content"}`` each (system, user,
            and earlier turns). A ``json`` call also carries the schema (as the
            provider's structured output, or as an instruction appended to the
            prompt), which is not repeated here.
        reply: The reply text; None when the call failed without one.
        error: Why the call failed; None when it succeeded.
        cached: The reply came from verifleet's call cache.
        truncated: Some text was cut to fit ``VERIFLEET_RESULT_MAX_CALLS``.

    Raises:
        pydantic.ValidationError: on an unknown field or a wrongly typed value.
    """

    model_config = ConfigDict(extra="forbid")

    stage: str
    model: str = ""
    kind: str = "text"
    messages: list[dict[str, str]] = Field(default_factory=list)
    reply: str | None = None
    error: str | None = None
    cached: bool = False
    truncated: bool = False


def _cut(text: str, keep: int) -> str:
    if len(text) <= keep:
        return text
    return f"{text[:keep]}{TRUNCATION_MARK} {keep} of {len(text)} characters kept]"


def _capped(call: ModelCall, keep: int) -> ModelCall:
    messages = [{**m, "content": _cut(m.get("content", ""), keep)} for m in call.messages]
    reply = None if call.reply is None else _cut(call.reply, keep)
    changed = reply != call.reply or messages != call.messages
    return call.model_copy(
        update={"messages": messages, "reply": reply, "truncated": call.truncated or changed}
    )


def bound_calls(calls: list[ModelCall], limits: ResultLimits) -> list[ModelCall]:
    """``calls`` made to fit ``limits.calls`` bytes of compact JSON.

    The calls are a record, not an input to the verdict, so being over the limit
    never fails the result (unlike the other result limits): the longest texts
    are cut (each to the same length, halved until all fit, each cut marked with
    :data:`TRUNCATION_MARK` and the counts, the call flagged ``truncated``); if
    even short texts do not fit, the last calls are dropped and a final entry
    (stage ``omitted``) says how many. Never raises.
    """
    limit = limits.calls
    if json_size([c.model_dump() for c in calls]) <= limit:
        return calls
    longest = max(
        (
            len(t)
            for c in calls
            for t in [c.reply or "", *(m.get("content", "") for m in c.messages)]
        ),
        default=0,
    )
    keep = longest
    bounded = calls
    while keep > 256:
        keep //= 2
        bounded = [_capped(c, keep) for c in calls]
        if json_size([c.model_dump() for c in bounded]) <= limit:
            return bounded
    kept: list[ModelCall] = []
    for call in bounded:
        if json_size([c.model_dump() for c in [*kept, call]]) > limit - 200:
            break
        kept.append(call)
    dropped = len(bounded) - len(kept)
    note = ModelCall(
        stage="omitted",
        error=(
            f"{dropped} more model calls not recorded: over the limit of {limit} bytes "
            f"({ResultLimits.ENV['calls']}; see docs/security.md#result-limits)"
        ),
        truncated=True,
    )
    return [*kept, note]
