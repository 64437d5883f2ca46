"""Prompts and JSON schemas of every judge call rubric evaluation makes.

Kept in one module so the wording of all rubric prompts can be reviewed together.
Each builder returns chat messages (``[system, user]``); user-supplied instructions
from :class:`~verifleet.schemas.PromptConfig` are appended to the system message
under their own heading, so they refine the task without replacing it.
"""

from __future__ import annotations

from collections.abc import Sequence

from verifleet.pipeline._llm_protocol import Message

from .protocols import LLMTraitLike, MetricTraitLike, NamedTrait, class_descriptions
from .values import score_bounds, trait_kind, value_schema

__all__ = [
    "CONFIDENCE_LEVELS",
    "concept_text",
    "excerpt_feedback",
    "excerpt_messages",
    "excerpt_schema",
    "metric_messages",
    "metric_schema",
    "presence_messages",
    "presence_schema",
    "reasoning_messages",
    "score_messages",
    "score_schema",
    "traits_messages",
    "traits_schema",
]

CONFIDENCE_LEVELS = ["low", "medium", "high"]


def _messages(system: str, user: str, instructions: Sequence[str | None]) -> list[Message]:
    extra = [text.strip() for text in instructions if text and text.strip()]
    if extra:
        system += "\n\nAdditional instructions from the user:\n" + "\n".join(extra)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _qa_block(question: str, response: str) -> str:
    return f"QUESTION:\n{question}\n\nRESPONSE TO EVALUATE:\n{response}"


def _describe_value(trait: LLMTraitLike) -> str:
    kind = trait_kind(trait)
    if kind == "boolean":
        return "true if the response meets the criterion, false otherwise"
    if kind == "literal":
        lines = [
            f'  - "{name}"' + (f": {desc}" if desc else "")
            for name, desc in class_descriptions(trait).items()
        ]
        return "exactly one of these class names:\n" + "\n".join(lines)
    low, high = score_bounds(trait)
    return f"an integer from {low} (worst) to {high} (best)"


def _describe_trait(trait: LLMTraitLike) -> str:
    criterion = (trait.description or trait.name).strip()
    return f'- "{trait.name}": {criterion}\n  Answer with {_describe_value(trait)}.'


# --- LLM traits (batch and sequential share one shape) --------------------------------


def traits_schema(traits: Sequence[LLMTraitLike]) -> dict[str, object]:
    """One property per trait, keyed by the trait's exact name."""
    return {
        "type": "object",
        "properties": {t.name: value_schema(t) for t in traits},
        "required": [t.name for t in traits],
        "additionalProperties": False,
    }


def traits_messages(
    question: str,
    response: str,
    traits: Sequence[LLMTraitLike],
    *,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask the judge to rate ``response`` on each of ``traits`` in one JSON object."""
    plural = len(traits) > 1
    system = (
        "You are an impartial evaluator. You judge a response against "
        + ("several quality criteria" if plural else "one quality criterion")
        + ". Judge only what the response says; do not reward length or confident tone. "
        "Return a JSON object whose keys are the exact criterion names given."
    )
    criteria = "\n".join(_describe_trait(t) for t in traits)
    user = f"{_qa_block(question, response)}\n\nCRITERIA:\n{criteria}"
    return _messages(system, user, instructions)


# --- metric traits ----------------------------------------------------------------------


def metric_schema(trait: MetricTraitLike) -> dict[str, object]:
    """Confusion buckets as string lists (``tn`` only in ``full_matrix`` mode)."""
    buckets = ["tp", "fn", "fp"] + (["tn"] if trait.evaluation_mode == "full_matrix" else [])
    return {
        "type": "object",
        "properties": {b: {"type": "array", "items": {"type": "string"}} for b in buckets},
        "required": buckets,
        "additionalProperties": False,
    }


def metric_messages(
    question: str,
    response: str,
    trait: MetricTraitLike,
    *,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask the judge to sort the trait's instructions into confusion buckets."""
    expected = "\n".join(f"  {i}. {text}" for i, text in enumerate(trait.tp_instructions, 1))
    full = trait.evaluation_mode == "full_matrix"
    system = (
        "You are an impartial evaluator that classifies the content of a response "
        "against a checklist and returns a JSON object of lists.\n"
        '- "tp": expected items the response does contain\n'
        '- "fn": expected items the response misses\n'
    )
    if full:
        forbidden = "\n".join(f"  {i}. {text}" for i, text in enumerate(trait.tn_instructions, 1))
        system += (
            '- "fp": items that should be absent but the response contains\n'
            '- "tn": items that should be absent and the response indeed omits\n'
        )
        checklist = f"EXPECTED ITEMS:\n{expected}\n\nITEMS THAT SHOULD BE ABSENT:\n{forbidden}"
    else:
        system += (
            '- "fp": content the response presents as relevant that matches no expected item\n'
        )
        checklist = f"EXPECTED ITEMS:\n{expected}"
    system += "Use short phrases; list each item at most once; use empty lists when nothing fits."
    about = f"\n\nWHAT IS MEASURED: {trait.description}" if trait.description else ""
    user = f"{_qa_block(question, response)}{about}\n\n{checklist}"
    return _messages(system, user, instructions)


# --- dynamic rubric presence check -----------------------------------------------------


def presence_schema(names: Sequence[str]) -> dict[str, object]:
    """One boolean per concept, keyed by trait name."""
    return {
        "type": "object",
        "properties": {n: {"type": "boolean"} for n in names},
        "required": list(names),
        "additionalProperties": False,
    }


def concept_text(trait: NamedTrait) -> str:
    """The concept a dynamic trait is about: its summary, else its description."""
    summary = getattr(trait, "summary", None)
    return str(summary or trait.description or trait.name).strip()


def presence_messages(
    question: str,
    response: str,
    traits: Sequence[NamedTrait],
    *,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask whether each trait's concept appears in the response at all."""
    system = (
        "You decide which concepts a response actually discusses. For each concept, "
        "answer true if the response addresses it (even briefly or critically) and false "
        "if it does not come up. Do not judge quality. Return a JSON object keyed by the "
        "exact concept names."
    )
    concepts = "\n".join(f'- "{t.name}": {concept_text(t)}' for t in traits)
    user = f"{_qa_block(question, response)}\n\nCONCEPTS:\n{concepts}"
    return _messages(system, user, instructions)


# --- deep judgment of one trait --------------------------------------------------------


def excerpt_schema(max_excerpts: int) -> dict[str, object]:
    """A list of verbatim excerpts with a confidence level each."""
    return {
        "type": "object",
        "properties": {
            "excerpts": {
                "type": "array",
                "maxItems": max_excerpts,
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "confidence": {"type": "string", "enum": CONFIDENCE_LEVELS},
                    },
                    "required": ["text", "confidence"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["excerpts"],
        "additionalProperties": False,
    }


def excerpt_messages(
    response: str,
    trait: LLMTraitLike,
    *,
    max_excerpts: int,
    feedback: str | None,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask for verbatim passages of ``response`` that bear on ``trait``.

    ``feedback`` (on a retry) tells the judge why its previous excerpts were refused.
    """
    system = (
        "You collect evidence. Copy passages from the response WORD FOR WORD that show "
        "whether it meets the criterion, for or against. Never paraphrase, merge or "
        f"invent text. Return at most {max_excerpts} excerpts, each with a confidence "
        "level (low, medium, high) for how strongly it bears on the criterion."
    )
    user = (
        f"CRITERION ({trait.name}): {(trait.description or trait.name).strip()}\n\n"
        f"RESPONSE:\n{response}"
    )
    if feedback:
        user += f"\n\nYOUR PREVIOUS ATTEMPT WAS REJECTED:\n{feedback}"
    return _messages(system, user, instructions)


def excerpt_feedback(rejected: Sequence[tuple[str, float]], threshold: float) -> str:
    """Retry feedback naming each refused excerpt and its best similarity."""
    if not rejected:
        return (
            "You returned no excerpts. Quote at least one passage copied exactly from the response."
        )
    lines = [f'- "{text}" (similarity {score:.2f})' for text, score in rejected]
    return (
        f"These excerpts do not appear in the response (required similarity "
        f"{threshold:.2f}):\n" + "\n".join(lines) + "\nCopy passages exactly as written."
    )


def reasoning_messages(
    question: str,
    response: str,
    trait: LLMTraitLike,
    *,
    excerpts: Sequence[dict[str, object]] | None,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask for a short argument about ``trait``, grounded in the excerpts when given."""
    system = (
        "You are an impartial evaluator. Explain in a few sentences how well the response "
        "meets the criterion. Cite the evidence; do not give a final score yet."
    )
    user = (
        f"QUESTION:\n{question}\n\nCRITERION ({trait.name}): "
        f"{(trait.description or trait.name).strip()}\n"
        f"The final verdict will be {_describe_value(trait)}.\n\n"
    )
    if excerpts is None:
        user += f"RESPONSE:\n{response}"
    else:
        quoted = "\n".join(
            f'- "{e.get("text", "")}" (confidence: {e.get("confidence", "medium")})'
            for e in excerpts
        )
        user += f"EVIDENCE (verbatim excerpts of the response):\n{quoted}"
    return _messages(system, user, instructions)


def score_schema(trait: LLMTraitLike) -> dict[str, object]:
    """``{"score": <the trait's value>}``."""
    return {
        "type": "object",
        "properties": {"score": value_schema(trait)},
        "required": ["score"],
        "additionalProperties": False,
    }


def score_messages(
    trait: LLMTraitLike,
    reasoning: str,
    *,
    instructions: Sequence[str | None] = (),
) -> list[Message]:
    """Ask for the final value of ``trait`` that follows from ``reasoning``."""
    system = (
        "Turn an evaluator's reasoning into its final verdict. Return only the JSON "
        'object with the verdict as "score"; do not re-evaluate.'
    )
    user = (
        f"CRITERION ({trait.name}): {(trait.description or trait.name).strip()}\n"
        f"Verdict format: {_describe_value(trait)}.\n\nREASONING:\n{reasoning}"
    )
    return _messages(system, user, instructions)
