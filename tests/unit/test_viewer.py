"""The viewer's server side without a browser: the summary index and its queries,
the overview numbers, random Parquet access, the report page and the token rule."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _support.result_variety import varied_results
from _support.viewer_data import full_run, one_result
from fastapi.testclient import TestClient

from verifleet.orchestrator import read_parquet_rows, read_results, write_results
from verifleet.schemas import ExportError, VerificationResultSet
from verifleet.viewer import (
    FileRun,
    ResultIndex,
    TableQuery,
    ViewerError,
    check_binding,
    create_app,
    overview,
    report_html,
    template_summary,
    wilson_interval,
)
from verifleet.viewer._parquet_index import parquet_rows


def _index(results: list) -> ResultIndex:  # type: ignore[type-arg]
    index = ResultIndex()
    index.add(results)
    return index


def test_wilson_interval_matches_the_textbook_values() -> None:
    # 8 of 10: the Wilson 95 % interval is [0.490, 0.943] (Agresti & Coull 1998).
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and 0.15 < high < 0.17
    low, high = wilson_interval(20, 20)
    assert 0.83 < low < 0.85 and high == 1.0


@pytest.mark.parametrize(
    "results",
    [varied_results(), full_run(48), [], [r for r in full_run(12) if r.template is None]],
    ids=["variety", "full", "empty", "no-template"],
)
def test_overview_summary_equals_get_template_summary(results: list) -> None:  # type: ignore[type-arg]
    expected = VerificationResultSet(results=results).get_template_results().get_template_summary()
    index = _index(results)
    assert template_summary(index.frame) == expected
    assert overview(index)["summary"] == expected


def test_pass_rates_per_pair_with_wilson_bounds() -> None:
    results = full_run(48)
    rates = overview(_index(results))["pass_rates"]
    assert len(rates) == 4
    for entry in rates:
        pair = [
            r
            for r in results
            if r.metadata.answering_model == entry["answering"]
            and r.metadata.parsing_model == entry["parsing"]
            and r.template is not None
            and r.template.template_verification_performed
        ]
        passed = sum(r.template.verify_result is True for r in pair)  # type: ignore[union-attr]
        assert (entry["total"], entry["passed"]) == (len(pair), passed)
        assert (entry["low"], entry["high"]) == wilson_interval(passed, len(pair))


def test_table_filters_sort_and_pages() -> None:
    results = full_run(48)
    index = _index(results)
    page = index.page(TableQuery(verdict="fail", answering="openai_endpoint:alpha-7b", limit=1000))
    expected = [
        i
        for i, r in enumerate(results)
        if r.metadata.completed_without_errors
        and r.template is not None
        and r.template.verify_result is False
        and r.metadata.answering_model == "openai_endpoint:alpha-7b"
    ]
    assert [row["row"] for row in page["rows"]] == expected and page["total"] == len(expected)
    anatomy = index.page(TableQuery(keyword="anatomy", limit=1000))
    assert {row["question_id"] for row in anatomy["rows"]} == {
        r.metadata.question_id for r in results if "anatomy" in (r.metadata.keywords or [])
    }
    errors = index.page(TableQuery(error="yes", search="HTTP 503"))
    assert errors["total"] == sum(not r.metadata.completed_without_errors for r in results)
    by_time = index.page(TableQuery(sort="-execution_time", limit=5))["rows"]
    times = [row["execution_time"] for row in by_time]
    assert times == sorted(times, reverse=True) and times[0] == 6.25
    second = index.page(TableQuery(offset=40, limit=20))
    assert [row["row"] for row in second["rows"]] == list(range(40, 48))
    with pytest.raises(ValueError, match="unknown verdict"):
        index.page(TableQuery(verdict="maybe"))
    with pytest.raises(ValueError, match="cannot sort"):
        index.page(TableQuery(sort="nonsense"))
    with pytest.raises(ValueError, match="limit"):
        index.page(TableQuery(limit=0))


def test_read_parquet_rows_reads_single_rows_across_row_groups(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    results = full_run(30)
    from verifleet.orchestrator import ParquetResultWriter

    with ParquetResultWriter(path, batch_size=7) as writer:  # several row groups
        writer.write_many(results)
    assert read_parquet_rows(path, [0, 29, 13, 13]) == [
        results[0],
        results[29],
        results[13],
        results[13],
    ]
    with pytest.raises(ExportError, match="no row 30"):
        read_parquet_rows(path, [30])
    run = FileRun(path)
    assert run.result(8) == results[8]
    with pytest.raises(ViewerError, match="no result 30"):
        run.result(30)


def test_report_embeds_data_that_cannot_close_its_script(tmp_path: Path) -> None:
    hostile = one_result(0)
    meta = hostile.metadata.model_copy(update={"question_text": "</script><b id=x>owned</b>"})
    path = tmp_path / "r.json"
    write_results([hostile.model_copy(update={"metadata": meta})], path)
    html = report_html([FileRun(path)], title="t</script>")
    assert "</script><b id=x>" not in html
    assert html.count("</script>") == 2  # the data element and the inlined script
    assert "\\u003c/script>\\u003cb id=x>owned\\u003c/b>" in html
    assert "<!--" not in html.split('id="boot">', 1)[1].split("</script>", 1)[0]


def test_binding_beyond_loopback_needs_a_token() -> None:
    check_binding("127.0.0.1", None)
    check_binding("0.0.0.0", "s3cret")
    with pytest.raises(ViewerError, match="give a token"):
        check_binding("0.0.0.0", None)


def test_token_is_required_on_every_request(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_results(full_run(8), path)
    app = create_app([FileRun(path)], token="s3cret")
    with TestClient(app) as client:
        assert client.get("/api/runs").status_code == 401
        assert client.get("/?token=wrong").status_code == 401
        assert (
            client.get("/api/runs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        )
        # Opening the page with the token leaves a cookie for the page's own requests.
        assert client.get("/?token=s3cret").status_code == 200
        assert client.get("/api/runs/0/overview").status_code == 200
    with TestClient(create_app([FileRun(path)])) as client:
        assert client.get("/api/runs/0/results/3").json()["result"] == read_results(path)[
            3
        ].model_dump(mode="json")
        assert client.get("/api/runs/0/results/99").status_code == 404
        assert client.get("/api/runs/5/overview").status_code == 404
        assert client.get("/api/runs/0/results?verdict=maybe").status_code == 400


@pytest.mark.parametrize("maker", [lambda: full_run(60), varied_results], ids=["full", "variety"])
def test_parquet_columns_index_equals_the_result_by_result_index(
    tmp_path: Path, maker: object
) -> None:
    results = maker()  # type: ignore[operator]
    path = tmp_path / "r.parquet"
    from verifleet.orchestrator import ParquetResultWriter

    with ParquetResultWriter(path, batch_size=11) as writer:  # several batches
        writer.write_many(results)
    assert parquet_rows(path) is not None  # the column path, not the fallback
    from_columns = FileRun(path).index
    from_models = _index(results)
    pd.testing.assert_frame_equal(from_columns.frame, from_models.frame)
    pd.testing.assert_frame_equal(from_columns.trait_frame, from_models.trait_frame)
    assert overview(from_columns) == overview(from_models)


def test_appending_while_read_equals_indexing_at_once() -> None:
    # A live job's index grows between reads; the frames and the memoised overview
    # must match an index built from all results in one go.
    results = full_run(40)
    growing = ResultIndex()
    growing.add(results[:15])
    first = growing.memo("overview", overview)
    assert first["summary"]["num_results"] == len(growing.frame[growing.frame["template"]])
    growing.add(results[15:])
    whole = _index(results)
    pd.testing.assert_frame_equal(growing.frame, whole.frame)
    pd.testing.assert_frame_equal(growing.trait_frame, whole.trait_frame)
    assert growing.memo("overview", overview) == overview(whole) != first
