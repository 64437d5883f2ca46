"""The viewer's scenario page in headless Chromium, offline in the report: each
scenario run's turns with the agent that answered and the handover that led there."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.browser import By, browser, wait_for
from _support.viewer_data import full_run
from selenium.webdriver.remote.webdriver import WebDriver

from verifleet.orchestrator import write_results
from verifleet.schemas import ScenarioExecutionResult, ScenarioTurnRecord
from verifleet.viewer import FileRun, write_report

pytestmark = pytest.mark.integration

__all__ = ["browser"]


def test_the_scenario_page_shows_agents_and_handovers(browser: WebDriver, tmp_path: Path) -> None:
    run = ScenarioExecutionResult(
        scenario_id="handed",
        status="completed",
        path=["ask", "judge"],
        turn_count=2,
        history=[
            ScenarioTurnRecord(
                turn=0,
                node_id="ask",
                question_id="q0",
                question_text="Which gene?",
                agent_id="asker",
                raw_response="BCL2 <b id=pwned>x</b>",
                verify_result=True,
            ),
            ScenarioTurnRecord(
                turn=1,
                node_id="judge",
                question_id="q1",
                question_text="Was it right?",
                agent_id="guard",
                handover="transcript_prepend",
                raw_response="yes",
                prompt="[__user__] Which gene?\n\n---\n\nWas it right?",
                verify_result=False,
            ),
        ],
        trace=["edge ask -> END: condition raised, edge not taken: KeyError: 'x'"],
    )
    results = tmp_path / "r.parquet"
    write_results(full_run(2), results, scenario_results=[run])
    report = tmp_path / "report.html"
    write_report([FileRun(results)], report)
    browser.get(report.as_uri() + "#/run/0/scenarios")
    rows = wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".scenario-turns tr[data-turn]")
    )
    cells = [
        (
            r.find_element(By.CSS_SELECTOR, ".agent").text,
            r.find_element(By.CSS_SELECTOR, ".handover").text,
        )
        for r in rows
    ]
    assert cells == [("asker", "–"), ("guard", "transcript_prepend")]
    page = browser.find_element(By.ID, "main").text
    assert "condition raised, edge not taken" in page and "ask → judge" in page
    assert not browser.find_elements(By.ID, "pwned")  # replies show as text
