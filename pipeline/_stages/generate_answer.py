"""Stage 2: get the answering model's response (once per unit)."""

from __future__ import annotations

from typing import ClassVar

from .._answer import CachedAnswer
from .._context import VerificationContext
from .._llm_protocol import Message
from .._prompts import build_answer_messages
from .._stage import Stage, StageFailure, describe_cause

__all__ = ["GenerateAnswerStage"]

_STAGE = "answer_generation"


class GenerateAnswerStage(Stage):
    """Calls the answering model, replays a manual answer, or runs an agent.

    With ``ctx.answer`` already set (another parsing model of the unit got it, or
    the caller passed a cached answer) nothing is called: the answer and its
    ``answer_generation`` usage are reused, failure included. Fatal. A response
    (with its trace messages) over ``ResultLimits.response`` fails the unit with
    an error naming the limit, and is not kept.
    """

    name: ClassVar[str] = "GenerateAnswer"
    failure_label: ClassVar[str] = "answer generation failed"

    def run(self, ctx: VerificationContext) -> None:
        if ctx.answer is None:
            generated = self._generate(ctx)
            # The answer's calls travel with it: the unit's other judges reuse it.
            calls = ctx.usage.calls.take(_STAGE)
            ctx.answer = _bounded(ctx, generated.model_copy(update={"calls": calls}))
        else:
            ctx.answer = _bounded(ctx, ctx.answer)
            if ctx.answer.usage:
                # Paid once, by the unit's first result (or by the run that stored
                # it): its cost is not counted again, so results' costs add up.
                ctx.usage.merge_stage(_STAGE, ctx.answer.usage, free=True)
        if ctx.answer.agent_metrics is not None:
            ctx.usage.set_agent_metrics(ctx.answer.agent_metrics)
        if ctx.answer.error is not None:
            raise StageFailure(ctx.answer.error)

    def _generate(self, ctx: VerificationContext) -> CachedAnswer:
        model = ctx.answering
        servers = sorted(model.mcp_urls_dict) if model.mcp_urls_dict else None
        shown = 0
        try:
            if model.interface == "manual":
                answer = ctx.resources.manual.answer_for(model, ctx.question_id, ctx.question.text)
            else:
                messages, shown = _prompt(ctx)
                answer = _ask(ctx, messages, agent=bool(servers))
        except Exception as exc:
            # Remember the failure so the unit's other parsing models report it
            # instead of calling the model again.
            return CachedAnswer(
                error=describe_cause(exc),
                answering_mcp_servers=servers,
                usage=ctx.usage.stage(_STAGE),
            )
        return answer.model_copy(
            update={
                "answering_mcp_servers": servers,
                "usage": ctx.usage.stage(_STAGE),
                "few_shot_example_count": shown,
            }
        )


def _bounded(ctx: VerificationContext, answer: CachedAnswer) -> CachedAnswer:
    """``answer``, or in its place a failed answer naming the limit when its
    response and trace are over the operator's ``ResultLimits.response``."""
    if answer.error is not None:
        return answer
    limits = ctx.resources.sandbox.settings.result_limits
    problem = limits.problem(
        "response",
        "the answering model's response",
        [answer.raw_llm_response, answer.trace_messages],
    )
    if problem is None:
        return answer
    return CachedAnswer(
        error=problem,
        answering_mcp_servers=answer.answering_mcp_servers,
        usage=answer.usage,
        agent_metrics=answer.agent_metrics,
        # The prompts stay on record; the reply over the limit goes, as in the result.
        calls=[c.model_copy(update={"reply": None, "error": problem}) for c in answer.calls],
    )


def _prompt(ctx: VerificationContext) -> tuple[list[Message], int]:
    """The answering prompt and how many few-shot examples it carries."""
    few_shot = ctx.config.few_shot_config
    examples = few_shot.resolve(ctx.question_id, ctx.question.few_shot_examples) if few_shot else []
    messages = build_answer_messages(
        ctx.question_text,
        system_prompt=ctx.answering.system_prompt,
        examples=examples,
        instructions=ctx.prompts.generation,
        history=ctx.conversation,
    )
    return messages, len(examples)


def _ask(ctx: VerificationContext, messages: list[Message], *, agent: bool) -> CachedAnswer:
    model = ctx.answering
    if agent:
        runner = ctx.resources.agent_runner()
        return runner(model, messages, tracker=ctx.usage, config=ctx.config, deadline=ctx.deadline)
    caller = ctx.resources.caller(
        model, tracker=ctx.usage, config=ctx.config, deadline=ctx.deadline
    )
    return CachedAnswer(raw_llm_response=caller.invoke(messages, stage=_STAGE))
