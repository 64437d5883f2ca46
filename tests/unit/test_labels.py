"""Human labels: the labels file (one reader and writer), the label columns of
the exports, carrying labels to a derived file, and the viewer's write route
with its guards (Origin, JSON body, loopback or token)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _support.fleet import run_cli
from _support.viewer_data import full_run
from fastapi.testclient import TestClient

from verifleet.errors import StatisticsError
from verifleet.orchestrator import read_results, write_results
from verifleet.results.stats import (
    Label,
    append_label,
    carry_labels,
    label_cells,
    labels_path,
    read_label_entries,
    read_labels,
    unit_key,
)
from verifleet.viewer import FileRun, create_app

COUNT = 16


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.parquet"
    write_results(full_run(COUNT), path)
    return path


def test_a_later_line_replaces_an_earlier_one_and_null_withdraws(tmp_path: Path) -> None:
    path = tmp_path / "x.labels.jsonl"
    first, second = ("q1", "m", 1), ("q2", "m", None)
    append_label(path, first, True, "looks right")
    append_label(path, second, False)
    append_label(path, first, False, "no: wrong unit")
    assert read_label_entries(path) == {
        first: Label(False, "no: wrong unit"),
        second: Label(False, None),
    }
    append_label(path, second, None)
    assert read_labels(path) == {first: False}
    # Control: a line that is not a label names its line number.
    with path.open("a") as out:
        out.write('{"question_id": "q3", "answering": "m", "correct": "yes"}\n')
    with pytest.raises(StatisticsError, match=r":5: 'correct' must be"):
        read_labels(path)


def test_export_columns_hold_the_labels_and_nothing_else_changes(run_file: Path) -> None:
    results = list(read_results(run_file))
    labelled = {
        unit_key(results[0]): Label(False, "the gene is wrong"),
        unit_key(results[5]): Label(True),
    }
    out = run_file.with_name("labelled.parquet")
    write_results(results, out, labels=label_cells(labelled))
    table = pq.read_table(
        out, columns=["question_id", "answering_model_name", "label_correct", "label_note"]
    )
    rows = table.to_pylist()
    by_key = {unit_key(r): labelled.get(unit_key(r)) for r in results}
    for result, row in zip(results, rows, strict=True):
        expected = by_key[unit_key(result)]
        assert row["label_correct"] == (expected.correct if expected else None)
        assert row["label_note"] == (expected.note if expected else None)
    # A label is about the answer: both judges of results[0]'s answer carry it.
    same_answer = [r for r in results if unit_key(r) == unit_key(results[0])]
    assert len(same_answer) == 2
    assert sum(1 for row in rows if row["label_correct"] is False) == 2
    # Labels never change what reads back.
    assert list(read_results(out)) == results
    csv_out = run_file.with_name("labelled.csv")
    write_results(results, csv_out, labels=label_cells(labelled))
    with csv_out.open(newline="") as handle:
        notes = [row["label_note"] for row in csv.DictReader(handle)]
    assert notes.count("the gene is wrong") == 2


def test_carry_labels_keeps_the_destinations_own(run_file: Path) -> None:
    other = run_file.with_name("other.parquet")
    append_label(labels_path(run_file), ("q1", "m", 1), True, "source")
    append_label(labels_path(run_file), ("q2", "m", 1), True)
    append_label(labels_path(other), ("q1", "m", 1), False, "destination's own")
    merged = carry_labels(run_file, other)
    assert merged == {
        ("q1", "m", 1): Label(False, "destination's own"),
        ("q2", "m", 1): Label(True),
    }
    assert read_label_entries(labels_path(other)) == merged


def test_export_command_writes_the_labels_into_the_new_file(run_file: Path) -> None:
    results = list(read_results(run_file))
    append_label(labels_path(run_file), unit_key(results[2]), True, "checked")
    out = run_file.with_name("exported.parquet")
    done = run_cli("export", str(run_file), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "(1 with a human label)" in done.stdout
    column = pq.read_table(out, columns=["label_correct"]).column("label_correct").to_pylist()
    assert column.count(True) == 2 and column.count(None) == COUNT - 2
    assert read_labels(labels_path(out)) == {unit_key(results[2]): True}


def _post(client: TestClient, body: object, **headers: str) -> tuple[int, dict[str, object]]:
    reply = client.post("/api/runs/0/results/3/label", content=json.dumps(body), headers=headers)
    return reply.status_code, reply.json()


JSON = {"content-type": "application/json"}


def test_the_label_route_writes_beside_the_file_behind_its_guards(run_file: Path) -> None:
    result = list(read_results(run_file))[3]
    app = create_app([FileRun(run_file)], token="s3cret")
    with TestClient(app, base_url="http://127.0.0.1:8600") as client:
        client.cookies.set("verifleet_viewer_token", "s3cret")
        own = {"origin": "http://127.0.0.1:8600", **JSON}
        status, body = _post(client, {"correct": False, "note": "wrong gene"}, **own)
        assert status == 200, body
        assert body["label"] == {"correct": False, "note": "wrong gene"}
        assert read_labels(labels_path(run_file)) == {unit_key(result): False}
        detail = client.get("/api/runs/0/results/3").json()
        assert detail["labelling"]["label"]["note"] == "wrong gene"
        # The recorded verdict and the results file are as they were.
        assert result.template is not None
        assert detail["result"]["template"]["verify_result"] == result.template.verify_result
        assert list(read_results(run_file))[3] == result
        # Refused: another site's page, no Origin, a form body, a bad label.
        assert _post(client, {"correct": True}, origin="http://evil.example", **JSON)[0] == 403
        assert _post(client, {"correct": True}, **JSON)[0] == 403
        form = {"origin": "http://127.0.0.1:8600", "content-type": "text/plain"}
        assert _post(client, {"correct": True}, **form)[0] == 403
        assert _post(client, {"correct": "yes"}, **own)[0] == 400
        assert _post(client, {"correct": True, "extra": 1}, **own)[0] == 400
        # None of the refused requests changed the label.
        assert read_labels(labels_path(run_file)) == {unit_key(result): False}
    # Without a token only this machine may write (the test client is not a loopback peer).
    with TestClient(create_app([FileRun(run_file)]), base_url="http://127.0.0.1:8600") as client:
        status, body = _post(client, {"correct": True}, origin="http://127.0.0.1:8600", **JSON)
        assert status == 403 and "this machine" in str(body["detail"])
        # Reading is not affected.
        assert client.get("/api/runs/0/results/3").status_code == 200
