"""What every chat caller shares, whatever carries its requests: asking for a JSON
object (native structured output, else the schema in the prompt; one re-ask with
the problems; repair), the ``json_schema`` name rule, and how an endpoint's
refusal of structured output is recognised.

The langchain caller and the direct HTTP caller both build on
:class:`JsonReplyCaller`, so a reply is judged the same way whichever path
fetched it.
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence

from langchain_core.utils.json import parse_json_markdown

from verifleet.schemas import ModelConfig

from .._llm_protocol import Message, ModelCallError, StructuredOutputError
from .._prompts import json_reply_instruction, json_retry_feedback
from ._clients import ChatModelCache
from ._json import parse_strict, repair_json, schema_errors

__all__ = [
    "JsonReplyCaller",
    "parse_like_langchain",
    "refused_structured_output",
    "response_format_name",
]

_log = logging.getLogger(__name__)

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_SCHEMA_COMPLAINTS = ("response_format", "json_schema", "schema", "structured")


def response_format_name(name: str) -> str:
    """The ``json_schema.name`` sent for a schema called ``name``: OpenAI accepts
    only ``[a-zA-Z0-9_-]``, so anything else becomes ``_`` (empty: ``response``)."""
    return _SCHEMA_NAME.sub("_", name) or "response"


def parse_like_langchain(text: str) -> object:
    """What langchain's ``JsonOutputParser`` makes of a structured reply (fenced or
    bare JSON), None where it would fail; the caller then validates or re-asks."""
    try:
        return parse_json_markdown(text.strip())
    except ValueError:
        return None


def refused_structured_output(
    exc: ModelCallError, clients: ChatModelCache, model: ModelConfig
) -> bool:
    """Whether a failed structured call should be asked again by prompt.

    True for a non-transient ``400`` (the endpoint refused the request). When the
    endpoint's message names the schema or the response format, it cannot do
    structured output at all, so ``model`` is asked by prompt from then on (the
    process pays for the refused attempt once, not per call). Any other failure
    returns False and the caller re-raises it.
    """
    text = str(exc)
    if exc.transient or not text.startswith("400 "):
        return False
    if any(word in text.lower() for word in _SCHEMA_COMPLAINTS):
        clients.disable_structured_output(model)
    _log.warning("%s refused structured output (%s); asking by prompt", model.model_name, text)
    return True


class JsonReplyCaller(ABC):
    """:meth:`invoke_json` on top of a caller's plain and structured calls."""

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model's name as recorded in usage metadata."""

    @abstractmethod
    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """Send ``messages``; return the reply text; record usage under ``stage``.

        Raises:
            ModelCallError: the call failed for good.
        """

    @abstractmethod
    def _ask_structured(
        self, messages: Sequence[Message], stage: str, schema: dict[str, object], name: str
    ) -> tuple[str, dict[str, object] | None] | None:
        """One native structured-output call: the reply text and its parsed object
        (None when it did not parse), or None when the model is to be asked by
        prompt instead (unsupported or refused).

        Raises:
            ModelCallError: the call failed for another reason than a refusal.
        """

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, object],
        schema_name: str = "response",
    ) -> dict[str, object]:
        """Ask for a JSON object matching ``schema``; return it parsed.

        Native structured output where the provider has it, else the schema in
        the prompt. An unusable reply is re-asked once with the problems listed;
        then each reply is repaired (first JSON object, trailing commas) before
        giving up.

        Raises:
            ModelCallError: as :meth:`invoke`.
            StructuredOutputError: no conforming object could be obtained; the
                message lists the problems of the last reply.
        """
        replies: list[str] = []
        problems: list[str] = []
        instruction: Message = {"role": "user", "content": json_reply_instruction(schema)}
        feedback: list[Message] = []
        for _round in range(2):
            native = self._ask_structured([*messages, *feedback], stage, schema, schema_name)
            if native is None:
                raw, parsed = self.invoke([*messages, instruction, *feedback], stage=stage), None
            else:
                raw, parsed = native
            replies.append(raw)
            try:
                value = parsed if parsed is not None else parse_strict(raw)
            except ValueError as exc:
                problems = [str(exc)]
            else:
                problems = schema_errors(value, schema)
                if not problems:
                    return value
            _log.info("%s: unusable JSON from %s: %s", stage, self.model_name, problems)
            feedback = [
                {"role": "assistant", "content": raw},
                {"role": "user", "content": json_retry_feedback(problems)},
            ]
        for raw in reversed(replies):
            try:
                value = repair_json(raw)
            except ValueError:
                continue
            if not schema_errors(value, schema):
                _log.warning("%s: used a repaired JSON reply from %s", stage, self.model_name)
                return value
        raise StructuredOutputError(
            f"judge returned invalid JSON after {len(replies)} replies and repair: "
            + "; ".join(problems[:5]),
            raw=replies[-1] if replies else "",
        )
