"""JSON, JSON Lines and CSV exports, and format selection."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from verifleet.orchestrator import (
    RESULT_FORMATS,
    iter_results,
    read_results,
    resolve_format,
    write_results,
)
from verifleet.schemas import (
    ExportError,
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultSet,
    VerificationResultTemplate,
)


def make_result(index: int, response: str = "BCL2") -> VerificationResult:
    meta = VerificationResultMetadata(
        question_id=f"q{index}",
        template_id="t",
        question_text='Which target?\nSecond line, "quoted", comma',
        answering=ModelIdentity(model_name="answerer"),
        parsing=ModelIdentity(model_name="judge"),
        completed_without_errors=True,
        execution_time=1.0,
        timestamp="2026-01-01T00:00:00Z",
        replicate=index,
    )
    template = VerificationResultTemplate(
        raw_llm_response=response, verify_result=index % 2 == 0, verify_granular_result=0.5
    )
    return VerificationResult(metadata=meta, template=template)


RESULTS = [make_result(0), make_result(1)]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("r.parquet", "parquet"),
        ("r.PQ", "parquet"),
        ("r.json", "json"),
        ("r.jsonl", "jsonl"),
        ("r.ndjson", "jsonl"),
        ("r.CSV", "csv"),
    ],
)
def test_format_comes_from_the_extension(name: str, expected: str) -> None:
    assert resolve_format(name) == expected


def test_unknown_extension_is_an_export_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "results.xlsx"
    with pytest.raises(ExportError, match=r"results\.xlsx.*'\.xlsx'"):
        write_results(RESULTS, path)
    with pytest.raises(ExportError, match=r"'\.xlsx'"):
        iter_results(path)
    assert not path.exists()


def test_missing_extension_and_unknown_format_are_export_errors(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="no extension"):
        write_results(RESULTS, tmp_path / "results")
    with pytest.raises(ExportError, match="'xml'"):
        write_results(RESULTS, tmp_path / "results.json", format="xml")


@pytest.mark.parametrize("fmt", RESULT_FORMATS)
def test_explicit_format_overrides_the_extension(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "results.dat"
    assert write_results(RESULTS, path, format=fmt) == 2
    assert list(iter_results(path, format=fmt)) == RESULTS


def test_json_document_layout_is_one_result_per_line(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_results(RESULTS, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"format": "verifleet-results", "version": 1, "results": ['
    assert lines[-1] == "]}"
    assert len(lines) == 2 + len(RESULTS)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format"] == "verifleet-results"
    assert [r["metadata"]["question_id"] for r in document["results"]] == ["q0", "q1"]


def test_empty_json_document_is_valid_and_reads_empty(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    assert write_results([], path) == 0
    assert json.loads(path.read_text(encoding="utf-8"))["results"] == []
    assert list(iter_results(path)) == []


def test_reindented_json_and_bare_lists_still_read(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_results(RESULTS, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    assert list(iter_results(path)) == RESULTS
    path.write_text(json.dumps(document["results"]), encoding="utf-8")
    assert list(iter_results(path)) == RESULTS


def test_truncated_json_is_an_export_error_after_the_complete_results(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_results(RESULTS, path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")
    results = iter_results(path)
    assert [next(results), next(results)] == RESULTS
    with pytest.raises(ExportError, match="truncated"):
        next(results)


def test_json_of_another_format_is_an_export_error(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"format": "something-else", "results": []}', encoding="utf-8")
    with pytest.raises(ExportError, match="not a verifleet-results document"):
        list(iter_results(path))
    path.write_text("{broken", encoding="utf-8")
    with pytest.raises(ExportError, match="not valid JSON"):
        list(iter_results(path))


def test_invalid_result_in_jsonl_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write_results(RESULTS, path)
    with path.open("a", encoding="utf-8") as out:
        out.write('{"metadata": {"question_id": "q9"}}\n')
    with pytest.raises(ExportError, match="line 3"):
        list(iter_results(path))


def test_csv_has_flat_columns_that_pandas_reads_typed(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    write_results(RESULTS, path, job_id="job-1")
    frame = pd.read_csv(path)
    assert len(frame) == 2
    assert frame["verify_result"].tolist() == [True, False]
    assert frame["replicate"].tolist() == [0, 1]
    assert frame["verify_granular_result"].tolist() == [0.5, 0.5]
    assert frame["answering_model"].tolist() == ["langchain:answerer"] * 2
    assert frame["result_key"].str.len().tolist() == [24, 24]
    assert frame.columns[-1] == "result_json"
    assert "template" not in frame.columns


def test_csv_keeps_fields_longer_than_the_csv_module_default(tmp_path: Path) -> None:
    # 128 KiB is the csv module's default limit (another test may have raised it).
    long_result = make_result(0, response="x" * (128 * 1024 + 10))
    path = tmp_path / "r.csv"
    write_results([long_result], path)
    assert list(iter_results(path)) == [long_result]


def test_csv_without_result_json_is_an_export_error(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("question_id,verify_result\nq1,true\n", encoding="utf-8")
    with pytest.raises(ExportError, match="result_json"):
        list(iter_results(path))


@pytest.mark.parametrize("fmt", RESULT_FORMATS)
def test_result_sets_and_generators_are_accepted(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"r.{fmt}"
    assert write_results((r for r in RESULTS), path) == 2
    assert read_results(path) == VerificationResultSet(results=RESULTS)
    assert write_results(VerificationResultSet(results=RESULTS[:1]), path) == 1
    assert read_results(path).results == RESULTS[:1]
