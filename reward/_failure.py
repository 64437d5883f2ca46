"""Infrastructure failures: a request that could not be verified is not a score.

A judge that could not be reached, a sandbox executor that did not start or
died, a deadline that cut the judge calls: none of these says anything about the
response. A trainer that reads a reward of 0.0 for them learns from noise, so
such a request gets no reward (``reward: null`` or an error status) and a
:class:`Failure` naming the kind. Content failures (a judge reply that never
matched its schema, a template refusing the parsed answer) stay verdicts and get
the config's ``error_reward``.

During a scoring (:func:`recording`) the judge callers and the sandbox wrapper
:func:`note` what went wrong; afterwards :func:`infrastructure_failure` turns
what was noted into the request's :class:`Failure`, if any.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict

from verifleet.pipeline import EndpointReplyError, ModelCallError

__all__ = [
    "FAILURE_KINDS",
    "Failure",
    "FailureKind",
    "classify_model_error",
    "first_failure",
    "note",
    "noted",
    "recording",
]

FailureKind = Literal["judge_unreachable", "judge_refused", "executor", "timeout"]

#: Each kind and what it means (the docs' table and the messages say the same).
FAILURE_KINDS: dict[str, str] = {
    "judge_unreachable": "the judge could not be reached or kept failing (connection "
    "errors, timeouts, 429 or 5xx replies) through every retry",
    "judge_refused": "the judge refused the call (a 4xx other than 429: bad key, "
    "unknown model, request too large)",
    "executor": "a sandbox executor that runs the template could not start or died",
    "timeout": "the request's deadline passed before verification finished",
}


class Failure(BaseModel):
    """Why a request got no reward.

    Attributes:
        kind: What failed (:data:`FAILURE_KINDS`).
        reason: The error as the failing part reported it.
    """

    model_config = ConfigDict(extra="forbid")

    kind: FailureKind
    reason: str


_NOTED: contextvars.ContextVar[list[Failure] | None] = contextvars.ContextVar(
    "verifleet_reward_failures", default=None
)


@contextlib.contextmanager
def recording() -> Iterator[list[Failure]]:
    """Collect what :func:`note` reports while the block runs (one scoring)."""
    noted: list[Failure] = []
    token = _NOTED.set(noted)
    try:
        yield noted
    finally:
        _NOTED.reset(token)


def note(kind: FailureKind, reason: str) -> None:
    """Report an infrastructure failure of the scoring under way (ignored outside
    :func:`recording`)."""
    noted = _NOTED.get()
    if noted is not None:
        noted.append(Failure(kind=kind, reason=reason))


def noted() -> list[Failure]:
    """What the scoring under way noted so far."""
    return list(_NOTED.get() or ())


def classify_model_error(exc: ModelCallError) -> FailureKind | None:
    """The kind of a judge call that failed for good; None when the judge did
    answer and its reply was unusable (a content failure, like a reply that never
    matched its schema)."""
    if "deadline" in str(exc):
        return "timeout"
    if isinstance(exc.__cause__, EndpointReplyError):
        return None
    return "judge_unreachable" if exc.transient else "judge_refused"


def first_failure(failures: list[Failure]) -> Failure | None:
    """The failure to report: a deadline first (it explains the rest), else the first."""
    for failure in failures:
        if failure.kind == "timeout":
            return failure
    return failures[0] if failures else None
