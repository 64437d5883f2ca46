"""Prompts of agentic traits (investigation, then score extraction) and of
``template``-kind LLM traits."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from verifleet.pipeline._llm_protocol import Message

from .prompts import _describe_value, _messages, _qa_block

__all__ = [
    "extraction_messages",
    "investigation_messages",
    "template_extraction_messages",
    "template_trait_messages",
]


def investigation_messages(
    trait: Any, question: str, response: str, *, has_tools: bool
) -> list[Message]:
    """What the investigating agent of an agentic ``trait`` is told.

    ``context_mode`` decides whether the answer's trace is shown
    (``trace_only``, ``trace_and_workspace``) or only the question
    (``workspace_only``: the agent must find what it needs with its tools).
    """
    tools = (
        "Use your tools to check what the response claims; do not trust it on its word."
        if has_tools
        else "You have no tools: judge from the response text supplied below."
    )
    if str(trait.kind) == "template":
        # As the original: the agent ends with findings in the trait's own schema.
        schema = json.dumps(trait.template_schema, indent=2)
        conclusion = (
            "When you are done, summarise your findings. End your final response with a "
            "JSON object matching this schema. Do not wrap the schema in another object "
            f"and do not include placeholder values for missing fields.\n{schema}"
        )
    else:
        conclusion = (
            "When you are done, summarise your findings and state your conclusion; it "
            f"will be turned into {_describe_value(trait)}."
        )
    system = (
        "You are an evaluation agent investigating the quality of an LLM response.\n"
        f"Your task: {trait.description.strip()}\n\n{tools}\n\n{conclusion}"
    )
    user = f"QUESTION:\n{question}"
    if trait.context_mode != "workspace_only":
        user += f"\n\n--- ANSWER TRACE TO EVALUATE ---\n{response}\n--- END OF TRACE ---"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def extraction_messages(
    trait: Any,
    question: str,
    investigation: str,
    *,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask the judge for the trait's value that the investigation concluded."""
    system = (
        "Turn an evaluation agent's investigation into its final verdict. Return a JSON "
        "object whose only key is the criterion name; do not re-evaluate."
    )
    user = (
        f"QUESTION:\n{question}\n\nCRITERION ({trait.name}): {trait.description.strip()}\n"
        f"Verdict format: {_describe_value(trait)}.\n\nINVESTIGATION:\n{investigation}"
    )
    return _messages(system, user, instructions)


def template_trait_messages(
    trait: Any,
    question: str,
    response: str,
    *,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask the judge to fill a ``template``-kind trait's schema about ``response``."""
    system = (
        "You are an impartial evaluator. Assess the response against the criterion and "
        "fill in every field of the JSON schema given. Judge only what the response says."
    )
    schema = json.dumps(trait.template_schema, indent=2, sort_keys=True)
    user = (
        f"{_qa_block(question, response)}\n\nCRITERION ({trait.name}): "
        f"{(trait.description or trait.name).strip()}\n\nJSON SCHEMA TO FILL:\n{schema}"
    )
    return _messages(system, user, instructions)


def template_extraction_messages(
    trait: Any,
    question: str,
    investigation: str,
    *,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask the judge to fill a ``template``-kind agentic trait's schema from the
    investigation (when it did not end with a JSON object that fits)."""
    system = (
        "You are extracting structured findings from an investigation. Based on the "
        "investigation output below, fill in every field of the requested format with "
        "evidence from the investigation."
    )
    schema = json.dumps(trait.template_schema, indent=2, sort_keys=True)
    user = (
        f"QUESTION:\n{question}\n\nCRITERION ({trait.name}): "
        f"{(trait.description or trait.name).strip()}\n\nJSON SCHEMA TO FILL:\n{schema}"
        f"\n\nINVESTIGATION:\n{investigation}"
    )
    return _messages(system, user, instructions)
