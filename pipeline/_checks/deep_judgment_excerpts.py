"""Deep judgment stage 1: verbatim excerpts per attribute, checked against the
response by fuzzy matching, with re-asks that tell the judge what was rejected."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz

from verifleet.pipeline._llm_protocol import ChatCaller

from .deep_judgment_prompts import (
    EXCERPT_SYSTEM,
    attribute_guide,
    excerpt_reply_schema,
    excerpt_user,
)
from .errors import CheckReplyError
from .prompting import build_messages, validate_reply

__all__ = ["DEEP_JUDGMENT_STAGE", "ExcerptHarvest", "excerpt_similarity", "extract_excerpts"]

DEEP_JUDGMENT_STAGE = "deep_judgment"

_QUOTES = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)
# Judges wrap quotes in quotation marks or ellipses that are not part of the text.
_WRAPPING = " \t\n\"'`.\u2026"


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return re.sub(r"\s+", " ", text).strip()


def excerpt_similarity(excerpt: str, response: str) -> float:
    """How well ``excerpt`` occurs in ``response``, from 0 (absent) to 1 (verbatim).

    The score is rapidfuzz's best-window alignment (``partial_ratio``) of the
    excerpt against the response, after case, whitespace, typographic quotes and
    wrapping quotation marks or ellipses are normalised. An excerpt longer than the
    response is compared whole (``ratio``), so padding a response with invented
    text cannot score as a match.
    """
    needle = _normalise(excerpt).strip(_WRAPPING)
    haystack = _normalise(response)
    if not needle or not haystack:
        return 0.0
    scorer = fuzz.ratio if len(needle) > len(haystack) else fuzz.partial_ratio
    return round(float(scorer(needle, haystack)) / 100.0, 4)


class _Excerpt(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str
    confidence: Literal["low", "medium", "high"]


class _Rejected(BaseModel):
    text: str
    score: float


@dataclass
class ExcerptHarvest:
    """What stage 1 produced.

    Attributes:
        excerpts: Attribute → accepted excerpts (``text``, ``confidence``,
            ``similarity_score``), in attribute order; ``[]`` when none.
        without: Attributes left without any accepted excerpt.
        calls: Judge calls made.
        retries: Re-asks made (calls after the first).
    """

    excerpts: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    without: list[str] = field(default_factory=list)
    calls: int = 0
    retries: int = 0


def _parse_reply(reply: object, attributes: Sequence[str]) -> dict[str, list[_Excerpt]]:
    if not isinstance(reply, dict):
        raise CheckReplyError(
            f"expected a JSON object, got {type(reply).__name__}",
            stage=DEEP_JUDGMENT_STAGE,
            reply=reply,
        )
    missing = [name for name in attributes if name not in reply]
    if missing:
        raise CheckReplyError(
            f"no excerpt list for attribute(s) {', '.join(missing)}",
            stage=DEEP_JUDGMENT_STAGE,
            reply=reply,
        )
    parsed: dict[str, list[_Excerpt]] = {}
    for name in attributes:
        items = reply[name]
        if not isinstance(items, list):
            raise CheckReplyError(
                f"{name}: expected a list of excerpts", stage=DEEP_JUDGMENT_STAGE, reply=reply
            )
        parsed[name] = [validate_reply(_Excerpt, item, stage=DEEP_JUDGMENT_STAGE) for item in items]
    return parsed


def _screen(
    proposed: list[_Excerpt], response: str, *, threshold: float, limit: int
) -> tuple[list[dict[str, object]], list[_Rejected]]:
    accepted: list[dict[str, object]] = []
    rejected: list[_Rejected] = []
    seen: set[str] = set()
    for item in proposed:
        score = excerpt_similarity(item.text, response)
        if score < threshold or not item.text.strip():
            rejected.append(_Rejected(text=item.text, score=score))
            continue
        key = _normalise(item.text)
        if key in seen or len(accepted) >= limit:
            continue
        seen.add(key)
        accepted.append(
            {"text": item.text, "confidence": item.confidence, "similarity_score": score}
        )
    return accepted, rejected


def _feedback(rejections: Mapping[str, list[_Rejected]], threshold: float) -> str:
    lines = [
        "Your previous excerpts for the attributes below were rejected because they do "
        f"not appear verbatim in the answer (a match of at least {threshold:.0%} is needed):"
    ]
    for name, items in rejections.items():
        for item in items:
            lines.append(f'- {name}: "{item.text}" (best match {item.score:.0%})')
    lines.append(
        "Copy the supporting text for these attributes exactly as it is written in the "
        "answer, or return [] for an attribute if the answer contains nothing about it."
    )
    return "\n".join(lines)


def extract_excerpts(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    descriptions: Mapping[str, str],
    max_excerpts: int,
    threshold: float,
    retry_attempts: int,
    instructions: str | None = None,
) -> ExcerptHarvest:
    """Collect verbatim excerpts for every attribute in ``descriptions``.

    Each proposed excerpt is scored with :func:`excerpt_similarity`; those below
    ``threshold`` are dropped, and at most ``max_excerpts`` are kept per attribute.
    An attribute whose proposals were ALL dropped is asked again (only those
    attributes, up to ``retry_attempts`` times) with feedback quoting the rejected
    text. An attribute for which the judge returns ``[]`` is final: the judge says
    the answer holds no evidence for it (e.g. a refusal), and re-asking would only
    invite invented quotes.

    Raises:
        CheckReplyError: a reply lacks an attribute or has malformed excerpts.
        ModelCallError, StructuredOutputError: from the judge, unchanged.
    """
    harvest = ExcerptHarvest()
    system = EXCERPT_SYSTEM.format(max_excerpts=max_excerpts, guide=attribute_guide(descriptions))
    pending = list(descriptions)
    feedback: str | None = None
    found: dict[str, list[dict[str, object]]] = {}
    while pending:
        reply = judge.invoke_json(
            build_messages(
                system,
                excerpt_user(
                    question=question, response=response, attributes=pending, feedback=feedback
                ),
                instructions,
            ),
            stage=DEEP_JUDGMENT_STAGE,
            schema=excerpt_reply_schema(pending),
            schema_name="attribute_excerpts",
        )
        harvest.calls += 1
        rejections: dict[str, list[_Rejected]] = {}
        for name, proposed in _parse_reply(reply, pending).items():
            accepted, rejected = _screen(
                proposed, response, threshold=threshold, limit=max_excerpts
            )
            found[name] = accepted
            if not accepted and rejected:
                rejections[name] = rejected
        pending = list(rejections)
        if not pending or harvest.retries >= retry_attempts:
            break
        harvest.retries += 1
        feedback = _feedback(rejections, threshold)
    harvest.excerpts = {name: found.get(name, []) for name in descriptions}
    harvest.without = [name for name, items in harvest.excerpts.items() if not items]
    return harvest
