"""Agentic traits (investigate, then extract) and LLM traits of kind ``template``.

An agentic trait is scored in two steps, as in the original: an investigating
agent with its own tools and turn limit examines the answer (the caller supplies
it as an :data:`Investigate` function), then the judge turns the investigation's
text into the trait's value (boolean, score or literal class index, validated like
an LLM trait's). The investigation text is kept per trait. An agentic trait of
kind ``template`` is told to end its investigation with a JSON object of its
schema; that object is its findings when it fits, else the judge fills the schema
from the investigation; each field is recorded as ``"<trait>.<field>"`` with any
JSON value, and how the findings were found per trait (``method``
``local_json``, ``parser_after_local_json_failed`` or ``failed``), as the
original records them.

A ``template``-kind LLM trait gets one judge call with its own JSON schema; the
reply is flattened to ``"<trait>.<field>"`` keys as the original does. The result
holds booleans and integers as scores and strings as labels; other field values
(numbers with a fraction, lists, objects) have no place in the result's typed
maps and are reported as failures.

Failure behaviour: a trait that cannot be scored (investigation error or timeout,
a judge reply that never fits) is named in ``failures`` with the reason and
never costs the other traits; :class:`ModelCallError` from the judge propagates.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifleet.pipeline._llm import first_object, schema_errors
from verifleet.pipeline._llm_protocol import ChatCaller, Message, StructuredOutputError

from .llm_traits import STAGE, LLMTraitScores, record_value
from .prompts import traits_schema
from .prompts_agentic import (
    extraction_messages,
    investigation_messages,
    template_extraction_messages,
    template_trait_messages,
)

__all__ = [
    "AgenticScores",
    "Investigate",
    "evaluate_agentic_traits",
    "evaluate_template_traits",
]

logger = logging.getLogger(__name__)

Investigate = Callable[[Any, list[Message]], str]
"""Runs the investigation of an agentic trait: ``(trait, messages) -> text``
(the investigation's trace as text). Raises when the investigation fails.
``investigate.has_tools(trait)`` (an attribute, optional) says whether the
trait's agent gets tools; assumed True when absent."""


@dataclass
class AgenticScores:
    """Scores and investigation texts of agentic traits.

    Attributes:
        scores: ``{name: bool | int}``.
        traces: ``{name: investigation text}`` (kept even when extraction failed).
        failures: ``{name: reason}`` of traits left unscored.
        model_calls: Judge calls made for extraction (the investigations' own
            calls are in the usage metadata).
    """

    scores: dict[str, Any] = field(default_factory=dict)
    traces: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    model_calls: int = 0
    extraction: dict[str, dict[str, str | None]] = field(default_factory=dict)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, TimeoutError):
        return f"timed out ({text})" if text else "timed out"
    return text or type(exc).__name__


def evaluate_agentic_traits(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    traits: Sequence[Any],
    investigate: Investigate,
    instructions: Sequence[str | None] = (),
) -> AgenticScores:
    """Investigate and score each agentic trait (see the module docstring).

    Raises:
        ModelCallError: a judge extraction call failed for good.
    """
    out = AgenticScores()
    has_tools = getattr(investigate, "has_tools", None)
    for trait in traits:
        tools = bool(has_tools(trait)) if callable(has_tools) else True
        messages = investigation_messages(trait, question, response, has_tools=tools)
        try:
            text = investigate(trait, messages)
        except Exception as exc:
            reason = f"investigation failed: {_describe(exc)}"
            logger.warning("agentic trait '%s' left unscored: %s", trait.name, reason)
            out.failures[trait.name] = reason
            continue
        out.traces[trait.name] = text
        if str(trait.kind) == "template":
            _extract_template(judge, trait, question, text, out, instructions)
            continue
        out.model_calls += 1
        try:
            reply = judge.invoke_json(
                extraction_messages(trait, question, text, instructions=instructions),
                stage=STAGE,
                schema=traits_schema([trait]),
                schema_name="agentic_trait_score",
            )
        except StructuredOutputError as exc:
            out.failures[trait.name] = f"no valid verdict extracted from the investigation: {exc}"
            continue
        scored = LLMTraitScores()
        record_value(scored, trait, reply.get(trait.name))
        out.scores.update(scored.scores)
        out.failures.update(scored.failures)
    return out


def _local_findings(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The last JSON object in the investigation that fits ``schema`` (the agent
    was told to end with one).

    Raises:
        ValueError: none fits (the message says what the last candidate lacked).
    """
    problem = "no JSON object in the investigation"
    for start in reversed([i for i, char in enumerate(text) if char == "{"]):
        try:
            value = json.loads(first_object(text[start:]) or "")
        except json.JSONDecodeError:
            continue
        if not isinstance(value, dict):
            continue
        errors = schema_errors(value, schema)
        if not errors:
            return value
        if problem.startswith("no JSON"):
            problem = "; ".join(errors)
    raise ValueError(problem)


def _extract_template(
    judge: ChatCaller,
    trait: Any,
    question: str,
    text: str,
    out: AgenticScores,
    instructions: Sequence[str | None],
) -> None:
    """Score a ``template``-kind agentic trait as the original does: the JSON
    object the investigation ended with when it fits the schema, else the judge
    fills the schema from the investigation. Each field is recorded as
    ``"<trait>.<field>"``; how it was found goes to ``out.extraction``."""
    schema = dict(trait.template_schema or {})
    try:
        findings = _local_findings(text, schema)
    except ValueError as exc:
        local_error = str(exc)
    else:
        out.extraction[trait.name] = {
            "method": "local_json",
            "local_json_error": None,
            "parser_error": None,
        }
        out.scores.update({f"{trait.name}.{k}": v for k, v in findings.items()})
        return
    out.model_calls += 1
    try:
        findings = judge.invoke_json(
            template_extraction_messages(trait, question, text, instructions=instructions),
            stage=STAGE,
            schema=schema,
            schema_name=f"{trait.name}_template",
        )
    except StructuredOutputError as exc:
        out.extraction[trait.name] = {
            "method": "failed",
            "local_json_error": local_error,
            "parser_error": str(exc),
        }
        out.failures[trait.name] = f"no findings extracted from the investigation: {exc}"
        return
    out.extraction[trait.name] = {
        "method": "parser_after_local_json_failed",
        "local_json_error": local_error,
        "parser_error": None,
    }
    out.scores.update({f"{trait.name}.{k}": v for k, v in findings.items()})


def evaluate_template_traits(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    traits: Sequence[Any],
    into: LLMTraitScores,
    instructions: Sequence[str | None] = (),
) -> None:
    """Score ``template``-kind LLM traits into ``into`` (one judge call each).

    Raises:
        ModelCallError: a judge call failed for good.
    """
    for trait in traits:
        into.model_calls += 1
        try:
            reply = judge.invoke_json(
                template_trait_messages(trait, question, response, instructions=instructions),
                stage=STAGE,
                schema=dict(trait.template_schema),
                schema_name=f"{trait.name}_template",
            )
        except StructuredOutputError as exc:
            into.failures[trait.name] = f"the judge never filled the template: {exc}"
            continue
        for key, value in reply.items():
            name = f"{trait.name}.{key}"
            if isinstance(value, bool | int):
                into.scores[name] = value
            elif isinstance(value, str):
                into.labels[name] = value
            else:
                reason = (
                    f"field value of type {type(value).__name__} has no place in the "
                    "result's trait scores (booleans, integers) or labels (strings)"
                )
                logger.warning("template trait field '%s' not recorded: %s", name, reason)
                into.failures[name] = reason
