"""The viewer's scenario page in headless Chromium, offline in the report: each
scenario run's turns with the agent that answered and the handover that led there."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.browser import By, browser, wait_for
from _support.viewer_data import full_run, handed_scenario_run
from selenium.webdriver.remote.webdriver import WebDriver

from verifleet.orchestrator import write_results
from verifleet.viewer import FileRun, write_report

pytestmark = pytest.mark.integration

__all__ = ["browser"]


def test_the_scenario_page_shows_agents_and_handovers(browser: WebDriver, tmp_path: Path) -> None:
    run = handed_scenario_run(first_reply="BCL2 <b id=pwned>x</b>")
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
