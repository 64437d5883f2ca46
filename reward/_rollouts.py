"""Scoring a JSONL file of rollouts: each line gains ``reward`` and the verdict
fields, in input order, streaming.

Resumable through the output file: every output line records its input line
(``rollout_line``), and lines already there are not scored again (a partly
written last line from an interrupted run is cut off first). Malformed lines
(not JSON, not a request, an unknown question, no response) are reported with
their line numbers, written to ``<out>.errors.jsonl`` and skipped; they are
never dropped silently. A rollout that could not be verified for an
infrastructure reason (judge unreachable, executor failure, deadline) is listed
there too and not written, so that re-running scores it.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ._request import (
    InvalidRequestError,
    PlainVerifyRequest,
    ResponsesVerifyRequest,
    VerifyRequest,
    request_answer,
)
from ._scorer import RewardScorer

__all__ = [
    "LINE_FIELD",
    "LineError",
    "RolloutReport",
    "RolloutWriter",
    "done_lines",
    "errors_path",
    "ignore_line_error",
    "iter_lines",
    "parse_rollout",
    "score_rollouts_local",
    "scored_line",
]

#: The output field naming the input line a scored rollout came from.
LINE_FIELD = "rollout_line"

_REQUEST = TypeAdapter(VerifyRequest)

AnyRequest = ResponsesVerifyRequest | PlainVerifyRequest


class LineError(BaseModel):
    """A rollout line that was skipped, and why."""

    model_config = ConfigDict(extra="forbid")

    line: int
    message: str


class RolloutReport(BaseModel):
    """What a scoring run did.

    Attributes:
        scored: Lines scored and written in this run.
        already_done: Lines skipped because the output file had them.
        errors: Malformed lines, skipped, with their line numbers.
    """

    model_config = ConfigDict(extra="forbid")

    scored: int = 0
    already_done: int = 0
    errors: list[LineError] = Field(default_factory=list)


def errors_path(out: Path) -> Path:
    """Where the malformed lines of a run are listed (``<out>.errors.jsonl``)."""
    return out.with_name(out.name + ".errors.jsonl")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line, 1-based, streaming.

    Raises:
        OSError: the file cannot be read.
    """
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, text in enumerate(handle, start=1):
            if text.strip():
                yield number, text


def parse_rollout(text: str, scorer: RewardScorer) -> tuple[dict[str, object], AnyRequest]:
    """Parse one rollout line and check it can be scored (known question, a
    response to verify), without calling any model.

    Raises:
        InvalidRequestError: with a message saying what is wrong.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(f"expected a JSON object, got {type(data).__name__}")
    rollout = {k: v for k, v in data.items() if k != LINE_FIELD}
    try:
        request = _REQUEST.validate_python(rollout)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'line'}: {e['msg']}" for e in exc.errors()
        ]
        raise InvalidRequestError("not a verify request: " + "; ".join(problems[:5])) from None
    scorer.resolve(request)
    request_answer(request)
    return rollout, request


def scored_line(
    rollout: dict[str, object], fields: dict[str, object], line: int
) -> dict[str, object]:
    """The output record: the rollout, its verdict fields and its input line."""
    return {**rollout, **fields, LINE_FIELD: line}


def done_lines(out: Path) -> set[int]:
    """Input lines already scored in ``out``; cuts off a partial last line.

    Raises:
        OSError: the file exists but cannot be read or truncated.
    """
    if not out.exists():
        return set()
    done: set[int] = set()
    keep = 0
    with out.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # an interrupted write: score that line again
            keep += len(raw)
            try:
                line = json.loads(raw).get(LINE_FIELD)
            except (json.JSONDecodeError, AttributeError):
                continue
            if isinstance(line, int):
                done.add(line)
    if keep != out.stat().st_size:
        with out.open("r+b") as handle:
            handle.truncate(keep)
    return done


class RolloutWriter:
    """Appends output records to ``out`` and error records to its errors file,
    flushing each line so an interrupted run loses at most the line being written."""

    def __init__(self, out: Path, report: RolloutReport, on_error: Callable[[LineError], None]):
        out.parent.mkdir(parents=True, exist_ok=True)
        self._out: IO[str] = out.open("a", encoding="utf-8")
        self._errors: IO[str] = errors_path(out).open("w", encoding="utf-8")
        self._report = report
        self._on_error = on_error

    def write(self, record: dict[str, object]) -> None:
        self._out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._out.flush()
        self._report.scored += 1

    def error(self, line: int, message: str) -> None:
        entry = LineError(line=line, message=message)
        self._errors.write(entry.model_dump_json() + "\n")
        self._errors.flush()
        self._report.errors.append(entry)
        self._on_error(entry)

    def close(self) -> None:
        self._out.close()
        self._errors.close()


def ignore_line_error(_entry: LineError) -> None:
    """The default ``on_error``: the error file and the report still list the line."""
    return None


def score_rollouts_local(
    path: Path,
    out: Path,
    scorer: RewardScorer,
    *,
    concurrency: int = 8,
    on_error: Callable[[LineError], None] = ignore_line_error,
) -> RolloutReport:
    """Score every rollout of ``path`` in this process and append them to ``out``.

    At most ``2 * concurrency`` rollouts are in memory at once; output keeps the
    input order.

    Args:
        path: The rollouts (JSON Lines).
        out: The scored rollouts; lines already there are skipped (resume).
        scorer: The benchmark's scorer.
        concurrency: Rollouts verified at once.
        on_error: Called with each malformed line as it is found.

    Raises:
        OSError: a file cannot be read or written.
    """
    report = RolloutReport()
    done = done_lines(out)
    writer = RolloutWriter(out, report, on_error)
    window: deque[tuple[int, dict[str, object], Future[dict[str, object]]]] = deque()

    def score(request: AnyRequest) -> dict[str, object]:
        return scorer.score(request).verdict_fields()

    def emit(line: int, rollout: dict[str, object], fields: dict[str, Any]) -> None:
        failure = fields.get("failure")
        if failure is not None:
            # Not a verdict: left out of ``out`` so that re-running scores it again.
            writer.error(
                line,
                f"not verified ({failure['kind']}): {failure['reason']}; no reward written, "
                "re-run with the same --out to retry",
            )
            return
        writer.write(scored_line(rollout, fields, line))

    try:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="reward") as pool:
            for number, text in iter_lines(path):
                if number in done:
                    report.already_done += 1
                    continue
                try:
                    rollout, request = parse_rollout(text, scorer)
                except InvalidRequestError as exc:
                    writer.error(number, str(exc))
                    continue
                window.append((number, rollout, pool.submit(score, request)))
                while len(window) >= 2 * concurrency:
                    line, rollout, future = window.popleft()
                    emit(line, rollout, future.result())
            while window:
                line, rollout, future = window.popleft()
                emit(line, rollout, future.result())
    finally:
        writer.close()
    return report
