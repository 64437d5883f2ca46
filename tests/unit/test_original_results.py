"""The original framework's result files and frames, held against verifleet.

The fixtures in ``fixtures/karenina_results/`` were written by the original's own
code (``build_results.py``, run with the original installed): its CLI export, its
results store's export, and the frames and template summary it computes from the
same results. verifleet reads both files into equal result sets, and every column
of every original frame is a column of verifleet's frame with the same values,
row for row.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from verifleet.orchestrator import read_results, write_results
from verifleet.schemas import VerificationResultSet
from verifleet.schemas._results.frames_rubric import rubric_frame

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "karenina_results"
ORIGINAL = json.loads((HERE / "frames.json").read_text())


@pytest.fixture(scope="module", params=["cli_export.json", "store_export.json"])
def results(request: pytest.FixtureRequest) -> VerificationResultSet:
    return read_results(HERE / request.param)


def _same(mine: Any, theirs: Any) -> bool:
    """Equal values (a missing value is None, NaN or pd.NA alike; the fixture
    stores them all as null)."""
    if mine is pd.NA or (isinstance(mine, float) and math.isnan(mine)):
        mine = None
    if hasattr(mine, "tolist"):
        mine = mine.tolist()
    if hasattr(mine, "item") and not isinstance(mine, list | dict | str):
        mine = mine.item()
    numbers = (int, float)
    if isinstance(mine, numbers) and isinstance(theirs, numbers):
        # A bool is a verdict, not a number: True must not equal 1. An int column
        # where the original's is float (NaN-padded) is the same value.
        if isinstance(mine, bool) or isinstance(theirs, bool):
            return type(mine) is type(theirs) and mine == theirs
        return math.isclose(mine, theirs)
    return (bool(mine == theirs) and type(mine) is type(theirs)) or (
        mine is None and theirs is None
    )


def _compare(frame: Any, name: str, *, dropped: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    original = ORIGINAL["frames"][name]
    missing = [c for c in original["columns"] if c not in frame.columns and c not in dropped]
    assert missing == [], f"{name}: columns the original has and verifleet lacks"
    assert len(frame) == len(original["rows"]), name
    for position, row in enumerate(original["rows"]):
        for column, theirs in zip(original["columns"], row, strict=True):
            if column in dropped:
                continue
            mine = frame[column].iloc[position]
            assert _same(mine, theirs), f"{name} row {position} {column}: {mine!r} != {theirs!r}"


def test_both_exports_read_into_the_same_results() -> None:
    cli = read_results(HERE / "cli_export.json")
    store = read_results(HERE / "store_export.json")
    assert [r.metadata.question_id for r in cli] == [f"q{n}" for n in range(1, 8)]
    assert cli.results == store.results
    [run] = cli.scenario_results or []
    assert (run.scenario_id, run.status, run.path, run.outcome_results) == (
        "triage",
        "completed",
        ["ask"],
        {"answered": True},
    )
    assert run.history[0].result_ids == [cli.results[-1].metadata.result_id]
    assert store.scenario_results is None  # the store keeps outcomes, not runs


def test_what_each_result_keeps(results: VerificationResultSet) -> None:
    by_id = {r.metadata.question_id: r for r in results}
    timed_out = by_id["q6"].metadata
    assert timed_out.failure is not None and timed_out.failure.category == "timeout"
    assert (timed_out.completed_without_errors, timed_out.error) == (
        False,
        "request timed out after 3 attempts",
    )
    content = by_id["q2"].metadata
    assert content.completed_without_errors is True and content.error is None
    assert content.failure is not None and content.failure.group == "content"
    assert by_id["q1"].metadata.caveats == ["embedding_override"]
    rubric = by_id["q1"].rubric
    assert rubric is not None and rubric.agentic_trait_scores is not None
    assert rubric.agentic_trait_scores["evidence.sources"] == ["pubmed"]
    assert (
        rubric.trait_provenance is not None
        and rubric.trait_provenance["mentions_bcl2"] == "dynamic"
    )
    assert by_id["q7"].metadata.scenario_path == ["ask"]


def test_template_summary_equals_the_originals(results: VerificationResultSet) -> None:
    """Auto-failed results (recursion limit, trace validation) count as failures."""
    summary = results.get_template_results().get_template_summary()
    assert summary == ORIGINAL["template_summary"]
    assert summary["pass_rate"] == pytest.approx(0.4)


def test_template_frames_have_every_original_column(results: VerificationResultSet) -> None:
    template = results.get_template_results()
    _compare(template.to_dataframe(), "template")
    _compare(template.to_regex_dataframe(), "template_regex")
    _compare(template.to_usage_dataframe(), "template_usage")
    _compare(template.to_usage_dataframe(totals_only=True), "template_usage_totals")


def test_rubric_frames_have_every_original_column(results: VerificationResultSet) -> None:
    # verifleet keeps one null row per result without an evaluated rubric (every
    # result stays countable); the original leaves them out.
    for name, deep in (("rubric", False), ("rubric_deep_judgment", True)):
        frame = rubric_frame(results.results, include_deep_judgment=deep)
        _compare(frame[frame["trait_name"].notna()].reset_index(drop=True), name)


def test_judgment_frames_have_every_original_column(results: VerificationResultSet) -> None:
    _compare(results.get_judgment_results().to_dataframe(), "judgment")
    _compare(results.get_rubric_judgments_results().to_dataframe(), "rubric_judgment")


def test_an_original_file_converts_to_verifleet_files_and_back(
    results: VerificationResultSet, tmp_path: Path
) -> None:
    for suffix in ("parquet", "json"):
        path = tmp_path / f"copy.{suffix}"
        write_results(results, path)
        assert read_results(path).results == results.results


def test_the_viewer_compares_an_original_run_with_a_verifleet_run(tmp_path: Path) -> None:
    """``verifleet view original.json new.parquet``: the original's export is a run
    like any other, and its evaluations match the new run's."""
    from fastapi.testclient import TestClient

    from verifleet.viewer import FileRun, create_app

    original = read_results(HERE / "cli_export.json")
    rerun = [r.model_copy(deep=True) for r in original]
    q2 = rerun[1]
    assert q2.template is not None and q2.metadata.question_id == "q2"
    q2.template.verify_result = True  # the new run passes what the original failed
    q2.metadata.failure = None
    path = tmp_path / "rerun.parquet"
    write_results(rerun, path)
    app = create_app([FileRun(HERE / "cli_export.json"), FileRun(path)])
    with TestClient(app) as client:
        overview = client.get("/api/runs/0/overview").json()
        assert overview["summary"] == ORIGINAL["template_summary"]
        found = client.get("/api/compare", params={"a": 0, "b": 1}).json()
    assert found["matched"] == len(original) and found["only_before"] == 0
    assert found["changed"] == 1
    [row] = found["rows"]
    assert (row["question_id"], row["verdict_a"], row["verdict_b"]) == ("q2", "fail", "pass")


def test_view_compare_opens_an_original_run_beside_a_verifleet_run(tmp_path: Path) -> None:
    """``verifleet view --compare original.json new.parquet`` as a user runs it: the
    URL it prints opens the comparison, whose API matches the two runs; with one
    file it refuses, naming the flag."""
    import urllib.request

    from _support.browser import ViewerProcess
    from _support.fleet import run_cli

    original = read_results(HERE / "cli_export.json")
    rerun = [r.model_copy(deep=True) for r in original]
    rerun[1].template.verify_result = True  # type: ignore[union-attr]
    new = tmp_path / "new.parquet"
    write_results(rerun, new)
    viewer = ViewerProcess("--compare", str(HERE / "cli_export.json"), str(new))
    try:
        assert f"open {viewer.url}#/compare?a=0&b=1" in viewer.output()
        with urllib.request.urlopen(viewer.url + "api/compare?a=0&b=1", timeout=10) as reply:
            found = json.load(reply)
    finally:
        viewer.stop()
    assert (found["matched"], found["changed"]) == (len(original), 1)
    refused = run_cli("view", "--compare", str(new))
    assert refused.returncode == 2 and "--compare needs exactly two RESULTS" in refused.stderr


_SHORTHANDS = {
    "the six status columns": [
        "success",
        "failure_category",
        "failure_group",
        "failure_stage",
        "failure_reason",
        "caveats",
    ],
    "ids": ["question_id", "template_id", "question_text", "keywords", "replicate"],
    "models and system prompts": [
        "answering_model",
        "parsing_model",
        "answering_system_prompt",
        "parsing_system_prompt",
    ],
}


def _documented_frames() -> dict[str, tuple[set[str], set[str]]]:
    """docs/compatibility.md's DataFrames table: per frame, the column names (and
    ``prefix_*`` patterns) it gives as the original's and as verifleet's own."""
    import re

    page = (Path(__file__).parents[2] / "docs" / "compatibility.md").read_text()
    table = page.split("### DataFrames", 1)[1].split("Different, and why", 1)[0]
    frames = {}
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        frame, original, added = (cell.strip() for cell in line.strip("|").split(" | "))
        names: list[set[str]] = []
        for cell in (original, added):
            found = set(re.findall(r"`([a-z_<>]+\*?)`", cell))
            for shorthand, columns in _SHORTHANDS.items():
                if re.search(rf"(^|, ){shorthand}(,|$)", cell):
                    found.update(columns)
            names.append(found)
        frames[frame.strip("`")] = (names[0], names[1])
    return frames


def _named(column: str, names: set[str]) -> bool:
    if column in names:
        return True
    if column.endswith("_skipped") and "<trait>_skipped" in names:
        return True
    return any(n.endswith("*") and column.startswith(n[:-1]) for n in names)


def test_the_compatibility_page_names_every_column_of_every_frame(
    results: VerificationResultSet,
) -> None:
    """Every column of every frame is on the page, as the original's (those the
    original's frames have) or as verifleet's own (those they lack)."""
    documented = _documented_frames()
    template = results.get_template_results()
    frames = {
        "get_template_results().to_dataframe()": ("template", template.to_dataframe()),
        "to_regex_dataframe()": ("template_regex", template.to_regex_dataframe()),
        "to_usage_dataframe()": ("template_usage", template.to_usage_dataframe()),
        "get_rubrics_results().to_dataframe()": (
            "rubric_deep_judgment",
            results.get_rubrics_results(include_deep_judgment=True).to_dataframe(),
        ),
        "get_judgment_results().to_dataframe()": (
            "judgment",
            results.get_judgment_results().to_dataframe(),
        ),
        "get_rubric_judgments_results().to_dataframe()": (
            "rubric_judgment",
            results.get_rubric_judgments_results().to_dataframe(),
        ),
    }
    assert set(documented) == set(frames)
    for title, (name, frame) in frames.items():
        theirs = set(ORIGINAL["frames"][name]["columns"])
        original_names, added_names = documented[title]
        for column in frame.columns:
            where = original_names if column in theirs else added_names
            assert _named(column, where), f"{title}: {column} is not listed where it belongs"
        for column in theirs:
            assert _named(column, original_names), f"{title}: the original's {column}"
