"""Parquet export: declared column types, bounded batches, summary columns, errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from verifleet.orchestrator import (
    RESULT_ARROW_SCHEMA,
    ParquetResultWriter,
    iter_parquet,
    iter_results,
    write_results,
)
from verifleet.schemas import (
    ExportError,
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultTemplate,
    compute_unit_key,
)


def make_result(index: int = 0, **sections: Any) -> VerificationResult:
    """A minimal result: metadata only unless sections are given."""
    meta = VerificationResultMetadata(
        question_id=f"q{index}",
        template_id="t" * 32,
        question_text=f"Question {index}?",
        answering=ModelIdentity(model_name="answerer", tools=["search"]),
        parsing=ModelIdentity(model_name="judge"),
        completed_without_errors=True,
        execution_time=0.25,
        timestamp="2026-01-01T00:00:00Z",
    )
    return VerificationResult(metadata=meta, **sections)


def full_result(index: int) -> VerificationResult:
    """A result with values everywhere the first batch of the null test has none."""
    base = make_result(index)
    meta = base.metadata.model_copy(
        update={"replicate": index, "keywords": ["k"], "scenario_path": ["a", "b"]}
    )
    template = VerificationResultTemplate(
        raw_llm_response="BCL2",
        verify_result=True,
        verify_granular_result=0.75,
        embedding_similarity_score=0.9,
        usage_metadata={"total": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}},
        parsed_llm_response={"target": "BCL2"},
    )
    rubric = VerificationResultRubric(llm_trait_scores={"clarity": 4, "safe": True})
    return base.model_copy(update={"metadata": meta, "template": template, "rubric": rubric})


def test_file_columns_have_the_declared_types(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_results([full_result(1)], path)

    schema = pq.read_schema(path)
    assert schema.field("replicate").type == pa.int64()
    assert schema.field("verify_result").type == pa.bool_()
    assert schema.field("verify_granular_result").type == pa.float64()
    assert schema.field("execution_time").type == pa.float64()
    assert schema.field("input_tokens").type == pa.int64()
    assert pa.types.is_list(schema.field("answering_tools").type)
    assert pa.types.is_struct(schema.field("template").type)
    template_type = schema.field("template").type
    assert template_type.field("verify_result").type == pa.bool_()
    # Free-form maps are JSON text, not an inferred struct of whatever keys came first.
    assert template_type.field("parsed_llm_response").type == pa.string()
    for field in RESULT_ARROW_SCHEMA:
        assert schema.field(field.name).type.equals(field.type), field.name


def test_all_null_first_batch_then_values_writes_and_reads(tmp_path: Path) -> None:
    # The first batch is nulls only in every optional column; without an explicit
    # schema those columns would be typed null and the later batch would not fit.
    results = [make_result(0), make_result(1), full_result(2), full_result(3)]
    path = tmp_path / "r.parquet"
    with ParquetResultWriter(path, batch_size=2) as writer:
        assert writer.write_many(results) == 4

    assert list(iter_parquet(path, batch_size=3)) == results
    table = pq.read_table(path, columns=["replicate", "verify_result", "total_tokens"])
    assert table.column("replicate").to_pylist() == [None, None, 2, 3]
    assert table.column("verify_result").to_pylist() == [None, None, True, True]
    assert table.column("total_tokens").to_pylist() == [None, None, 15, 15]
    assert table.schema.field("replicate").type == pa.int64()


def test_writer_writes_one_row_group_per_batch(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    with ParquetResultWriter(path, batch_size=5) as writer:
        writer.write_many(make_result(i) for i in range(16))
        assert writer.count == 16

    metadata = pq.ParquetFile(path).metadata
    assert metadata.num_rows == 16
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [
        5,
        5,
        5,
        1,
    ]
    assert metadata.row_group(0).column(0).compression == "ZSTD"


def test_summary_columns_are_derived_from_the_sections(tmp_path: Path) -> None:
    dict_granular = make_result(
        1, template=VerificationResultTemplate(verify_result=False, verify_granular_result=True)
    )
    results = [full_result(0), dict_granular, make_result(2)]
    path = tmp_path / "r.parquet"
    write_results(results, path, job_id="job-7")

    rows = pq.read_table(path).to_pylist()
    first = rows[0]
    assert first["answering_model"] == "langchain:answerer +[search]"
    assert first["parsing_model"] == "langchain:judge"
    assert first["answering_model_name"] == "answerer"
    assert first["answering_tools"] == ["search"]
    assert first["verify_granular_result"] == 0.75
    assert (first["input_tokens"], first["output_tokens"], first["total_tokens"]) == (10, 5, 15)
    assert first["rubric_evaluation_performed"] is False
    assert first["result_key"] == compute_unit_key(
        job_id="job-7",
        question_id="q0",
        template_id="t" * 32,
        answering_key=results[0].metadata.answering.canonical_key,
        parsing_key=results[0].metadata.parsing.canonical_key,
        replicate=0,
    )
    # A boolean granular result is a verdict, not a score: no float for it.
    assert rows[1]["verify_granular_result"] is None
    assert rows[1]["verify_result"] is False
    # No template section: its summary columns are null, the struct itself is null.
    assert rows[2]["verify_result"] is None
    assert rows[2]["template"] is None


def test_without_job_id_result_key_is_null(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_results([make_result()], path)
    assert pq.read_table(path, columns=["result_key"]).column(0).to_pylist() == [None]


def test_missing_columns_take_model_defaults(tmp_path: Path) -> None:
    # A file written before a field existed lacks its column; it must still read.
    path = tmp_path / "r.parquet"
    write_results([full_result(1)], path)
    table = pq.read_table(path)
    table = table.drop_columns(["scenario_path", "few_shot_example_count", "used_full_trace"])
    pq.write_table(table, path)

    (back,) = iter_parquet(path)
    assert back.metadata.scenario_path is None
    assert back.metadata.few_shot_example_count == 0
    assert back.used_full_trace is True
    assert back.template == full_result(1).template


def test_failed_write_leaves_no_file_and_keeps_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_results([make_result(0)], path)

    def exploding() -> Iterator[VerificationResult]:
        yield make_result(1)
        raise RuntimeError("collector lost")

    with pytest.raises(RuntimeError, match="collector lost"):
        write_results(exploding(), path, batch_size=1)
    assert [r.metadata.question_id for r in iter_parquet(path)] == ["q0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.parquet"]


def test_out_of_range_int_is_an_export_error(tmp_path: Path) -> None:
    result = make_result()
    huge = result.model_copy(
        update={"metadata": result.metadata.model_copy(update={"replicate": 2**70})}
    )
    path = tmp_path / "r.parquet"
    with pytest.raises(ExportError, match=r"r\.parquet"):
        write_results([huge], path)
    assert not path.exists()


def test_writer_refuses_writes_after_close(tmp_path: Path) -> None:
    writer = ParquetResultWriter(tmp_path / "r.parquet")
    writer.close()
    writer.close()  # idempotent
    with pytest.raises(ExportError, match="closed"):
        writer.write(make_result())
    assert list(iter_parquet(tmp_path / "r.parquet")) == []


def test_writer_into_missing_directory_fails_at_once(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="nowhere"):
        ParquetResultWriter(tmp_path / "nowhere" / "r.parquet")


def test_reading_garbage_is_an_export_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"definitely not parquet")
    with pytest.raises(ExportError, match=r"junk\.parquet.*not a readable Parquet"):
        iter_results(path)


def test_reading_a_foreign_parquet_file_is_an_export_error(tmp_path: Path) -> None:
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), path)
    with pytest.raises(ExportError, match="question_id"):
        iter_parquet(path)


def test_reading_a_newer_format_version_is_an_export_error(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_results([make_result()], path)
    table = pq.read_table(path)
    meta = {**table.schema.metadata, b"verifleet.version": b"99"}
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(ExportError, match="version 99"):
        iter_parquet(path)


def test_corrupt_json_cell_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_results([full_result(0), full_result(1)], path)
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[1]["template"]["usage_metadata"] = "{not json"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)

    results = iter_parquet(path)
    assert next(results) == full_result(0)
    with pytest.raises(ExportError, match="row 1"):
        next(results)


def test_missing_file_is_an_export_error_at_call_time(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"absent\.parquet: no such file"):
        iter_results(tmp_path / "absent.parquet")


def test_every_summary_column_is_filled_for_a_complete_result(tmp_path: Path) -> None:
    from verifleet.results._export.layout import SUMMARY_COLUMNS
    from verifleet.schemas import (
        VerificationResultDeepJudgment,
        VerificationResultDeepJudgmentRubric,
    )

    flags = {
        name: True
        for name in VerificationResultTemplate.model_fields
        if name.endswith(("_performed", "_applied", "_detected", "_success", "_reached"))
    }
    template = full_result(0).template
    assert template is not None
    usage = dict(template.usage_metadata or {})
    # A run with prices gives every result a cost (cost_usd is null without them).
    usage["total"] = {**usage.get("total", {}), "cost_usd": 0.001}
    complete = full_result(0).model_copy(
        update={
            "template": template.model_copy(
                update={
                    **flags,
                    "verify_result": False,
                    "embedding_model_used": "minilm",
                    "usage_metadata": usage,
                }
            ),
            "deep_judgment": VerificationResultDeepJudgment(deep_judgment_performed=True),
            "deep_judgment_rubric": VerificationResultDeepJudgmentRubric(),
        }
    )
    path = tmp_path / "r.parquet"
    write_results([complete], path, job_id="j")
    (row,) = pq.read_table(path, columns=[c.name for c in SUMMARY_COLUMNS]).to_pylist()
    assert [name for name, value in row.items() if value is None] == []
    assert row["deep_judgment_rubric_performed"] is False
