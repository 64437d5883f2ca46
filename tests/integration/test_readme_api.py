"""The README's Python example, run as it stands: model strings in a config
mapping, ``limit``, ``out=`` (and resuming from it), a progress callback and the
preflight. The only change is the endpoint's URL: the deterministic
OpenAI-compatible endpoint of ``bench/endpoint.py`` instead of a real server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import verifleet
from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.schemas import ConfigError, load_benchmark

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples/demo/benchmark.yaml"


def _example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- readme-api-example -->\n```python\n(.*?)```", text, re.S)
    assert match, "the README lost its Python API example"
    return match.group(1)


def test_the_readme_python_example_runs_and_resumes(tmp_path: Path) -> None:
    code = _example()
    with run_endpoint_in_thread(EndpointConfig()) as ep:
        code = code.replace("http://127.0.0.1:8000/v1", ep.base_url)
        code = code.replace(
            '"examples/demo/benchmark.yaml"', repr(str(ROOT / "examples/demo/benchmark.yaml"))
        )
        script = tmp_path / "example.py"
        script.write_text(code)

        def run() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, str(script)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )

        first = run()
        calls_after_first = ep.stats().calls
        second = run()
        calls_by_second = ep.stats().calls - calls_after_first
    assert first.returncode == 0, first.stderr[-3000:]
    assert "1/4 units" in first.stdout and "4/4 units" in first.stdout
    assert "4 results; pass rate" in first.stdout
    results = read_results(tmp_path / "demo-api.parquet")
    first_four = load_benchmark(DEMO).question_ids[:4]
    assert sorted(r.metadata.question_id for r in results) == sorted(first_four)
    assert all(r.metadata.completed_without_errors for r in results)
    assert all(r.rubric is not None for r in results)  # template_and_rubric from the mapping
    # Resumed: every unit was in the file; only the two preflight calls were made.
    assert second.returncode == 0, second.stderr[-3000:]
    assert "4/4 units" in second.stdout and "4 results" in second.stdout
    assert calls_by_second == 2


def test_questions_globs_and_model_strings_in_python(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    with run_endpoint_in_thread(EndpointConfig()) as ep:
        results = verifleet.run(
            DEMO,
            {"answering_models": f"{ep.base_url}#a", "parsing_models": [f"{ep.base_url}#j"]},
            questions="capital-*",
            progress=lambda done, total: seen.append((done, total)),
        )
        with pytest.raises(ConfigError, match="no-such-"):
            verifleet.run(DEMO, {"parsing_models": [f"{ep.base_url}#j"]}, questions=["no-such-*"])
        with pytest.raises(ConfigError, match="model 'gpt'"):
            verifleet.run(DEMO, {"answering_models": ["gpt"], "parsing_models": ["gpt"]})
    capitals = [q for q in load_benchmark(DEMO).question_ids if q.startswith("capital-")]
    assert sorted(r.metadata.question_id for r in results) == sorted(capitals)
    assert seen == [(i, len(capitals)) for i in range(1, len(capitals) + 1)]
    assert {r.metadata.answering.model_name for r in results} == {"a"}
