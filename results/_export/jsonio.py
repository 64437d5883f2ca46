"""JSON and JSON Lines export and import, one result in memory at a time.

A ``.json`` file is one document::

    {"format": "verifleet-results", "version": 1, "results": [
    {...result...},
    {...result...}
    ]}

written incrementally, one compact result per line. The reader streams files that
have exactly this layout (every file this module writes) line by line; any other valid
JSON document (re-indented by a tool, or a bare list of results) is parsed whole,
because a streaming JSON parser would need a dependency verifleet does not have.

A ``.jsonl`` file holds one result per line and no header.

JSON has no NaN or infinity: ``model_dump_json`` writes them as ``null``, so such a
float does not survive a JSON round trip (Parquet keeps it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import IO

from pydantic import ValidationError

from verifleet.schemas import ScenarioExecutionResult, VerificationResult

from .files import PathLike, atomic_output, export_error, require_readable
from .layout import FORMAT_NAME, FORMAT_VERSION
from .original import is_original_document, original_results
from .scenarios import json_scenario_line

__all__ = ["iter_json", "iter_jsonl", "write_json", "write_jsonl"]

_HEADER = f'{{"format": "{FORMAT_NAME}", "version": {FORMAT_VERSION}, "results": ['
_FOOTER = "]}"


def write_json(
    results: Iterable[VerificationResult],
    path: PathLike,
    *,
    scenario_results: Sequence[ScenarioExecutionResult] | None = None,
) -> int:
    """Write ``results`` as a verifleet JSON document, streaming (atomic on success).

    ``scenario_results``, when given, follow the results on the closing line
    (``"scenario_results": [...]``); see :mod:`.scenarios`.

    Returns:
        The number of results written.

    Raises:
        ExportError: the file cannot be created or written, or a result holds a value
            JSON cannot represent.
    """
    count = 0
    try:
        with atomic_output(path) as temp, temp.open("w", encoding="utf-8") as out:
            out.write(_HEADER)
            for result in results:
                out.write("\n" if count == 0 else ",\n")
                out.write(result.model_dump_json())
                count += 1
            if scenario_results is None:
                out.write("\n" + _FOOTER + "\n")
            else:
                out.write("\n" + json_scenario_line(scenario_results) + "\n")
    # ValueError: a free-form value pydantic cannot serialise to JSON.
    except (OSError, ValueError) as exc:
        raise export_error(path, f"cannot write: {exc}") from exc
    return count


def write_jsonl(results: Iterable[VerificationResult], path: PathLike) -> int:
    """Write one JSON result per line (atomic on success).

    Returns:
        The number of results written.

    Raises:
        ExportError: the file cannot be created or written, or a result holds a value
            JSON cannot represent.
    """
    count = 0
    try:
        with atomic_output(path) as temp, temp.open("w", encoding="utf-8") as out:
            for result in results:
                out.write(result.model_dump_json())
                out.write("\n")
                count += 1
    # ValueError: a free-form value pydantic cannot serialise to JSON.
    except (OSError, ValueError) as exc:
        raise export_error(path, f"cannot write: {exc}") from exc
    return count


def _parse(path: PathLike, payload: object, where: str) -> VerificationResult:
    """Validate one result given as JSON text or as already parsed JSON."""
    try:
        if isinstance(payload, str):
            return VerificationResult.model_validate_json(payload)
        return VerificationResult.model_validate(payload)
    except ValidationError as exc:
        raise export_error(path, f"{where} is not a valid result: {exc}") from exc


def iter_jsonl(path: PathLike) -> Iterator[VerificationResult]:
    """Stream the results of a JSON Lines file; blank lines are skipped.

    Raises:
        ExportError: at once if the file is missing or unreadable; during iteration
            if a line is not a valid result (the message gives its line number).
    """
    require_readable(path)
    return _jsonl_rows(path)


def _jsonl_rows(path: PathLike) -> Iterator[VerificationResult]:
    with open(path, encoding="utf-8") as lines:
        try:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    yield _parse(path, line, f"line {number}")
        except (OSError, UnicodeDecodeError) as exc:
            raise export_error(path, f"cannot read: {exc}") from exc


def iter_json(path: PathLike) -> Iterator[VerificationResult]:
    """Stream the results of a verifleet JSON document.

    Accepts the layout :func:`write_json` produces (streamed line by line), any other
    formatting of the same document, a bare JSON list of results (both parsed
    whole), and the original framework's two JSON exports (see :mod:`.original`).

    Raises:
        ExportError: at once if the file is missing or unreadable; during iteration
            if it is not JSON, truncated, of another format or a newer version, or
            holds an invalid result.
    """
    require_readable(path)
    return _json_rows(path)


def _json_rows(path: PathLike) -> Iterator[VerificationResult]:
    with open(path, encoding="utf-8") as lines:
        try:
            first = lines.readline()
            if first.rstrip("\r\n") == _HEADER:
                yield from _stream_body(path, lines)
                return
            document = first + lines.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise export_error(path, f"cannot read: {exc}") from exc
    yield from _parse_document(path, document)


def _stream_body(path: PathLike, lines: IO[str]) -> Iterator[VerificationResult]:
    for number, line in enumerate(lines, start=2):
        body = line.rstrip("\r\n")
        if body == _FOOTER or body.startswith("],"):  # "]," opens the scenario results
            return
        yield _parse(path, body.removesuffix(","), f"line {number}")
    raise export_error(path, "truncated: the closing ']}' is missing")


def _parse_document(path: PathLike, document: str) -> Iterator[VerificationResult]:
    try:
        data = json.loads(document)
    except json.JSONDecodeError as exc:
        raise export_error(path, f"not valid JSON: {exc}") from exc
    if is_original_document(data):
        # The original framework's CLI or results-store export, or its bare list.
        yield from original_results(path, data)
        return
    if isinstance(data, dict):
        if data.get("format") != FORMAT_NAME or not isinstance(data.get("results"), list):
            raise export_error(path, f"not a {FORMAT_NAME} document (no format/results)")
        version = data.get("version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise export_error(path, f"unsupported format version {version!r}")
        data = data["results"]
    if not isinstance(data, list):
        raise export_error(path, "expected a JSON object or a list of results")
    for index, item in enumerate(data):
        yield _parse(path, item, f"result {index}")
