"""Two attacks on the viewer, replayed for real (issue 20, item 6):

- Result data that holds ``<!--<script>`` or ``</script>`` (a question, an
  answer: anything a benchmark or a model wrote) must not stop the report or the
  served page from rendering, and shows as text. Opened in headless Chromium.
- DNS rebinding: a page on another site that re-points its name at 127.0.0.1
  sends requests whose ``Host`` header is its own name; the viewer refuses them.
  Replayed with raw HTTP to 127.0.0.1 carrying a foreign ``Host``.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.browser import By, ViewerProcess, browser, wait_for
from _support.fleet import run_cli
from _support.viewer_data import full_run
from selenium.webdriver.remote.webdriver import WebDriver

from verifleet.orchestrator import write_results

pytestmark = pytest.mark.integration

__all__ = ["browser"]

HOSTILE = "Capital? <!--<script>alert(1)</script> and </script><b id=pwned>x</b>"


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = full_run(8)
    first = results[0]
    results[0] = first.model_copy(
        update={"metadata": first.metadata.model_copy(update={"question_text": HOSTILE})}
    )
    path = tmp_path_factory.mktemp("attacks") / "hostile.parquet"
    write_results(results, path)
    return path


@pytest.fixture(scope="module")
def viewer(hostile_file: Path) -> Iterator[ViewerProcess]:
    process = ViewerProcess(str(hostile_file))
    try:
        yield process
    finally:
        process.stop()


def _shows_the_hostile_text(driver: WebDriver) -> None:
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.result-row"))
    cells = [c.get_attribute("title") for c in driver.find_elements(By.CSS_SELECTOR, "td[title]")]
    assert HOSTILE in cells
    assert not driver.find_elements(By.ID, "pwned")  # text, never markup


def test_the_report_renders_data_that_holds_comment_and_script_tags(
    browser: WebDriver, hostile_file: Path
) -> None:
    out = hostile_file.parent / "report.html"
    done = run_cli("report", str(hostile_file), "--out", str(out))
    assert done.returncode == 0, done.stderr
    browser.get(out.as_uri() + "#/run/0/table")
    _shows_the_hostile_text(browser)


def test_the_served_page_renders_the_same_data(browser: WebDriver, viewer: ViewerProcess) -> None:
    browser.get(viewer.url + "#/run/0/table")
    _shows_the_hostile_text(browser)
    browser.get(viewer.url + "#/run/0/result/0")
    question = wait_for(browser, lambda d: d.find_elements(By.ID, "question"))
    assert question[0].text == HOSTILE


def _get(port: int, host: str, path: str = "/api/runs") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_rebound_host_name_is_refused(viewer: ViewerProcess) -> None:
    port = viewer.port
    assert _get(port, f"attacker.example:{port}") == 403
    assert _get(port, "attacker.example") == 403
    assert _get(port, f"127.0.0.1.attacker.example:{port}", "/") == 403
    assert _get(port, f"127.0.0.1:{port}") == 200
    assert _get(port, f"localhost:{port}") == 200
    assert _get(port, f"[::1]:{port}") == 200
