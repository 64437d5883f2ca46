"""What one result may hold: limits the operator sets, enforced where data enters.

A template's ground truth, the values parsed into it, what its verification
returns and the answering model's response are all copied into the question's
result (and the ground truth into every result of that question), so one benchmark
of a few kilobytes could otherwise fill the runner's memory and the store. Each
part has its own limit in bytes of compact JSON; a part beyond it fails that
question with an error naming the limit, and nothing of the part is kept. The
recorded model calls are the exception: over their limit they are cut with a
marker (a record, not an input to the verdict).

The variables (``VERIFLEET_RESULT_MAX_*``) and their defaults are documented once:
docs/security.md, "Result limits" (tests/unit/test_settings_documented.py checks
every one read here is listed).
"""

from __future__ import annotations

import json
import os
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ._errors import ConfigError

__all__ = ["ResultLimits", "json_size"]

_KIB = 1024


def json_size(value: object) -> int:
    """Length of ``value`` as compact JSON (non-ASCII escaped, so never less than
    its UTF-8 bytes); values JSON cannot write count by their ``repr``."""
    try:
        return len(json.dumps(value, separators=(",", ":"), default=repr))
    except (RecursionError, ValueError):
        return len(repr(value))


class ResultLimits(BaseModel):
    """Largest size, in bytes of compact JSON, of each part of one result.

    Attributes:
        ground_truth: A template's ground truth (``parsed_gt_response``).
        parsed: The judge's values parsed into the template (``parsed_llm_response``).
        verify_output: What the template's verification returns.
        judge_schema: The JSON schema a template gives the judge.
        response: The answering model's response plus its trace messages.
        calls: The recorded model calls (``template.model_calls``); cut to fit,
            see :func:`verifleet.schemas.bound_calls`.
    """

    model_config = ConfigDict(frozen=True)

    ground_truth: int = Field(default=64 * _KIB, ge=1)
    parsed: int = Field(default=64 * _KIB, ge=1)
    verify_output: int = Field(default=64 * _KIB, ge=1)
    judge_schema: int = Field(default=64 * _KIB, ge=1)
    response: int = Field(default=1024 * _KIB, ge=1)
    calls: int = Field(default=256 * _KIB, ge=1)

    #: The environment variable of each limit.
    ENV: ClassVar[dict[str, str]] = {
        "ground_truth": "VERIFLEET_RESULT_MAX_GROUND_TRUTH",
        "parsed": "VERIFLEET_RESULT_MAX_PARSED",
        "verify_output": "VERIFLEET_RESULT_MAX_VERIFY_OUTPUT",
        "judge_schema": "VERIFLEET_RESULT_MAX_JUDGE_SCHEMA",
        "response": "VERIFLEET_RESULT_MAX_RESPONSE",
        "calls": "VERIFLEET_RESULT_MAX_CALLS",
    }

    @classmethod
    def from_env(cls) -> ResultLimits:
        """The limits from the ``VERIFLEET_RESULT_MAX_*`` variables (unset: default).

        Raises:
            ConfigError: A variable is not a positive integer (names it).
        """
        values: dict[str, int] = {}
        for name, variable in cls.ENV.items():
            raw = os.environ.get(variable, "").strip()
            if not raw:
                continue
            try:
                number = int(raw)
            except ValueError:
                raise ConfigError(f"{variable}={raw!r} is not a whole number of bytes") from None
            if number <= 0:
                raise ConfigError(f"{variable}={raw!r} must be positive")
            values[name] = number
        return cls(**values)

    def problem(self, part: str, what: str, value: object) -> str | None:
        """Why ``value`` may not be kept as ``part`` (a field name of this class),
        or None when it fits. ``what`` names it in the message, e.g. "the
        template's ground truth"."""
        limit: int = getattr(self, part)
        size = json_size(value)
        if size <= limit:
            return None
        return (
            f"{what} is {size} bytes as JSON, over the limit of {limit} "
            f"({self.ENV[part]}; see docs/security.md#result-limits)"
        )
