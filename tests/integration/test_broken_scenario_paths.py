"""A scenario that fails validation and a question whose template is refused, in
a checkpoint the original framework wrote, fail alone in every path and are
reported in the same words: ``Benchmark.validate``,
``verifleet run``, ``verifleet submit`` (and its ``--strict``), the Python API's
``verifleet.submit``, and the reward server's setup (``serve`` / ``reward``, and
its ``--strict``). The models are the scripted double of ``bench/endpoint.py``; the
fleet is real Redis and a real Celery worker process.

The checkpoint is ``fixtures/karenina_results/scenarios.jsonld`` (written by the
original's ``Benchmark.save``: a cycling scenario and one of two turns), with the
second scenario's edge pointed at a node that does not exist.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import pytest
import yaml
from _support.fleet import Fleet, run_cli
from _support.scenarios import ANSWERS

import verifleet
from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import ScenarioExecutionError, VerificationResultSet, load_benchmark
from verifleet.store import JobStatus

pytestmark = pytest.mark.integration

ORIGINAL = Path(__file__).parents[1] / "fixtures" / "karenina_results" / "scenarios.jsonld"

#: The one wording every path must use.
PROBLEM = (
    "scenario 'straight': edge start -> ghost: target 'ghost' is not a node or END; "
    "node 'next' is unreachable from the entry node 'start'"
)


#: A question (in the original's DataFeedItem shape) whose template imports os:
#: refused, so it fails alone too.
REFUSED_TEMPLATE = (
    "import os\n"
    "from karenina.schemas.entities import BaseAnswer\n"
    "from pydantic import Field\n\n\n"
    "class Answer(BaseAnswer):\n"
    '    value: str = Field(description="The gene")\n\n'
    "    def model_post_init(self, __context):\n"
    '        self.correct = {"value": "bcl2"}\n\n'
    "    def verify(self) -> bool:\n"
    '        return self.value == self.correct["value"]\n'
)


def _broken_checkpoint(tmp_path: Path) -> Path:
    document = json.loads(ORIGINAL.read_text())
    [straight] = [p for p in document["hasPart"] if p["name"] == "straight"]
    straight["edges"][0]["target"] = "ghost"
    document["dataFeedElement"] = [
        {
            "@type": "DataFeedItem",
            "@id": "refused",
            "dateCreated": "2026-03-14T09:26:53",
            "dateModified": "2026-03-14T09:26:53",
            "item": {
                "@type": "Question",
                "text": "Start: which gene?",
                "acceptedAnswer": {"@type": "Answer", "text": "BCL2"},
                "hasPart": {
                    "@type": "SoftwareSourceCode",
                    "name": "Start: which gene? Answer Template",
                    "text": REFUSED_TEMPLATE,
                },
            },
        }
    ]
    path = tmp_path / "broken.jsonld"
    path.write_text(json.dumps(document))
    return path


def _config_file(tmp_path: Path) -> Path:
    # An original preset: its scenario_turn_limit keeps the cycling scenario short.
    path = tmp_path / "preset.yaml"
    preset = {"name": "short", "config": {"scenario_turn_limit": 3}}
    path.write_text(yaml.safe_dump(preset))
    return path


def _models(endpoint: RunningEndpoint) -> list[str]:
    return [
        "--answering",
        f"{endpoint.base_url}#answerer",
        "--parsing",
        f"{endpoint.base_url}#judge",
    ]


def _template_problem() -> str:
    """How every path words the refused template (Benchmark.validate's words)."""
    from verifleet.schemas import Benchmark, Question

    question = Question(id="refused", text="Start: which gene?", answer_template=REFUSED_TEMPLATE)
    [problem] = Benchmark(name="one", questions=[question]).validate()
    assert problem.startswith("question refused: template: ") and "os" in problem
    return problem


def _one_line(text: str) -> str:
    return " ".join(text.split())  # rich wraps long warnings


def _check_contained(result_set: VerificationResultSet) -> None:
    """The broken scenario's run failed with PROBLEM; the cycling one ran its 3
    turns; the refused question's result carries its error."""
    [refused] = [r for r in result_set if r.metadata.question_id == "refused"]
    assert refused.template is not None and refused.template.template_validation_error
    assert refused.metadata.completed_without_errors is False
    runs = {r.scenario_id: r for r in result_set.scenario_results or []}
    assert set(runs) == {"spin", "straight"}
    assert (runs["spin"].status, runs["spin"].turn_count) == ("limit_reached", 3)
    assert (runs["straight"].status, runs["straight"].turn_count) == ("error", 0)
    [(description, exc)] = result_set.errors or []
    assert description.startswith("scenario straight,")
    assert isinstance(exc, ScenarioExecutionError) and str(exc) == PROBLEM


@pytest.fixture(scope="module")
def endpoint() -> RunningEndpoint:
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as running:
        yield running  # type: ignore[misc]


def test_validate_and_run_report_it_in_the_same_words(
    endpoint: RunningEndpoint, tmp_path: Path
) -> None:
    path = _broken_checkpoint(tmp_path)
    benchmark = load_benchmark(path, validate_templates=False)
    assert [s.id for s in benchmark.scenarios] == ["spin"]
    assert benchmark.validate() == [_template_problem(), PROBLEM]

    out = tmp_path / "out.json"
    args = ["run", str(path), *_models(endpoint), "--config", str(_config_file(tmp_path))]
    # The refused question's result is an errored one, by design.
    args += ["--max-error-rate", "0.5", "--no-preflight"]
    done = run_cli(*args, "--out", str(out), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for problem in (_template_problem(), PROBLEM):
        assert f"warning: {problem} (its results will record the error)" in _one_line(done.stderr)
    _check_contained(read_results(out))


def test_submit_contains_it_and_strict_rejects_the_job_in_the_same_words(
    fleet: Fleet, redis_url: str, endpoint: RunningEndpoint, tmp_path: Path
) -> None:
    path = _broken_checkpoint(tmp_path)
    preset = _config_file(tmp_path)
    base = ["submit", str(path), *_models(endpoint), "--config", str(preset)]
    base += ["--redis", redis_url, "--no-preflight"]

    strict = run_cli(*base, "--strict")
    assert strict.returncode == 2, strict.stdout + strict.stderr
    assert PROBLEM in _one_line(strict.stderr) and "Traceback" not in strict.stderr
    assert _template_problem() in _one_line(strict.stderr)
    assert Job("nothing", redis_url).store.list_jobs() == [], "a rejected job stores nothing"

    fleet.start_worker("w1", concurrency=2)
    fleet.wait_ready(["w1"])
    submitted = run_cli(*base)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    for problem in (_template_problem(), PROBLEM):
        warning = f"warning: {problem} (its results will record the error)"
        assert warning in _one_line(submitted.stderr)
    match = re.search(r"job (\S+):", submitted.stdout)
    assert match is not None, submitted.stdout
    job = Job(match.group(1), redis_url)
    assert job.wait(timeout=120).status == JobStatus.DONE
    _check_contained(job.result_set())

    # The Python API: the same containment and the same words.
    api_job = verifleet.submit(
        path,
        {
            **yaml.safe_load(preset.read_text())["config"],
            "answering_models": [f"{endpoint.base_url}#answerer"],
            "parsing_models": [f"{endpoint.base_url}#judge"],
        },
        redis_url,
    )
    assert api_job.wait(timeout=120).status == JobStatus.DONE
    _check_contained(api_job.result_set())


def test_the_reward_servers_setup_warns_in_the_same_words_and_strict_refuses(
    endpoint: RunningEndpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve`` and ``reward`` share this setup; the reward server scores questions,
    so a broken scenario does not stop it, and ``--strict`` refuses the benchmark."""
    from verifleet.orchestrator.cli import build_parser
    from verifleet.orchestrator.cli._reward_args import reward_setup
    from verifleet.schemas import BenchmarkLoadError

    path = _broken_checkpoint(tmp_path)
    argv = ["serve", str(path), "--parsing", f"{endpoint.base_url}#judge"]
    with contextlib.ExitStack() as stack:
        reward_setup(build_parser().parse_args(argv), stack, redis_url=None)
    warned = _one_line(capsys.readouterr().err)
    assert f"warning: {PROBLEM}" in warned and f"warning: {_template_problem()}" in warned
    with (
        contextlib.ExitStack() as stack,
        pytest.raises(BenchmarkLoadError) as refused,
    ):
        reward_setup(build_parser().parse_args([*argv, "--strict"]), stack, redis_url=None)
    assert PROBLEM in str(refused.value) and _template_problem() in str(refused.value)
    assert "template problem" not in str(refused.value), "a scenario is not a template"
