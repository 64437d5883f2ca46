"""A result page explains its verdict (issue 21, item 4), in headless Chromium:
after a real local run (``verifleet run``) against the scripted OpenAI-compatible
endpoint (bench/endpoint.py), the page shows the prompts sent and the raw replies
of the answer, abstention and parse calls, and the answer template's source;
the same offline in the report. The model's reply and the template both hold
``<!--<script>`` and ``</script>``: they show as text, never as markup. A results
file viewed without its benchmark says plainly that the source is missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from _support.browser import By, ViewerProcess, browser, wait_for
from _support.fleet import run_cli
from selenium.webdriver.remote.webdriver import WebDriver

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.schemas import Benchmark, Question, dump_benchmark, load_benchmark
from verifleet.viewer import FileRun, template_sources

pytestmark = pytest.mark.integration

__all__ = ["browser"]

HOSTILE = "<!--<script>alert(1)</script> and </script><b id=pwned>x</b>"
QUESTION = "What is the capital of France?"
ANSWER = f"The capital is Paris. {HOSTILE}"
ANSWER_PROMPT = "You are a geography tutor; answer in one sentence."
JUDGE_PROMPT = "You are a strict judge of capital cities."
TEMPLATE = f'''
from pydantic import Field


class Answer(BaseAnswer):
    """Capital-city template; its docstring holds {HOSTILE}"""

    city: str = Field(description="The capital city the response names")

    def model_post_init(self, __context):
        self.correct = {{"city": "Paris"}}

    def verify(self) -> bool:
        # TEMPLATE-SOURCE-MARKER: compare case-insensitively
        return self.city.strip().lower() == self.correct["city"].lower()
'''


@pytest.fixture(scope="module")
def run_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("transcript")
    bench = folder / "bench.yaml"
    dump_benchmark(
        Benchmark(
            name="transcript",
            questions=[
                Question(id="q1", text=QUESTION, raw_answer="Paris", answer_template=TEMPLATE)
            ],
        ),
        bench,
    )
    answers = {
        QUESTION: {
            "text": ANSWER,
            "fields": {
                "city": "Paris",
                "abstention_detected": False,
                "reasoning": "The response names a city.",
            },
        }
    }
    out = folder / "results.parquet"
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        config = folder / "config.yaml"
        model = {"interface": "openai_endpoint", "endpoint_base_url": ep.base_url}
        config.write_text(
            yaml.safe_dump(
                {
                    "answering_models": [
                        {**model, "model_name": "answerer", "system_prompt": ANSWER_PROMPT}
                    ],
                    "parsing_models": [
                        {**model, "model_name": "judge", "system_prompt": JUDGE_PROMPT}
                    ],
                }
            )
        )
        done = run_cli(
            "run", str(bench), "--config", str(config), "--abstention", "--out", str(out),
            timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [result] = read_results(out)
    assert result.template is not None and result.template.verify_result is True
    stages = [c.stage for c in result.template.model_calls]
    assert stages == ["answer_generation", "abstention_check", "parsing"], stages
    return out, bench


@pytest.fixture(scope="module")
def viewer(run_files: tuple[Path, Path]) -> Iterator[ViewerProcess]:
    out, bench = run_files
    process = ViewerProcess(str(out), "--benchmark", str(bench))
    try:
        yield process
    finally:
        process.stop()


def _calls(driver: WebDriver) -> dict[str, str]:
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#model-calls details"))
    return {
        d.get_attribute("data-stage"): d.text
        for d in driver.find_elements(By.CSS_SELECTOR, "#model-calls details")
    }


def _shows_prompts_replies_and_template(driver: WebDriver) -> None:
    calls = _calls(driver)
    assert set(calls) == {"answer_generation", "abstention_check", "parsing"}
    answer = calls["answer_generation"]
    assert ANSWER_PROMPT in answer and QUESTION in answer
    assert "raw reply" in answer and ANSWER in answer  # the model's text, as text
    parse = calls["parsing"]
    assert JUDGE_PROMPT in parse and "Response to parse" in parse
    assert ANSWER in parse  # the judge saw the answer
    assert '"city": "Paris"' in parse  # the judge's raw reply
    assert "abstention_detected" in calls["abstention_check"]
    source = driver.find_element(By.ID, "template-source").text
    assert "TEMPLATE-SOURCE-MARKER: compare case-insensitively" in source
    assert HOSTILE in source
    assert "bench.yaml" in driver.find_element(By.ID, "template-note").text
    assert not driver.find_elements(By.ID, "pwned")  # text, never markup


def test_the_result_page_shows_prompts_replies_and_template_source(
    browser: WebDriver, viewer: ViewerProcess
) -> None:
    browser.get(viewer.url + "#/run/0/result/0")
    _shows_prompts_replies_and_template(browser)


def test_the_report_shows_them_offline(browser: WebDriver, run_files: tuple[Path, Path]) -> None:
    out, bench = run_files
    report = out.parent / "report.html"
    done = run_cli("report", str(out), "--benchmark", str(bench), "--out", str(report))
    assert done.returncode == 0, done.stderr
    browser.get(report.as_uri() + "#/run/0/result/0")
    _shows_prompts_replies_and_template(browser)


def test_without_its_benchmark_the_page_says_the_source_is_missing(
    browser: WebDriver, run_files: tuple[Path, Path]
) -> None:
    out, _bench = run_files
    process = ViewerProcess(str(out))
    try:
        browser.get(process.url + "#/run/0/result/0")
        _calls(browser)  # the calls are in the results file itself
        note = wait_for(browser, lambda d: d.find_elements(By.ID, "template-note"))[0].text
    finally:
        process.stop()
    assert "Template source not available" in note
    assert "--benchmark FILE" in note
    assert not browser.find_elements(By.ID, "template-source")


def test_an_unreadable_benchmark_stops_the_report_before_writing(
    run_files: tuple[Path, Path],
) -> None:
    out, _bench = run_files
    report = out.parent / "never.html"
    missing = out.parent / "missing.yaml"
    done = run_cli("report", str(out), "--benchmark", str(missing), "--out", str(report))
    assert done.returncode == 2, done.stderr
    assert f"--benchmark {missing}" in done.stderr
    assert not report.exists()


def test_a_benchmark_without_the_template_says_so(run_files: tuple[Path, Path]) -> None:
    out, bench = run_files
    other = out.parent / "other.yaml"
    dump_benchmark(
        Benchmark(
            name="other",
            questions=[Question(id="q1", text=QUESTION, answer_template=TEMPLATE + "\n# edited\n")],
        ),
        other,
    )
    run = FileRun(out)
    run.templates.add(template_sources(load_benchmark(other, validate_templates=False)), "x.yaml")
    [result] = read_results(out)
    shown = run.templates.lookup(result.metadata.template_id)
    assert shown["source"] is None
    assert shown["note"] is not None and "x.yaml has no template with this id" in shown["note"]
    run.templates.add(template_sources(load_benchmark(bench, validate_templates=False)), "y.yaml")
    assert run.templates.lookup(result.metadata.template_id)["source"] == TEMPLATE
