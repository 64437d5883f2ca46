"""The ``manual`` interface: replay pre-recorded answers or traces from a file.

Accepted files, keyed by question id or by the MD5 of the question text (the
original framework's key; both are looked up, the id first):

* JSON object: ``{"<question id>": "answer text" | [trace messages], ...}``
* JSON array or JSONL: records ``{"question_id": ..., "answer": ...}`` where the
  answer field is one of ``answer``, ``response``, ``raw_llm_response``,
  ``trace`` or ``trace_messages``.

A trace is a list of ``{"role": ..., "content": ...}`` messages (langchain's
``type`` works as well); its text is rendered for ``raw_llm_response`` and the
messages are kept as ``trace_messages``. Manual traces are trusted: stage 4 does
not validate them.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from verifleet.errors import ManualAnswerError
from verifleet.schemas import ModelConfig, md5_hex

from .._answer import CachedAnswer
from .._trace import TraceError, normalise_trace, render_trace

__all__ = ["ManualAnswerError", "ManualAnswerStore"]

_ANSWER_KEYS = ("answer", "response", "raw_llm_response", "trace", "trace_messages")


def _answer_of(record: dict[str, object], where: str) -> str | list[object]:
    for key in _ANSWER_KEYS:
        if key in record:
            value = record[key]
            if isinstance(value, str | list):
                return value
            raise ManualAnswerError(f"{where}: '{key}' must be a string or a list of messages")
    raise ManualAnswerError(f"{where}: no answer field (one of {', '.join(_ANSWER_KEYS)})")


def _records(path: Path) -> dict[str, str | list[object]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManualAnswerError(f"cannot read manual answers {path}: {exc.strerror}") from exc
    try:
        if path.suffix.lower() == ".jsonl":
            data: object = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManualAnswerError(f"{path}: invalid JSON ({exc.msg}, line {exc.lineno})") from exc
    if isinstance(data, dict):
        out: dict[str, str | list[object]] = {}
        for qid, value in data.items():
            if isinstance(value, dict):
                value = _answer_of(value, f"{path}, question {qid}")
            if not isinstance(value, str | list):
                raise ManualAnswerError(f"{path}, question {qid}: expected text or messages")
            out[str(qid)] = value
        return out
    if isinstance(data, list):
        out = {}
        for index, record in enumerate(data):
            where = f"{path}, record {index + 1}"
            if not isinstance(record, dict) or "question_id" not in record:
                raise ManualAnswerError(f"{where}: expected an object with 'question_id'")
            out[str(record["question_id"])] = _answer_of(record, where)
        return out
    raise ManualAnswerError(f"{path}: expected a JSON object, an array or JSONL records")


class ManualAnswerStore:
    """Pre-recorded answer files, each read once per process (re-read when the
    file changes on disk). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: dict[str, tuple[float, dict[str, str | list[object]]]] = {}

    def _load(self, path: Path) -> dict[str, str | list[object]]:
        key = str(path.resolve())
        try:
            mtime = os.stat(key).st_mtime
        except OSError as exc:
            raise ManualAnswerError(f"cannot read manual answers {path}: {exc.strerror}") from exc
        with self._lock:
            cached = self._files.get(key)
            if cached is not None and cached[0] == mtime:
                return cached[1]
            records = _records(path)
            self._files[key] = (mtime, records)
            return records

    def answer_for(
        self, model: ModelConfig, question_id: str, question_text: str | None = None
    ) -> CachedAnswer:
        """The recorded answer of ``question_id`` for a ``manual`` model: the entry
        keyed by the id, else the one keyed by the MD5 of ``question_text``.

        Raises:
            ManualAnswerError: the file is missing or malformed, the question has
                no entry under either key, or its trace is malformed.
        """
        if not model.manual_traces_path:
            raise ManualAnswerError(f"model '{model.model_name}' has no manual_traces_path")
        path = Path(model.manual_traces_path)
        records = self._load(path)
        recorded = records.get(question_id)
        text_key = md5_hex(question_text) if question_text is not None else None
        if recorded is None and text_key is not None:
            recorded = records.get(text_key)
        if recorded is None:
            also = f" or its text's MD5 '{text_key}'" if text_key else ""
            raise ManualAnswerError(
                f"no pre-recorded answer for question '{question_id}'{also} in {path}"
            )
        if isinstance(recorded, str):
            return CachedAnswer(raw_llm_response=recorded)
        try:
            trace = normalise_trace(recorded)
        except TraceError as exc:
            raise ManualAnswerError(f"{path}, question {question_id}: {exc}") from exc
        return CachedAnswer(raw_llm_response=render_trace(trace), trace_messages=trace)
