"""Deep-judgment parsing of a template: excerpts, then reasoning, then parameters.

Stage 1 collects verbatim excerpts per attribute and checks them against the
response (``deep_judgment_excerpts``); an optional search enhancement rates each
excerpt's hallucination risk (``deep_judgment_search``); stage 2 asks for
per-attribute reasoning grounded in the excerpts; stage 3 extracts the field
values from that reasoning. Every call is labelled ``"deep_judgment"``.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel

from verifleet.pipeline._llm_protocol import ChatCaller
from verifleet.schemas import VerificationConfig, VerificationResultDeepJudgment
from verifleet.templates import BaseAnswer, judge_json_schema

from .deep_judgment_excerpts import DEEP_JUDGMENT_STAGE, ExcerptHarvest, extract_excerpts
from .deep_judgment_prompts import (
    PARAMETERS_SYSTEM,
    REASONING_SYSTEM,
    attribute_guide,
    parameters_user,
    reasoning_reply_schema,
    reasoning_user,
)
from .deep_judgment_search import SearchFunction, assess_hallucination_risk
from .errors import CheckReplyError, DeepJudgmentError
from .outcomes import DeepJudgmentOutcome
from .prompting import build_messages

__all__ = ["deep_judgment_parse"]


def _field_schema_of(answer_cls: type | None) -> dict[str, Any]:
    if isinstance(answer_cls, type) and issubclass(answer_cls, BaseAnswer):
        return judge_json_schema(answer_cls)
    if isinstance(answer_cls, type) and issubclass(answer_cls, BaseModel):
        return answer_cls.model_json_schema()
    raise DeepJudgmentError(f"{answer_cls!r} is not a pydantic answer class")


def _reasoning(
    judge: ChatCaller,
    *,
    question: str,
    descriptions: dict[str, str],
    excerpts: dict[str, list[dict[str, Any]]],
    instructions: str | None,
    response: str | None = None,
) -> dict[str, str]:
    names = list(descriptions)
    reply = judge.invoke_json(
        build_messages(
            REASONING_SYSTEM.format(guide=attribute_guide(descriptions)),
            reasoning_user(question=question, excerpts=excerpts, response=response),
            instructions,
        ),
        stage=DEEP_JUDGMENT_STAGE,
        schema=reasoning_reply_schema(names),
        schema_name="attribute_reasoning",
    )
    bad = [n for n in names if not isinstance(reply, dict) or not isinstance(reply.get(n), str)]
    if bad:
        raise CheckReplyError(
            f"no reasoning text for attribute(s) {', '.join(bad)}",
            stage=DEEP_JUDGMENT_STAGE,
            reply=reply,
        )
    # Checked above: a dict with a string under every name.
    return {name: cast(dict[str, str], reply)[name] for name in names}


def deep_judgment_parse(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    config: VerificationConfig,
    answer_cls: type | None = None,
    field_schema: dict[str, Any] | None = None,
    schema_name: str | None = None,
    instructions: str | None = None,
    search: SearchFunction | None = None,
) -> DeepJudgmentOutcome:
    """Parse ``response`` into the template's fields with excerpts and reasoning.

    Args:
        judge: The parsing model, bound to the unit.
        question: The question as asked.
        response: The text being parsed (final AI message or full trace).
        answer_cls: The template class (before question-id injection); only for
            callers that hold one in-process (the pipeline passes the sandbox's
            ``field_schema`` and ``schema_name`` instead).
        config: Supplies ``deep_judgment_max_excerpts_per_attribute``,
            ``deep_judgment_fuzzy_match_threshold``,
            ``deep_judgment_excerpt_retry_attempts`` and the search flag.
        field_schema: The JSON schema the judge fills; derived from ``answer_cls``
            (``judge_json_schema``) when omitted. Its properties are the attributes.
        schema_name: Name of the schema sent to the judge; defaults to the
            class name.
        instructions: The user's extra instructions, added to all three stages.
        search: Search function for the search enhancement (the stage passes the
            configured provider's); required when ``deep_judgment_search_enabled``.

    Returns:
        The judge's values for the schema's properties, the ``deep_judgment``
        section, and the attributes left without excerpts.

    Raises:
        DeepJudgmentError: search is enabled without a search function, the schema
            has no properties, or neither ``field_schema`` nor a pydantic
            ``answer_cls`` is given.
        CheckReplyError: a stage's reply is malformed.
        ModelCallError, StructuredOutputError: from the judge, unchanged.
    """
    if config.deep_judgment_search_enabled and search is None:
        raise DeepJudgmentError(
            "deep_judgment_search_enabled is set but no search function was given "
            f"(configured tool: '{config.deep_judgment_search_tool}')"
        )
    schema = field_schema if field_schema is not None else _field_schema_of(answer_cls)
    properties: dict[str, Any] = schema.get("properties") or {}
    if not properties:
        raise DeepJudgmentError("the template has no fields for the judge to fill")
    descriptions = {name: str(prop.get("description", "")) for name, prop in properties.items()}

    if config.deep_judgment_excerpts_enabled:
        harvest = extract_excerpts(
            judge,
            question=question,
            response=response,
            descriptions=descriptions,
            max_excerpts=config.deep_judgment_max_excerpts_per_attribute,
            threshold=config.deep_judgment_fuzzy_match_threshold,
            retry_attempts=config.deep_judgment_excerpt_retry_attempts,
            instructions=instructions,
        )
        stages, calls = ["excerpts"], harvest.calls
    else:
        # reasoning_only (the original's mode): no excerpts, so none can be missing;
        # reasoning and parameters read the whole response instead.
        harvest = ExcerptHarvest()
        stages, calls = [], 0
    whole = None if config.deep_judgment_excerpts_enabled else response
    risk: dict[str, str] | None = None
    if config.deep_judgment_search_enabled and search is not None and whole is None:
        risk, assessment_calls = assess_hallucination_risk(
            judge, search, harvest.excerpts, instructions=instructions
        )
        calls += assessment_calls
        if risk is not None:
            stages.append("hallucination_assessment")

    reasoning = _reasoning(
        judge,
        question=question,
        descriptions=descriptions,
        excerpts=harvest.excerpts,
        instructions=instructions,
        response=whole,
    )
    calls += 1
    stages.append("reasoning")

    reply = judge.invoke_json(
        build_messages(
            PARAMETERS_SYSTEM,
            parameters_user(
                question=question,
                excerpts=harvest.excerpts,
                reasoning=reasoning,
                schema=schema,
                response=whole,
            ),
            instructions,
        ),
        stage=DEEP_JUDGMENT_STAGE,
        schema=schema,
        schema_name=schema_name or str(getattr(answer_cls, "__name__", "answer")),
    )
    calls += 1
    if not isinstance(reply, dict):
        raise CheckReplyError(
            f"expected a JSON object, got {type(reply).__name__}",
            stage=DEEP_JUDGMENT_STAGE,
            reply=reply,
        )
    stages.append("parameters")

    section = VerificationResultDeepJudgment(
        deep_judgment_enabled=True,
        deep_judgment_performed=True,
        deep_judgment_stages_completed=stages,
        deep_judgment_model_calls=calls,
        deep_judgment_excerpt_retry_count=harvest.retries,
        attributes_without_excerpts=list(harvest.without),
        extracted_excerpts=harvest.excerpts,
        attribute_reasoning=reasoning,
        deep_judgment_search_enabled=config.deep_judgment_search_enabled,
        hallucination_risk_assessment=risk,
    )
    parsed = {key: value for key, value in reply.items() if key in properties}
    return DeepJudgmentOutcome(
        parsed=parsed, section=section, attributes_without_excerpts=list(harvest.without)
    )
