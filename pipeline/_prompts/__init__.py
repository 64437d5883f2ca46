"""All prompts the pipeline sends, kept in one place so they can be read and tuned
together. Checks (abstention, sufficiency, embedding, deep judgment, rubrics)
keep their own task prompts next to their logic."""

from ._answer import build_answer_messages
from ._json import json_reply_instruction, json_retry_feedback
from ._parsing import build_parsing_messages

__all__ = [
    "build_answer_messages",
    "build_parsing_messages",
    "json_reply_instruction",
    "json_retry_feedback",
]
