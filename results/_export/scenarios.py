"""Scenario results inside result files.

Parquet keeps them as JSON in the file footer's key-value metadata
(:data:`SCENARIO_METADATA_KEY`): the rows stay one per ``VerificationResult``, and a
reader that does not know scenarios still reads the file. A verifleet JSON document
ends with a ``"scenario_results"`` list after ``"results"``, on the closing line.
JSON Lines and CSV hold rows only, so they carry no scenario results.
``errors`` is not stored: it is derived from the scenario results whose status is
``error`` (:func:`scenario_errors`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import TypeAdapter, ValidationError

from verifleet.schemas import ScenarioExecutionResult

from .files import PathLike, export_error
from .layout import FORMAT_NAME
from .original import is_original_document, original_scenarios

__all__ = [
    "SCENARIO_METADATA_KEY",
    "json_scenario_line",
    "read_scenario_results",
    "scenario_errors",
    "scenario_results_json",
]

SCENARIO_METADATA_KEY = "verifleet.scenario_results"

_CLOSING = '], "scenario_results": '
_ADAPTER = TypeAdapter(list[ScenarioExecutionResult])


def scenario_results_json(scenario_results: Sequence[ScenarioExecutionResult]) -> str:
    """The JSON text of a list of scenario results."""
    return _ADAPTER.dump_json(list(scenario_results)).decode()


def json_scenario_line(scenario_results: Sequence[ScenarioExecutionResult]) -> str:
    """The closing line of a JSON document that holds scenario results."""
    return f"{_CLOSING}{scenario_results_json(scenario_results)}}}"


def _parse(path: PathLike, text: str | bytes) -> list[ScenarioExecutionResult]:
    try:
        return _ADAPTER.validate_json(text)
    except ValidationError as exc:
        raise export_error(path, f"stored scenario results are invalid: {exc}") from exc


def _from_json(path: PathLike) -> list[ScenarioExecutionResult] | None:
    try:
        with open(path, encoding="utf-8") as lines:
            # Only a document this module wrote has the layout scanned for here
            # (the original's export also ends with a "]}" line).
            ours = lines.readline().startswith(f'{{"format": "{FORMAT_NAME}"')
            for line in lines if ours else ():
                if line.startswith(_CLOSING):
                    # The list between the prefix and the document's closing brace.
                    return _parse(path, line.rstrip("\r\n")[len(_CLOSING) : -1])
                if line.rstrip("\r\n") == "]}":
                    return None
            lines.seek(0)
            data = json.load(lines)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise export_error(path, f"cannot read scenario results: {exc}") from exc
    if is_original_document(data):
        return original_scenarios(path, data)
    found = data.get("scenario_results") if isinstance(data, dict) else None
    return None if found is None else _parse(path, json.dumps(found))


def read_scenario_results(
    path: PathLike, *, format: str | None = None
) -> list[ScenarioExecutionResult] | None:
    """The scenario results stored in a result file, or None when it has none.

    Raises:
        ExportError: the file cannot be read, or its scenario results are invalid.
    """
    from .api import resolve_format

    chosen = resolve_format(path, format)
    if chosen == "parquet":
        try:
            footer = pq.read_metadata(Path(path)).metadata or {}
        except (OSError, pa.ArrowException) as exc:
            raise export_error(path, f"cannot read the Parquet footer: {exc}") from exc
        stored = footer.get(SCENARIO_METADATA_KEY.encode())
        return None if stored is None else _parse(path, stored)
    if chosen == "json":
        return _from_json(path)
    return None


def scenario_errors(
    scenario_results: Sequence[ScenarioExecutionResult] | None,
) -> list[tuple[str, BaseException]] | None:
    """``VerificationResultSet.errors`` for these scenario results: one
    ``(description, ScenarioExecutionError)`` per failed run, None when none failed."""
    errors: list[tuple[str, BaseException]] = []
    for run in scenario_results or []:
        entry = run.error()
        if entry is not None:
            errors.append((entry[0], entry[1]))
    return errors or None
