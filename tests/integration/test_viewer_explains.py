"""The viewer explains what run it shows, in headless Chromium: the header (source,
dates, models, version), the answer column, the question x model matrix across
runs whose models differ, the same in the offline report, and no stray "null"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.browser import By, ViewerProcess, browser, wait_for
from _support.fleet import run_cli
from _support.viewer_data import ANSWERING, full_run
from selenium.webdriver.remote.webdriver import WebDriver

from verifleet import __version__
from verifleet.orchestrator import write_results
from verifleet.schemas import ModelIdentity, VerificationResult

pytestmark = pytest.mark.integration

__all__ = ["browser"]

COUNT = 48  # 12 questions x 2 answering x 2 parsing models


def _other_model(result: VerificationResult) -> VerificationResult:
    """The same result from another answering model (a run of model gamma)."""
    meta = result.metadata.model_copy(
        update={"answering": ModelIdentity(interface="openai_endpoint", model_name="gamma-8b")}
    )
    return result.model_copy(update={"metadata": meta})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("explains")
    mine, gamma = folder / "alpha-beta.parquet", folder / "gamma.jsonl"
    write_results(full_run(COUNT), mine)
    # Only one answering model: every result of alpha-7b, now from gamma-8b.
    write_results([_other_model(r) for r in full_run(COUNT)[::2]], gamma)
    return mine, gamma


@pytest.fixture(scope="module")
def viewer(files: tuple[Path, Path]) -> Iterator[ViewerProcess]:
    process = ViewerProcess(str(files[0]), str(files[1]))
    try:
        yield process
    finally:
        process.stop()


def _open(driver: WebDriver, url: str) -> None:
    before = driver.execute_script("return document.body && document.body.dataset.rendered")
    driver.get(url)
    wait_for(
        driver,
        lambda d: d.execute_script("return document.body.dataset.rendered") not in (None, before),
    )


def _info(driver: WebDriver) -> dict[str, str]:
    return {
        dd.get_attribute("data-info"): dd.text
        for dd in driver.find_elements(By.CSS_SELECTOR, "#run-info dd")
    }


def _no_null(driver: WebDriver) -> None:
    text = driver.find_element(By.TAG_NAME, "main").text
    assert "null" not in text.lower().split(), text[:2000]
    assert "nullnull" not in text


def test_the_header_says_what_run_is_shown(
    viewer: ViewerProcess, browser: WebDriver, files: tuple[Path, Path]
) -> None:
    _open(browser, viewer.url + "#/run/0")
    info = _info(browser)
    assert info["source"] == f"file {files[0].resolve()}"
    assert "parquet" in info["modified"] and info["modified"].startswith("20")
    assert info["results"].startswith(f"{COUNT} · produced 2026-11-22T09:00:00")
    assert info["answering"] == ", ".join(f"openai_endpoint:{m}" for m in ANSWERING)
    assert "judge-small" in info["parsing"] and "judge-large" in info["parsing"]
    assert info["run-name"] == "viewer-test"
    assert info["version"] == __version__
    _no_null(browser)
    _open(browser, viewer.url + "#/run/1/table")
    assert _info(browser)["answering"] == "openai_endpoint:gamma-8b"


def test_the_table_has_an_answer_column_that_search_reaches(
    viewer: ViewerProcess, browser: WebDriver
) -> None:
    _open(browser, viewer.url + "#/run/0/table?search=case%2017)")
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.result-row")
    assert len(rows) == 1
    answer = rows[0].find_element(By.CSS_SELECTOR, "td.answer")
    assert answer.get_attribute("title") == (
        "The target is BCL24 and it acts in the pancreas (case 17)."
    )
    headers = [th.get_attribute("data-sort") for th in browser.find_elements(By.CSS_SELECTOR, "th")]
    assert "answer" in headers
    _no_null(browser)


def test_the_matrix_compares_different_models_question_by_question(
    viewer: ViewerProcess, browser: WebDriver
) -> None:
    _open(browser, viewer.url + "#/compare?a=0&b=1")
    assert browser.find_element(By.CSS_SELECTOR, '[data-compare="matched"] b').text == "0"
    browser.find_element(By.CSS_SELECTOR, "#compare-hint a").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#matrix tr.matrix-row"))
    labels = [
        th.get_attribute("data-column")
        for th in browser.find_elements(By.CSS_SELECTOR, "#matrix th[data-column]")
    ]
    assert labels == [
        "alpha-beta.parquet: openai_endpoint:alpha-7b",
        "alpha-beta.parquet: openai_endpoint:beta-70b",
        "gamma.jsonl: openai_endpoint:gamma-8b",
    ]
    rows = browser.find_elements(By.CSS_SELECTOR, "#matrix tr.matrix-row")
    assert len(rows) == 12
    first = {
        td.get_attribute("data-verdict")
        for td in rows[0].find_elements(By.CSS_SELECTOR, "td[data-verdict]")
    }
    assert first == {"fail"}  # q000 fails for every model (question % 3 == 0)
    # A cell opens that run's result.
    rows[1].find_elements(By.CSS_SELECTOR, "td[data-verdict] a")[2].click()
    wait_for(browser, lambda d: "#/run/1/result/" in d.current_url)
    _open(browser, viewer.url + "#/matrix?by=parsing&runs=0")
    # The result page's own render can be the one _open saw (the click above
    # did not wait for it): wait for the matrix itself.
    headers = wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#matrix th[data-column]")
    )
    judges = [th.get_attribute("data-column") for th in headers]
    assert judges == ["openai_endpoint:judge-small", "openai_endpoint:judge-large"]
    _no_null(browser)


def test_the_report_has_the_header_every_result_page_and_the_matrix_offline(
    browser: WebDriver, files: tuple[Path, Path]
) -> None:
    out = files[0].parent / "report.html"
    done = run_cli("report", str(files[0]), str(files[1]), "--out", str(out))
    assert done.returncode == 0, done.stderr
    _open(browser, out.as_uri() + "#/run/0")
    info = _info(browser)
    assert info["source"] == f"file {files[0].resolve()}"
    assert "report written" in info["version"]
    _no_null(browser)
    # Every result's page is in the file: open one from the table, offline.
    _open(browser, out.as_uri() + "#/run/0/table?search=case%2017)")
    browser.find_element(By.CSS_SELECTOR, "tr.result-row").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "answer"))
    assert browser.find_element(By.ID, "answer").text == (
        "The target is BCL24 and it acts in the pancreas (case 17)."
    )
    assert browser.find_element(By.ID, "question").text == "Which gene is targeted in case 4?"
    _open(browser, out.as_uri() + "#/run/1/result/5")
    assert "gamma-8b" in browser.find_element(By.TAG_NAME, "main").text
    _no_null(browser)
    _open(browser, out.as_uri() + "#/matrix")
    assert browser.find_element(By.ID, "matrix-info").get_attribute("data-total") == "12"
    columns = browser.find_elements(By.CSS_SELECTOR, "#matrix th[data-column]")
    assert [c.get_attribute("data-column").split(": ")[1] for c in columns] == [
        "openai_endpoint:alpha-7b",
        "openai_endpoint:beta-70b",
        "openai_endpoint:gamma-8b",
    ]
    _no_null(browser)
