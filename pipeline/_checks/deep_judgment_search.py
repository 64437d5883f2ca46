"""Optional deep-judgment search enhancement: external evidence for each excerpt
and a judge's hallucination-risk rating.

The search function comes from a provider (:mod:`verifleet.pipeline._search`:
Tavily on the web, or BM25 over a local document collection, offline). A search
that fails is logged and the assessment skipped; the parse goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from verifleet.pipeline._llm_protocol import ChatCaller

from .deep_judgment_excerpts import DEEP_JUDGMENT_STAGE
from .deep_judgment_prompts import (
    ASSESSMENT_SYSTEM,
    RISK_LEVELS,
    assessment_reply_schema,
    assessment_user,
)
from .errors import CheckReplyError, DeepJudgmentError
from .prompting import build_messages, validate_reply

__all__ = ["SearchFunction", "assess_hallucination_risk"]

log = logging.getLogger(__name__)

#: Takes excerpt texts, returns one block of search-result text per excerpt.
SearchFunction = Callable[[Sequence[str]], Sequence[str]]


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    hallucination_risk: Literal["none", "low", "medium", "high"]
    justification: str


def _run_search(search: SearchFunction, queries: list[str]) -> list[str] | None:
    try:
        found = list(search(queries))
    except Exception as exc:  # a failing external service must not sink the parse
        log.warning("deep judgment search failed, continuing without it: %s", exc)
        return None
    if len(found) != len(queries):
        raise DeepJudgmentError(
            f"search function returned {len(found)} results for {len(queries)} excerpts"
        )
    return [str(item) for item in found]


def assess_hallucination_risk(
    judge: ChatCaller,
    search: SearchFunction,
    excerpts: dict[str, list[dict[str, Any]]],
    *,
    instructions: str | None = None,
) -> tuple[dict[str, str] | None, int]:
    """Search every excerpt, have the judge rate each, and rate each attribute.

    Excerpt dicts gain ``search_results``, ``hallucination_risk`` and
    ``hallucination_justification`` in place. An attribute's risk is the highest
    risk among its excerpts, ``"high"`` when it has none (nothing corroborates it).

    Returns:
        (attribute → risk, judge calls made); the map is None when there was nothing
        to search or the search function failed (logged as a warning).

    Raises:
        DeepJudgmentError: the search function returned the wrong number of results.
        CheckReplyError: the judge's rating is malformed or misses an excerpt.
        ModelCallError, StructuredOutputError: from the judge, unchanged.
    """
    items = [item for group in excerpts.values() for item in group]
    if not items:
        return None, 0
    found = _run_search(search, [item["text"] for item in items])
    if found is None:
        return None, 0
    claims = {
        f"claim_{i}": (item["text"], result)
        for i, (item, result) in enumerate(zip(items, found, strict=True))
    }
    reply = judge.invoke_json(
        build_messages(ASSESSMENT_SYSTEM, assessment_user(claims), instructions),
        stage=DEEP_JUDGMENT_STAGE,
        schema=assessment_reply_schema(list(claims)),
        schema_name="hallucination_assessment",
    )
    if not isinstance(reply, dict) or any(cid not in reply for cid in claims):
        raise CheckReplyError(
            "a rating per claim id is required", stage=DEEP_JUDGMENT_STAGE, reply=reply
        )
    for (cid, (_, result)), item in zip(claims.items(), items, strict=True):
        verdict = validate_reply(_Verdict, reply[cid], stage=DEEP_JUDGMENT_STAGE)
        item.update(
            search_results=result,
            hallucination_risk=verdict.hallucination_risk,
            hallucination_justification=verdict.justification,
        )
    risk = {
        name: max(
            (item["hallucination_risk"] for item in group), key=RISK_LEVELS.index, default="high"
        )
        for name, group in excerpts.items()
    }
    return risk, 1
