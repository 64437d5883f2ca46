"""``verifleet view JOB --redis URL`` on a job that a real worker is running: the
page follows the job live and ends on the job's final numbers. Real redis-server,
a real ``verifleet worker`` process, the viewer as its own process and a headless
Chromium; the model is bench/endpoint.py's deterministic test endpoint."""

from __future__ import annotations

import pytest
from _support.browser import ViewerProcess, browser, wait_for
from _support.fleet import Fleet
from _support.jobs import capitals_benchmark
from selenium.webdriver.remote.webdriver import WebDriver

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import ModelConfig, VerificationConfig

pytestmark = pytest.mark.integration

__all__ = ["browser"]

QUESTIONS = 16


def _shown(driver: WebDriver, selector: str) -> str:
    # Read in one script call: the live page redraws every 2 s, and an element
    # found by one WebDriver call may be gone (stale) by the next.
    text = driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
        selector,
    )
    return str(text).strip()


def test_a_running_job_updates_the_page_until_it_is_done(
    fleet: Fleet, redis_url: str, browser: WebDriver
) -> None:
    bench, answers = capitals_benchmark(QUESTIONS)
    # 300 ms per model call and one worker thread: the job takes several of the
    # page's 2-second polls, so the page sees it part-way.
    with run_endpoint_in_thread(EndpointConfig(answers=answers, latency_ms=300)) as ep:
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{ep.base_url}#judge")],
        )
        job = Job.submit(bench, config, redis_url)  # no worker yet: nothing is done
        viewer = ViewerProcess(job.job_id, "--redis", redis_url)
        try:
            browser.get(viewer.url + "#/run/0")
            wait_for(browser, lambda d: _shown(d, "#live-units") == f"0 / {QUESTIONS} units")
            assert "job " + job.job_id in viewer.runs[0]["name"]

            fleet.start_worker("w1", concurrency=1)
            seen: set[str] = set()

            def finished(driver: WebDriver) -> bool:
                seen.add(_shown(driver, "#live-results"))
                banner = _shown(driver, "#live")
                verified = _shown(driver, '[data-summary="num_results"] b')
                return banner.startswith("Job done") and verified == str(QUESTIONS)

            wait_for(browser, finished, timeout=120)
            results = job.result_set()
            summary = results.get_template_results().get_template_summary()
            for key in ("num_results", "num_passed", "num_failed", "num_questions"):
                assert _shown(browser, f'[data-summary="{key}"] b') == str(summary[key])
            rate = _shown(browser, '[data-summary="pass_rate"] b')
            assert rate == f"{100 * summary['pass_rate']:.1f}%"
            # The page showed the job part-way, not only its start and its end.
            counts = {int(text.split()[0]) for text in seen if text}
            assert 0 in counts and QUESTIONS in counts
            assert any(0 < n < QUESTIONS for n in counts), counts

            # A result of the job opens in full, read from Redis by key.
            browser.get(viewer.url + "#/run/0/table?verdict=fail")
            row = wait_for(
                browser,
                lambda d: d.execute_script(
                    "const r = document.querySelector('tr.result-row');"
                    "return r ? r.dataset.row : null;"
                ),
            )
            browser.get(viewer.url + f"#/run/0/result/{row}")
            title = wait_for(browser, lambda d: _shown(d, "#result-title"))
            failing = {
                r.metadata.question_id
                for r in results
                if r.template is not None and r.template.verify_result is False
            }
            assert title.split()[0] in failing
            # Its template's source comes from the job's own benchmark in Redis,
            # and its calls (prompts, raw replies) from the stored result.
            question = bench.get_question(title.split()[0])
            assert question.answer_template is not None
            source = wait_for(browser, lambda d: _shown(d, "#template-source"))
            assert source == question.answer_template.strip()
            assert f"the benchmark of job {job.job_id}" in _shown(browser, "#template-note")
            calls = _shown(browser, "#model-calls")
            assert question.text in calls and "Response to parse" in calls
        finally:
            viewer.stop()
