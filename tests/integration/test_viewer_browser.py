"""``verifleet view`` and ``verifleet report`` in a real headless Chromium.

One viewer process (two runs: a Parquet file and a JSON Lines re-run with some
verdicts flipped) and one browser serve the whole module; every check reads what
the page shows and compares it with the result model's own numbers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.browser import By, ViewerProcess, browser, decode_png, png_size, wait_for
from _support.fleet import run_cli
from _support.redis_server import free_port
from _support.viewer_data import full_run
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from verifleet.orchestrator import read_results, write_results
from verifleet.orchestrator._local.tally import PassRateTally
from verifleet.results.stats import replicate_stats
from verifleet.schemas import VerificationResultSet

pytestmark = pytest.mark.integration

__all__ = ["browser"]

COUNT = 120  # 30 questions x 2 answering x 2 parsing models: more than one table page
FLIPPED = frozenset({1, 2, 3, 40, 77})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("viewer")
    before, after = folder / "before.parquet", folder / "after.jsonl"
    write_results(full_run(COUNT), before)
    write_results(full_run(COUNT, flipped=FLIPPED), after)
    return before, after


@pytest.fixture(scope="module")
def results(files: tuple[Path, Path]) -> VerificationResultSet:
    return read_results(files[0])


@pytest.fixture(scope="module")
def viewer(files: tuple[Path, Path]) -> Iterator[ViewerProcess]:
    process = ViewerProcess(str(files[0]), str(files[1]))
    try:
        yield process
    finally:
        process.stop()


def _open(driver: WebDriver, url: str) -> None:
    """Load ``url`` and wait until the page has rendered it."""
    before = driver.execute_script("return document.body && document.body.dataset.rendered")
    driver.get(url)
    wait_for(
        driver,
        lambda d: d.execute_script("return document.body.dataset.rendered") not in (None, before),
    )


def _rerendered(driver: WebDriver, action: object) -> None:
    """Run ``action`` (a callable) and wait for the page's next render."""
    count = driver.execute_script("return document.body.dataset.rendered")
    action()  # type: ignore[operator]
    wait_for(driver, lambda d: d.execute_script("return document.body.dataset.rendered") != count)


def _card(driver: WebDriver, key: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, f'[data-summary="{key}"] b').text)


def _expected_cards(results: VerificationResultSet) -> dict[str, str]:
    summary = results.get_template_results().get_template_summary()
    return {
        key: f"{100 * value:.1f}%" if key == "pass_rate" else f"{value:,}"
        for key, value in summary.items()
    }


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"  # the page's own rounding (100 * x, then one decimal)


def _check_overview(driver: WebDriver, results: VerificationResultSet) -> None:
    expected = _expected_cards(results)
    assert {key: _card(driver, key) for key in expected} == expected
    # One bar per answering x parsing pair, its rate that pair's summary pass rate,
    # and around it the interval the CLI's end table prints for the same results
    # (questions as clusters; Wilson's when each question has one verdict).
    tally = PassRateTally()
    for result in results:
        tally.add(result)
    pairs = driver.find_elements(By.CSS_SELECTOR, "#pass-rate-chart g.pair")
    shown = {(g.get_attribute("data-answering"), g.get_attribute("data-parsing")): g for g in pairs}
    assert len(shown) == 4
    for answering, subset in results.group_by_model().items():
        for parsing, pair in subset.group_by_model("parsing").items():
            g = shown[(answering, parsing)]
            rate, low, high = (float(g.get_attribute(f"data-{k}")) for k in ("rate", "low", "high"))
            summary = pair.get_template_results().get_template_summary()
            assert rate == pytest.approx(summary["pass_rate"])
            assert 0 < low < rate < high < 1
            interval = tally.pairs[(answering, parsing)].interval()
            assert interval is not None
            assert (low, high) == (interval.low, interval.high)
            assert g.get_attribute("data-method") == interval.method
            text = g.find_element(By.CSS_SELECTOR, "text.rate-text").text
            assert f"[{_pct(interval.low)}–{_pct(interval.high)}]" in text
    _check_replicates(driver, results)


def _check_replicates(driver: WebDriver, results: VerificationResultSet) -> None:
    """The replicate table and the flakiest questions, against stats.replicate_stats."""
    by_pair: dict[tuple[str, str], dict[str, list[bool]]] = {}
    for r in results:
        verdict = r.template.verify_result if r.template is not None else None
        if isinstance(verdict, bool):
            pair = (r.metadata.answering_model, r.metadata.parsing_model)
            by_pair.setdefault(pair, {}).setdefault(r.metadata.question_id, []).append(verdict)
    k = max(len(v) for questions in by_pair.values() for v in questions.values())
    if k == 1:
        assert driver.find_elements(By.ID, "no-replicates")
        assert not driver.find_elements(By.ID, "flaky")
        return
    for (answering, parsing), questions in by_pair.items():
        row = driver.find_element(
            By.CSS_SELECTOR,
            f'#replicates tr[data-answering="{answering}"][data-parsing="{parsing}"]',
        )
        figures = replicate_stats(questions, k=k)
        cell = {
            name: row.find_element(By.CSS_SELECTOR, f'[data-figure="{name}"]').text
            for name in ("pass_at_k", "pass_hat_k", "flaky")
        }
        assert cell == {
            "pass_at_k": _pct(figures.pass_at_k or 0.0),
            "pass_hat_k": _pct(figures.pass_hat_k or 0.0),
            "flaky": str(figures.flaky),
        }
    flaky = {
        (question, answering, parsing)
        for (answering, parsing), questions in by_pair.items()
        for question, verdicts in questions.items()
        if 0 < sum(verdicts) < len(verdicts)
    }
    rows = driver.find_elements(By.CSS_SELECTOR, "#flaky tr.flaky-row")
    listed = {
        (
            row.get_attribute("data-question"),
            row.get_attribute("data-answering"),
            row.get_attribute("data-parsing"),
        )
        for row in rows
    }
    assert len(rows) == min(10, len(flaky)) and listed <= flaky


def test_overview_shows_the_template_summary_and_counts(
    viewer: ViewerProcess, browser: WebDriver, results: VerificationResultSet
) -> None:
    _open(browser, viewer.url + "#/run/0")
    _check_overview(browser, results)
    errors = sum(not r.metadata.completed_without_errors for r in results)
    abstentions = sum(bool(r.template and r.template.abstention_detected) for r in results)
    auto_fails = sum(
        len(r.deep_judgment_rubric.traits_without_valid_excerpts or [])
        for r in results
        if r.deep_judgment_rubric
    )
    total = browser.find_element(By.CSS_SELECTOR, "#counts")
    assert total.find_element(By.CSS_SELECTOR, '[data-total="errors"]').text == str(errors)
    assert total.find_element(By.CSS_SELECTOR, '[data-total="abstentions"]').text == str(
        abstentions
    )
    assert total.find_element(
        By.CSS_SELECTOR, '[data-total="deep_judgment_auto_fails"]'
    ).text == str(auto_fails)
    # Rubric heat map: one row per answering model, a column per trait score.
    heat = browser.find_elements(By.CSS_SELECTOR, "#rubric-heatmap tr[data-model]")
    assert len(heat) == 2
    clarity = [row.find_element(By.CSS_SELECTOR, '[data-trait="clarity"]') for row in heat]
    for cell in clarity:
        mean = float(cell.find_element(By.CSS_SELECTOR, ".mean").text)
        low, high = float(cell.get_attribute("data-low")), float(cell.get_attribute("data-high"))
        assert 1 <= low < mean < high <= 5
        assert cell.find_element(By.CSS_SELECTOR, ".ci").text == f"[{low:.2f}–{high:.2f}]"
    # Granular histograms hold every granular score.
    counts = browser.find_elements(By.CSS_SELECTOR, "#granular rect[data-count]")
    scored = sum(
        r.template is not None and r.template.verify_granular_result is not None for r in results
    )
    assert sum(int(c.get_attribute("data-count")) for c in counts) == scored


def test_filtering_and_paging_the_question_table(
    viewer: ViewerProcess, browser: WebDriver, results: VerificationResultSet
) -> None:
    _open(browser, viewer.url + "#/run/0/table")
    info = browser.find_element(By.ID, "page-info")
    assert info.get_attribute("data-total") == str(COUNT)
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.result-row")) == 50

    _rerendered(
        browser,
        lambda: Select(browser.find_element(By.ID, "filter-verdict")).select_by_value("fail"),
    )
    failed = [
        r
        for r in results
        if r.metadata.completed_without_errors and r.template.verify_result is False
    ]
    assert browser.find_element(By.ID, "page-info").get_attribute("data-total") == str(len(failed))
    verdicts = {
        row.get_attribute("data-verdict")
        for row in browser.find_elements(By.CSS_SELECTOR, "tr.result-row")
    }
    assert verdicts == {"fail"}

    answering = "openai_endpoint:beta-70b"
    _rerendered(
        browser,
        lambda: Select(browser.find_element(By.ID, "filter-answering")).select_by_value(answering),
    )
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.result-row")
    expected = sorted(
        i for i, r in enumerate(results) if r in failed and r.metadata.answering_model == answering
    )
    assert sorted(int(row.get_attribute("data-row")) for row in rows) == expected

    # Errors and free-text search (typed into the box, as a user would).
    _open(browser, viewer.url + "#/run/0/table?error=yes")
    errored = [i for i, r in enumerate(results) if not r.metadata.completed_without_errors]
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.result-row")
    assert sorted(int(row.get_attribute("data-row")) for row in rows) == errored
    _open(browser, viewer.url + "#/run/0/table")
    browser.find_element(By.ID, "filter-search").send_keys("case 7?")
    # Typing may take more than the box's 350 ms pause on a busy machine (one
    # redraw per pause), so wait for the page to settle on the search's rows.
    shown = "return [...document.querySelectorAll('tr.result-row')].map(r => +r.dataset.row)"
    wait_for(browser, lambda d: d.execute_script(shown) == [28, 29, 30, 31])
    assert "search=case+7%3F" in browser.current_url

    # Paging: the second page starts at row 50.
    _open(browser, viewer.url + "#/run/0/table")
    _rerendered(browser, lambda: browser.find_element(By.ID, "page-next").click())
    first = browser.find_element(By.CSS_SELECTOR, "tr.result-row")
    assert first.get_attribute("data-row") == "50"


def test_result_page_shows_parsed_fields_checks_excerpts_and_trace(
    viewer: ViewerProcess, browser: WebDriver, results: VerificationResultSet
) -> None:
    _open(browser, viewer.url + "#/run/0/table?verdict=fail")
    row = browser.find_element(By.CSS_SELECTOR, "tr.result-row")
    index = int(row.get_attribute("data-row"))
    _rerendered(browser, row.click)
    result = results[index]
    template = result.template
    assert template is not None and template.parsed_llm_response and template.parsed_gt_response
    assert browser.find_element(By.ID, "question").text == result.metadata.question_text
    for name, parsed in template.parsed_llm_response.items():
        cells = browser.find_element(By.CSS_SELECTOR, f'#fields tr[data-field="{name}"]')
        assert cells.find_element(By.CLASS_NAME, "parsed").text == str(parsed)
        expected = template.parsed_gt_response[name]
        assert cells.find_element(By.CLASS_NAME, "expected").text == str(expected)
    # Deep-judgment excerpts are highlighted inside the answer.
    marks = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#answer mark")]
    # (attribute excerpts and the rubric trait's excerpt alike)
    assert {f"BCL2{index // 4}", "pancreas", "acts in"} <= set(marks)
    # The agent trace, message by message.
    shown = browser.find_elements(By.CSS_SELECTOR, "#trace .trace-msg")
    assert [m.find_element(By.CLASS_NAME, "trace-role").text for m in shown] == [
        m["role"] for m in template.trace_messages
    ]
    assert template.trace_messages[2]["content"] in shown[2].text
    # Checks with their reasoning, rubric scores and tokens.
    assert "the answer commits to a gene" in browser.find_element(By.ID, "checks").text
    scores = browser.find_element(By.CSS_SELECTOR, '#rubric-scores tr[data-trait="clarity"]')
    assert str(result.rubric.llm_trait_scores["clarity"]) in scores.text
    usage = browser.find_element(By.CSS_SELECTOR, '#usage tr[data-stage="total"]')
    assert "180" in usage.text
    # Each stage's cost and cache hits (docs/iterating.md).
    for stage, entry in template.usage_metadata.items():
        row = browser.find_element(By.CSS_SELECTOR, f'#usage tr[data-stage="{stage}"]')
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells[-2:] == [f"{entry['cost_usd']:.6f}", str(entry.get("cache_hits", 0))], stage


def test_comparing_two_runs_lists_the_changed_verdicts(
    viewer: ViewerProcess,
    browser: WebDriver,
    results: VerificationResultSet,
    files: tuple[Path, Path],
) -> None:
    after = read_results(files[1])
    changed = {
        (a.metadata.question_id, a.metadata.answering_model, a.metadata.parsing_model)
        for a, b in zip(results, after, strict=True)
        if a.template
        and b.template
        and a.template.verify_result != b.template.verify_result
        and a.metadata.completed_without_errors
    }
    assert changed  # the fixture flips some verdicts
    _open(browser, viewer.url + "#/compare?a=0&b=1")
    rows = browser.find_elements(By.CSS_SELECTOR, "#changed tr.changed-row")
    cells = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    # Columns: question id, question, answering, parsing, replicate, before, after.
    assert {(c[0], c[2], c[3]) for c in cells} == changed
    assert all(c[5] != c[6] for c in cells)
    card = browser.find_element(By.CSS_SELECTOR, '[data-compare="changed"] b')
    assert card.text == str(len(changed))


def test_screenshot_of_the_overview_has_content(viewer: ViewerProcess, browser: WebDriver) -> None:
    _open(browser, viewer.url + "#/run/0")
    page = browser.get_screenshot_as_png()
    assert png_size(page) == (1400, browser.execute_script("return window.innerHeight"))
    assert len(page) > 20_000  # a blank page of this size compresses to a few KB
    chart = browser.find_element(By.ID, "pass-rate-chart").screenshot_as_png
    cwidth, cheight, pixels = decode_png(chart)
    assert cwidth > 600 and cheight > 80
    colours = set(pixels)
    assert len(colours) > 20  # text, bars, whiskers, grid: not a blank image
    # The pass-rate bars' green (#66bb6a) covers a real share of the chart.
    green = sum(1 for p in pixels if p == (0x66, 0xBB, 0x6A))
    assert green > 0.05 * len(pixels)


def test_report_opens_without_a_server_and_shows_the_same_numbers(
    browser: WebDriver, files: tuple[Path, Path], results: VerificationResultSet
) -> None:
    out = files[0].parent / "report.html"
    done = run_cli("report", str(files[0]), "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "<script src=" not in text and "<link" not in text  # one self-contained file
    _open(browser, out.as_uri() + "#/run/0")
    _check_overview(browser, results)
    _open(browser, out.as_uri() + "#/run/0/table?verdict=fail")
    failed = sum(
        r.metadata.completed_without_errors and r.template.verify_result is False for r in results
    )
    assert browser.find_element(By.ID, "page-info").get_attribute("data-total") == str(failed)
    verdicts = {
        row.get_attribute("data-verdict")
        for row in browser.find_elements(By.CSS_SELECTOR, "tr.result-row")
    }
    assert verdicts == {"fail"}
    # A replicated run: the clustered interval (visibly wider than Wilson's, which
    # the page keeps only in the hover text) and the flakiest questions.
    replicated = files[0].parent / "replicated.parquet"
    write_results(full_run(COUNT // 3, replicates=3), replicated)
    replicated_out = files[0].parent / "replicated.html"
    done = run_cli("report", str(replicated), "--out", str(replicated_out))
    assert done.returncode == 0, done.stderr
    browser.get("about:blank")  # a new page counts its renders from 1 again
    _open(browser, replicated_out.as_uri() + "#/run/0")
    _check_overview(browser, read_results(replicated))
    for g in browser.find_elements(By.CSS_SELECTOR, "#pass-rate-chart g.pair"):
        assert g.get_attribute("data-method") == "clustered"
        wilson = float(g.get_attribute("data-wilson-high")) - float(
            g.get_attribute("data-wilson-low")
        )
        assert wilson < 0.8 * (
            float(g.get_attribute("data-high")) - float(g.get_attribute("data-low"))
        )
    assert browser.find_elements(By.CSS_SELECTOR, "#flaky tr.flaky-row")
    assert "95 % CI" in browser.find_element(By.ID, "pass-rate-ci").text
    # The served viewer shows the same figures (from its API, not embedded data).
    served = ViewerProcess(str(replicated))
    try:
        browser.get("about:blank")
        _open(browser, served.url + "#/run/0")
        _check_overview(browser, read_results(replicated))
    finally:
        served.stop()


def test_view_refuses_a_missing_file_without_redis() -> None:
    env = {k: v for k, v in os.environ.items() if k != "VERIFLEET_REDIS_URL"}
    done = run_cli("view", "/nonexistent/results.parquet", env=env)
    assert done.returncode == 2
    assert "no such file, and no Redis URL" in done.stderr


def test_view_of_a_job_on_an_unreachable_redis_is_one_clear_error() -> None:
    done = run_cli("view", "job-1", "--redis", f"redis://127.0.0.1:{free_port()}/0")
    assert done.returncode == 2
    assert "job-1: no such file, and Redis failed" in done.stderr
    assert "Traceback" not in done.stderr
