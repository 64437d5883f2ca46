"""Template regex checks (``self.regex``) run against the raw response.

A template declares named checks, usually in ``ground_truth()``::

    self.regex = {"citations": {"pattern": r"\\[\\d+\\]", "expected": 3, "match_type": "count"}}

Match types (matches come from ``re.findall``, so a pattern with one capture group
yields the group's text):

- ``exact``: exactly one match, equal to ``expected`` (a string);
- ``contains``: ``expected`` is among the matches;
- ``count``: the number of matches equals ``expected`` (an int);
- ``all``: every item of ``expected`` (a list) is among the matches.

An optional ``flags`` list (``["IGNORECASE"]``) or ``case_sensitive: False`` sets
regex flags.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["MATCH_TYPES", "RegexOutcome", "run_regex_checks"]

MATCH_TYPES: frozenset[str] = frozenset({"exact", "contains", "count", "all"})


class RegexOutcome(BaseModel):
    """What the regex checks of one template found in one response.

    ``overall_success`` is None when the template declares no checks
    (``performed`` False), so "no checks" is not mistaken for "checks passed".
    """

    performed: bool = False
    results: dict[str, bool] = Field(default_factory=dict)
    details: dict[str, dict[str, object]] = Field(default_factory=dict)
    overall_success: bool | None = None
    extraction_results: dict[str, object] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when no check ran or every check passed (what ``verify_result`` ANDs)."""
        return self.overall_success is not False


def _flags(spec: Mapping[str, Any]) -> int:
    value = 0
    for name in spec.get("flags") or []:
        flag = getattr(re, str(name).upper(), None)
        if not isinstance(flag, re.RegexFlag):
            raise ValueError(f"unknown regex flag {name!r}")
        value |= flag
    if spec.get("case_sensitive") is False:
        value |= re.IGNORECASE
    return value


def _judge(match_type: str, expected: object, matches: list[object]) -> tuple[bool, str]:
    """Apply one match type; returns (passed, reason)."""
    if match_type == "exact":
        ok = len(matches) == 1 and matches[0] == expected
        return ok, (
            "single exact match"
            if ok
            else f"expected exactly one match equal to {expected!r}, got {matches!r}"
        )
    if match_type == "contains":
        ok = expected in matches
        return ok, f"{expected!r} {'found' if ok else 'not found'} among {len(matches)} matches"
    if match_type == "count":
        if isinstance(expected, bool) or not isinstance(expected, int):
            return False, f"'count' needs an integer expected value, got {expected!r}"
        ok = len(matches) == expected
        return ok, f"expected {expected} matches, got {len(matches)}"
    if isinstance(expected, str) or not isinstance(expected, list | tuple | set | frozenset):
        return False, f"'all' needs a list of expected values, got {expected!r}"
    missing = [item for item in expected if item not in matches]
    return not missing, ("all expected items found" if not missing else f"missing {missing!r}")


def run_regex_checks(checks: Mapping[str, object] | None, text: str) -> RegexOutcome:
    """Run every declared check on ``text``.

    A malformed check (not a mapping, unknown ``match_type``, invalid pattern) fails
    that check with an ``error`` detail; it never raises.
    """
    if not checks:
        return RegexOutcome()
    outcome = RegexOutcome(performed=True)
    for name, spec in checks.items():
        key = str(name)
        if not isinstance(spec, Mapping):
            outcome.results[key] = False
            outcome.details[key] = {"error": f"check must be a dict, got {type(spec).__name__}"}
            continue
        pattern = spec.get("pattern", "")
        expected = spec.get("expected")
        match_type = spec.get("match_type", "exact")
        detail: dict[str, object] = {
            "pattern": pattern,
            "expected": expected,
            "match_type": match_type,
        }
        try:
            if match_type not in MATCH_TYPES:
                raise ValueError(f"unknown match_type {match_type!r} (use {sorted(MATCH_TYPES)})")
            matches = re.findall(str(pattern), text, _flags(spec))
        except (re.error, ValueError) as exc:
            detail["error"] = str(exc)
            outcome.results[key] = False
            outcome.details[key] = detail
            continue
        ok, reason = _judge(match_type, expected, matches)
        detail.update(
            matches_found=matches,
            match_count=len(matches),
            **{"success_reason" if ok else "failure_reason": reason},
        )
        outcome.results[key] = ok
        outcome.details[key] = detail
        outcome.extraction_results[key] = matches
    outcome.overall_success = all(outcome.results.values())
    return outcome
