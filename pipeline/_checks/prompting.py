"""Message assembly and reply validation shared by the checks."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from verifleet.pipeline._llm_protocol import Message

from .errors import CheckReplyError

__all__ = ["build_messages", "dump_json", "object_schema", "validate_reply"]

_ReplyT = TypeVar("_ReplyT", bound=BaseModel)


def build_messages(system: str, user: str, instructions: str | None = None) -> list[Message]:
    """A system + user message pair; user ``instructions`` extend the system text.

    The user's instructions go into the system message, after ours, so they read
    as additional rules for the judge rather than as part of the material judged.
    """
    extra = (instructions or "").strip()
    if extra:
        system = f"{system}\n\n<additional_instructions>\n{extra}\n</additional_instructions>"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def object_schema(properties: dict[str, object], *, title: str | None = None) -> dict[str, object]:
    """A closed JSON object schema with every property required.

    Closed and all-required is what providers' strict structured output accepts.
    """
    schema: dict[str, object] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if title:
        schema["title"] = title
    return schema


def validate_reply(model: type[_ReplyT], reply: object, *, stage: str) -> _ReplyT:
    """Validate a judge reply strictly (no ``"yes"`` → ``True`` coercion).

    Raises:
        CheckReplyError: ``reply`` is not a dict or does not match ``model``.
    """
    if not isinstance(reply, dict):
        raise CheckReplyError(
            f"expected a JSON object, got {type(reply).__name__}", stage=stage, reply=reply
        )
    try:
        return model.model_validate(reply, strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise CheckReplyError(problems, stage=stage, reply=reply) from None


def dump_json(value: object) -> str:
    """Deterministic JSON text: sorted keys, no ASCII escaping, ``str`` fallback."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2, default=str)
