"""The interface every pipeline stage and check uses to talk to a model.

Stages and checks never touch langchain clients, retries or token accounting
directly: they get a :class:`ChatCaller` bound to one model (answering or parsing)
and a stage label. The concrete implementation (``pipeline._llm``) wraps a
langchain chat model built once per process, applies the request timeout and the
retry policy, and records token usage per stage in the spec's ``usage_metadata``
shape. Tests of stage logic pass a scripted implementation of the same protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from verifleet.errors import ModelCallError, StructuredOutputError

__all__ = ["ChatCaller", "Message", "ModelCallError", "StructuredOutputError"]

#: A chat message as ``{"role": "system" | "user" | "assistant", "content": str}``.
Message = dict[str, str]


@runtime_checkable
class ChatCaller(Protocol):
    """One model, ready to call, bound to one unit.

    Cheap to create per unit: it wraps a chat client built once per process (and
    shared by all threads) and records token usage into that unit's tracker, so
    the usage of concurrent units never mixes.
    """

    @property
    def model_name(self) -> str:
        """The model's name as recorded in usage metadata."""
        ...

    def invoke(self, messages: Sequence[Message], *, stage: str) -> str:
        """Send ``messages``; return the reply text.

        Token usage is recorded under ``stage`` (e.g. ``"answer_generation"``,
        ``"parsing"``, ``"abstention_check"``, ``"rubric_evaluation"``).

        Raises:
            ModelCallError: the call failed after the retry policy was exhausted,
                or failed with a non-transient error.
        """
        ...

    def invoke_json(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        schema: dict[str, object],
        schema_name: str = "response",
    ) -> dict[str, object]:
        """Ask for a JSON object matching the JSON ``schema``; return it parsed.

        Uses the provider's structured output (``json_schema``) where it exists;
        validates the reply against ``schema``; on failure re-asks once with the
        validation error, then tries to repair the text (extract the first JSON
        object, fix trailing commas) before giving up.

        Raises:
            ModelCallError: as :meth:`invoke`.
            StructuredOutputError: no valid object could be obtained.
        """
        ...
