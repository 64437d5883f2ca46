"""Prompt texts and reply schemas of the three deep-judgment stages (and the
optional hallucination assessment)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .prompting import dump_json, object_schema

__all__ = [
    "ASSESSMENT_SYSTEM",
    "CONFIDENCE_LEVELS",
    "EXCERPT_SYSTEM",
    "PARAMETERS_SYSTEM",
    "REASONING_SYSTEM",
    "RISK_LEVELS",
    "assessment_reply_schema",
    "assessment_user",
    "attribute_guide",
    "excerpt_reply_schema",
    "excerpt_user",
    "parameters_user",
    "reasoning_reply_schema",
    "reasoning_user",
]

CONFIDENCE_LEVELS = ("low", "medium", "high")
RISK_LEVELS = ("none", "low", "medium", "high")

EXCERPT_SYSTEM = """You collect EVIDENCE from an answer written by another AI model. \
For each attribute listed below, copy the passages of the answer that state or \
support the attribute's value.

Rules:
- Copy each excerpt VERBATIM, character for character, as it appears in the answer. \
Do not paraphrase, summarise, correct, translate or join separate passages. Excerpts \
are checked against the answer and rejected when they do not appear in it.
- Give at most {max_excerpts} excerpt(s) per attribute, the most informative first. \
Prefer one sentence or clause per excerpt.
- Rate each excerpt's confidence: "high" when it states the value directly, \
"medium" when the value follows from it with little interpretation, "low" when it \
is only indirect support.
- If the answer says nothing usable about an attribute (for example because it \
refuses to answer), return an empty list [] for it. Never invent evidence.

Attributes (name: what it captures):
{guide}

Reply with a JSON object that has one key per attribute, each holding a list of \
{{"text": ..., "confidence": ...}} objects."""

REASONING_SYSTEM = """You explain, attribute by attribute, what value an answer \
written by another AI model gives for each attribute of a structured template, \
based on the verbatim excerpts collected from that answer.

For each attribute, write a few sentences: which excerpts matter, how they map to \
the attribute (using its description), and what value follows. When an attribute \
has no excerpts, say so and explain what that implies (usually that the answer \
does not provide the value). Do not use outside knowledge to fill gaps and do not \
judge correctness.

Attributes (name: what it captures):
{guide}

Reply with a JSON object that has one key per attribute, each holding your \
reasoning as a string."""

PARAMETERS_SYSTEM = """You fill a structured template from an analysis of an \
answer written by another AI model. For each attribute you get the verbatim \
excerpts from the answer and the reasoning about what value they support. Set each \
field to the value the reasoning supports, in the type the schema asks for. Do not \
add information that is not in the excerpts or the reasoning. Reply with a JSON \
object matching the template schema."""

ASSESSMENT_SYSTEM = """You assess the hallucination risk of claims taken from an \
answer written by another AI model. Each claim comes with external search results. \
Rate each claim's risk: "none" when the search results clearly confirm it, "low" \
when they mostly support it, "medium" when they are inconclusive or only partly \
support it, "high" when they contradict it or offer no support at all. Reply with a \
JSON object with one key per claim id, each holding "hallucination_risk" and a \
one-sentence "justification"."""


def attribute_guide(descriptions: Mapping[str, str]) -> str:
    """One ``- name: description`` line per attribute."""
    return "\n".join(
        f"- {name}: {text}" if text else f"- {name}" for name, text in descriptions.items()
    )


def excerpt_reply_schema(attributes: Sequence[str]) -> dict[str, object]:
    """The excerpt stage's reply: attribute → list of ``{text, confidence}``.

    The per-attribute maximum is stated in the prompt and enforced by truncation,
    not by ``maxItems``: a schema violation would cost a whole re-ask.
    """
    item = object_schema(
        {
            "text": {"type": "string"},
            "confidence": {"type": "string", "enum": list(CONFIDENCE_LEVELS)},
        }
    )
    return object_schema(
        {name: {"type": "array", "items": item} for name in attributes}, title="AttributeExcerpts"
    )


def excerpt_user(
    *, question: str, response: str, attributes: Sequence[str], feedback: str | None
) -> str:
    """The excerpt stage's user message; ``feedback`` explains rejected excerpts."""
    text = (
        f"<question>\n{question}\n</question>\n\n<answer>\n{response}\n</answer>\n\n"
        f"Attributes to cover: {', '.join(attributes)}."
    )
    if feedback:
        text += f"\n\n<feedback>\n{feedback}\n</feedback>"
    return text + "\n\nReply with the JSON object of verbatim excerpts."


def reasoning_reply_schema(attributes: Sequence[str]) -> dict[str, object]:
    """The reasoning stage's reply: attribute → reasoning text."""
    return object_schema(
        {name: {"type": "string"} for name in attributes}, title="AttributeReasoning"
    )


def _excerpt_block(excerpts: Mapping[str, Sequence[Mapping[str, object]]]) -> str:
    lines: list[str] = []
    for name, items in excerpts.items():
        lines.append(f"[{name}]")
        if not items:
            lines.append("  (no excerpts found in the answer)")
        for item in items:
            lines.append(f'  - ({item["confidence"]} confidence) "{item["text"]}"')
            if item.get("search_results"):
                lines.append(f"    external search: {item['search_results']}")
    return "\n".join(lines)


def _evidence(excerpts: Mapping[str, Sequence[Mapping[str, object]]], response: str | None) -> str:
    """The excerpts, or (reasoning-only deep judgment) the whole answer."""
    if response is not None:
        return f"<answer>\n{response}\n</answer>"
    return f"<excerpts>\n{_excerpt_block(excerpts)}\n</excerpts>"


def reasoning_user(
    *,
    question: str,
    excerpts: Mapping[str, Sequence[Mapping[str, object]]],
    response: str | None = None,
) -> str:
    """The reasoning stage's user message: grounded in the excerpts, or in the
    whole ``response`` when excerpts are off (``reasoning_only``)."""
    return (
        f"<question>\n{question}\n</question>\n\n{_evidence(excerpts, response)}\n\n"
        "Reply with the JSON object of reasoning per attribute."
    )


def parameters_user(
    *,
    question: str,
    excerpts: Mapping[str, Sequence[Mapping[str, object]]],
    reasoning: Mapping[str, str],
    schema: Mapping[str, object],
    response: str | None = None,
) -> str:
    """The parameter stage's user message (``response``: as in :func:`reasoning_user`)."""
    analysis = "\n\n".join(f"[{name}]\n{text}" for name, text in reasoning.items())
    return (
        f"<question>\n{question}\n</question>\n\n{_evidence(excerpts, response)}\n\n"
        f"<reasoning>\n{analysis}\n</reasoning>\n\n"
        f"<template_schema>\n{dump_json(dict(schema))}\n</template_schema>\n\n"
        "Reply with the JSON object that fills the template."
    )


def assessment_reply_schema(claim_ids: Sequence[str]) -> dict[str, object]:
    """The assessment reply: claim id → ``{hallucination_risk, justification}``."""
    verdict = object_schema(
        {
            "hallucination_risk": {"type": "string", "enum": list(RISK_LEVELS)},
            "justification": {"type": "string"},
        }
    )
    return object_schema({cid: verdict for cid in claim_ids}, title="HallucinationAssessment")


def assessment_user(claims: Mapping[str, tuple[str, str]]) -> str:
    """The assessment user message; ``claims`` maps id → (excerpt, search results)."""
    blocks = [
        f'<claim id="{cid}">\n{text}\n<search_results>\n{found}\n</search_results>\n</claim>'
        for cid, (text, found) in claims.items()
    ]
    return "\n\n".join(blocks) + "\n\nReply with the JSON object of risks per claim id."
