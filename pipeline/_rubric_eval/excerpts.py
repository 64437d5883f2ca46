"""Excerpt validation: an excerpt counts only if it really occurs in the response.

Similarity is rapidfuzz's ``partial_ratio`` (best alignment of the excerpt inside
the response, 0.0-1.0) after case folding and whitespace collapsing, so line
breaks and capitalisation do not reject a faithful quote while paraphrases and
invented text do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz import fuzz

from .prompts import CONFIDENCE_LEVELS

__all__ = ["excerpt_similarity", "split_excerpts"]

_SPACES = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def excerpt_similarity(excerpt: str, text: str) -> float:
    """How well ``excerpt`` matches some passage of ``text`` (1.0 = verbatim)."""
    needle, haystack = _normalise(excerpt), _normalise(text)
    if not needle:
        return 0.0
    if needle in haystack:
        return 1.0
    return float(fuzz.partial_ratio(needle, haystack)) / 100.0


def split_excerpts(
    raw: object, text: str, threshold: float
) -> tuple[list[dict[str, object]], list[tuple[str, float]]]:
    """Validate the judge's excerpt list against ``text``.

    Returns:
        ``(accepted, rejected)``: accepted excerpts as
        ``{"text", "confidence", "similarity_score"}`` dicts, and ``(text, score)``
        of each refused one (for the retry feedback). Malformed entries are refused
        with score 0.0.
    """
    accepted: list[dict[str, object]] = []
    rejected: list[tuple[str, float]] = []
    items: Sequence[object] = raw if isinstance(raw, list) else []
    for item in items:
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            rejected.append((str(item), 0.0))
            continue
        score = excerpt_similarity(item["text"], text)
        if score < threshold:
            rejected.append((item["text"], score))
            continue
        confidence = str(item.get("confidence", "medium")).lower()
        accepted.append(
            {
                "text": item["text"],
                "confidence": confidence if confidence in CONFIDENCE_LEVELS else "medium",
                "similarity_score": round(score, 4),
            }
        )
    return accepted, rejected
