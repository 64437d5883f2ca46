"""Prompt for the answering model: optional system prompt, few-shot examples, question."""

from __future__ import annotations

from collections.abc import Sequence

from .._llm_protocol import Message

__all__ = ["build_answer_messages"]


def build_answer_messages(
    question: str,
    *,
    system_prompt: str | None,
    examples: Sequence[dict[str, str]] = (),
    instructions: str | None = None,
    history: Sequence[Message] = (),
) -> list[Message]:
    """Messages that ask the answering model one question.

    Few-shot examples come as earlier user/assistant turns so that chat models
    see them as demonstrations, not as part of the question. ``instructions``
    (``prompt_config.generation``) extend the system prompt. ``history`` (the
    earlier turns of a scenario) comes after the examples and before the
    question, so the model answers inside the conversation so far.
    """
    system = "\n\n".join(part for part in (system_prompt, instructions) if part)
    messages: list[Message] = [{"role": "system", "content": system}] if system else []
    for example in examples:
        asked = example.get("question", "")
        answered = example.get("answer", "")
        if asked and answered:
            messages.append({"role": "user", "content": asked})
            messages.append({"role": "assistant", "content": answered})
    messages.extend(history)
    messages.append({"role": "user", "content": question})
    return messages
