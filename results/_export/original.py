"""The original framework's JSON result files, read into verifleet's models.

Two shapes exist: the CLI's export (``{"format_version": "2.x", "metadata": {...},
"shared_data": {...}, "results": [...], "scenario_results": [...]}``) and the
results store's (``{"runs": {run name: [results]}, "scenario_outcomes": ...}``);
a bare list of the original's results (its frontend export, each with a
``row_index``) reads too.

Each result keeps every field verifleet has, ``metadata.failure`` and
``metadata.caveats`` included; ``completed_without_errors`` and ``error`` are
derived from the failure (a failure of group ``retry`` or ``system`` is an
error, its message the failure's ``error_message`` detail or reason). Fields
verifleet has no place for are dropped: ``metadata.warnings``,
``partial_content``, ``retry_counts``, a model identity's ``config_id``, the
template's conversation, agentic-parsing and dynamic-parsing records; an LLM
trait value that is neither a bool nor an int (a ``template``-kind trait's
field) is kept as a label when it is text, else dropped. Exports of format
2.0 / 2.1 (flat model strings) are refused with a message saying so.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from verifleet.schemas import (
    ModelIdentity,
    ScenarioExecutionResult,
    ScenarioTerminalFailure,
    ScenarioTurnRecord,
    VerificationResult,
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultTemplate,
)

from .files import PathLike, export_error

__all__ = ["is_original_document", "original_results", "original_scenarios"]

_LEGACY_VERSIONS = ("2.0", "2.1")
_ERROR_GROUPS = ("retry", "system")
_SECTIONS: dict[str, type[BaseModel]] = {
    "template": VerificationResultTemplate,
    "rubric": VerificationResultRubric,
    "deep_judgment": VerificationResultDeepJudgment,
    "deep_judgment_rubric": VerificationResultDeepJudgmentRubric,
}
_ROOT = ("evaluation_input", "used_full_trace", "trace_extraction_error")


def is_original_document(data: object) -> bool:
    """Whether parsed JSON is one of the original's result documents (the CLI's
    export, the results store's, or a bare list of its results)."""
    if isinstance(data, dict):
        return ("format_version" in data and "results" in data) or isinstance(
            data.get("runs"), dict
        )
    if isinstance(data, list) and data and isinstance(data[0], dict):
        meta = data[0].get("metadata")
        return "row_index" in data[0] or (isinstance(meta, dict) and "failure" in meta)
    return False


def _known(data: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in model.model_fields}


def _identity(value: Any) -> Any:
    if isinstance(value, dict):
        return _known(value, ModelIdentity)
    return value


def _metadata(data: dict[str, Any]) -> dict[str, Any]:
    meta = _known(data, VerificationResultMetadata)
    meta["answering"] = _identity(data.get("answering"))
    meta["parsing"] = _identity(data.get("parsing"))
    failure = data.get("failure")
    if isinstance(failure, dict):
        meta["failure"] = {k: v for k, v in failure.items() if k != "group"}
    group = _group(failure)
    erred = group in _ERROR_GROUPS
    meta["completed_without_errors"] = not erred
    if erred and isinstance(failure, dict):
        found = failure.get("details")
        details: dict[str, Any] = found if isinstance(found, dict) else {}
        meta["error"] = str(details.get("error_message") or failure.get("reason") or "")
    return meta


def _group(failure: Any) -> str | None:
    from verifleet.schemas import CATEGORY_GROUPS

    if not isinstance(failure, dict):
        return None
    return CATEGORY_GROUPS.get(str(failure.get("category")))


def _rubric(data: dict[str, Any]) -> dict[str, Any]:
    rubric = _known(data, VerificationResultRubric)
    scores = rubric.get("llm_trait_scores")
    if isinstance(scores, dict):
        labels = dict(rubric.get("llm_trait_labels") or {})
        kept: dict[str, Any] = {}
        for name, value in scores.items():
            if isinstance(value, bool | int):
                kept[name] = value
            elif isinstance(value, str):
                labels.setdefault(name, value)  # a template-kind trait's text field
        rubric["llm_trait_scores"] = kept
        rubric["llm_trait_labels"] = labels or None
    return rubric


def _deep_judgment(data: dict[str, Any]) -> dict[str, Any]:
    section = _known(data, VerificationResultDeepJudgment)
    # The original builds this section only when deep judgment was enabled.
    section.setdefault("deep_judgment_enabled", True)
    return section


def original_result(data: Any) -> VerificationResult:
    """One of the original's results (a dumped ``VerificationResult``) as ours.

    Raises:
        ValueError: not an object, or it does not form a valid result (the
            message names what is wrong).
    """
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        raise ValueError("not an object with a 'metadata' object")
    converted: dict[str, Any] = {"metadata": _metadata(data["metadata"])}
    for name, model in _SECTIONS.items():
        section = data.get(name)
        if not isinstance(section, dict):
            continue
        if name == "rubric":
            converted[name] = _rubric(section)
        elif name == "deep_judgment":
            converted[name] = _deep_judgment(section)
        else:
            converted[name] = _known(section, model)
    converted.update({k: data[k] for k in _ROOT if k in data})
    return VerificationResult.model_validate(converted)


def _rows(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if "runs" in data:
        return [row for rows in data["runs"].values() if isinstance(rows, list) for row in rows]
    rows = data.get("results")
    return list(rows.values()) if isinstance(rows, dict) else list(rows or [])


def original_results(path: PathLike, data: Any) -> list[VerificationResult]:
    """The results of an original document (see :func:`is_original_document`).

    Raises:
        ExportError: a legacy (2.0/2.1) export, or a result that does not convert
            (the message gives its position and the reason).
    """
    if isinstance(data, dict) and str(data.get("format_version")) in _LEGACY_VERSIONS:
        raise export_error(
            path,
            f"the original's export format {data['format_version']} (flat model strings) "
            "is not read; re-export it with a current version of the original",
        )
    results = []
    for index, row in enumerate(_rows(data)):
        try:
            results.append(original_result(row))
        except (ValueError, ValidationError) as exc:
            raise export_error(path, f"result {index} is not a valid result: {exc}") from exc
    return results


def _scenario(data: Any) -> ScenarioExecutionResult:
    if not isinstance(data, dict):
        raise ValueError("a scenario result must be an object")
    failure = data.get("terminal_failure")
    history = [
        ScenarioTurnRecord(
            turn=turn,
            node_id=str(record.get("node_id")),
            question_id="",
            question_text=str(record.get("question_text") or ""),
            raw_response=str(record.get("raw_response") or ""),
            parsed_fields=dict(record.get("parsed_fields") or {}),
            verify_result=record.get("verify_result"),
            result_ids=[record["verification_result_id"]]
            if record.get("verification_result_id")
            else [],
        )
        for turn, record in enumerate(data.get("history") or [])
        if isinstance(record, dict)
    ]
    return ScenarioExecutionResult(
        scenario_id=data["scenario_id"],
        status=data["status"],
        path=list(data.get("path") or []),
        turn_count=int(data.get("turn_count") or 0),
        history=history,
        outcome_results=dict(data.get("outcome_results") or {}),
        terminal_failure=ScenarioTerminalFailure(
            node_id=failure.get("node_id"),
            stage=failure.get("stage"),
            reason=str(failure.get("reason") or failure.get("category") or "failed"),
        )
        if isinstance(failure, dict)
        else None,
        replicate=data.get("replicate"),
    )


def original_scenarios(path: PathLike, data: Any) -> list[ScenarioExecutionResult] | None:
    """The scenario runs of the original's CLI export (None when it has none; the
    results store keeps only their outcomes, which are not runs).

    Raises:
        ExportError: a scenario result that does not convert.
    """
    found = data.get("scenario_results") if isinstance(data, dict) else None
    if not found:
        return None
    runs = []
    for index, item in enumerate(found):
        try:
            runs.append(_scenario(item))
        except (KeyError, ValueError, ValidationError) as exc:
            raise export_error(path, f"scenario result {index} is not valid: {exc}") from exc
    return runs
