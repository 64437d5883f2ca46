"""Prompt for the parsing judge: fill the answer template from a response."""

from __future__ import annotations

from .._llm_protocol import Message
from ._schema_text import schema_text

__all__ = ["build_parsing_messages"]

_PARSING_RULES = """\
Extract, from the response below, the value of each field of the JSON schema.
Rules:
- Report what the response says, not what you believe is correct.
- Use each field's description to decide what belongs in it.
- If the response does not state a value for a field, use null when the schema
  allows it, otherwise the closest faithful reading of the response.
- Do not add fields that are not in the schema."""


def build_parsing_messages(
    question: str,
    response: str,
    schema: dict[str, object],
    *,
    system_prompt: str | None,
    instructions: str | None = None,
) -> list[Message]:
    """Messages that ask the judge to parse ``response`` into ``schema``.

    ``instructions`` (``prompt_config.parsing``) are added to the system prompt.
    """
    system = "\n\n".join(part for part in (system_prompt, _PARSING_RULES, instructions) if part)
    user = (
        f"Question:\n{question}\n\n"
        f"Response to parse:\n<response>\n{response}\n</response>\n\n"
        f"JSON schema of the fields to fill:\n{schema_text(schema)}\n\n"
        "Reply with the JSON object only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
