"""The viewer's scenario page: each scenario run with its turns' provenance
(agent, handover, question as sent), from a Parquet file's footer, over the
API and embedded in the static report."""

from __future__ import annotations

import json
from pathlib import Path

from _support.viewer_data import full_run, handed_scenario_run
from fastapi.testclient import TestClient

from verifleet.orchestrator import write_results
from verifleet.viewer import FileRun, create_app, report_html


def test_scenario_runs_show_each_turns_agent_and_handover(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_results(full_run(3), path, scenario_results=[handed_scenario_run()])
    with TestClient(create_app([FileRun(path)])) as client:
        [shown] = client.get("/api/runs/0/scenarios").json()
    assert shown["scenario_id"] == "handed" and shown["path"] == ["ask", "judge"]
    assert shown["trace"] == ["edge ask -> END: condition raised, edge not taken: KeyError: 'x'"]
    assert [(t["agent_id"], t["handover"]) for t in shown["turns"]] == [
        ("asker", None),
        ("guard", "transcript_prepend"),
    ]
    assert shown["turns"][1]["prompt"].endswith("\n\n---\n\nWas it right?")
    html = report_html([FileRun(path)])
    boot = json.loads(html.split('id="boot">', 1)[1].split("</script>", 1)[0])
    assert boot["runs"][0]["scenarios"] == [shown]
    # A file without scenario runs shows none (the page says so).
    plain = tmp_path / "plain.parquet"
    write_results(full_run(3), plain)
    with TestClient(create_app([FileRun(plain)])) as client:
        assert client.get("/api/runs/0/scenarios").json() == []
