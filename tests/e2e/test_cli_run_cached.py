"""An identical ``run --cache`` re-run calls no model, its preflight included.

The preflight of a cached run asks a model only when the run first needs a real
call of it (issue 36): a re-run answered wholly from the cache makes no call at
all. The calls are counted at the endpoint, the counting test double of
``bench/`` (a real model server counts nothing on demand).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from _support.fleet import run_cli
from _support.jobs import capitals_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results
from verifleet.schemas import dump_benchmark

pytestmark = pytest.mark.e2e

N = 4


def test_an_identical_cached_rerun_makes_zero_model_calls(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(N, wrong_every=0)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    env = {**os.environ, "VERIFLEET_CACHE_DIR": str(tmp_path / "cache")}
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
        model = f"{ep.base_url}#m"
        base = ["run", str(path), "--answering", model, "--parsing", model, "--cache"]
        first = run_cli(*base, "--out", str(tmp_path / "first.parquet"), env=env, timeout=300)
        first_calls = ep.stats().calls
        ep.reset()
        again = run_cli(*base, "--out", str(tmp_path / "again.parquet"), env=env, timeout=300)
        again_calls = ep.stats().calls
        ep.reset()
        # Control: the same run without the cache calls the model, preflight too.
        uncached = [*base[:-1], "--out", str(tmp_path / "uncached.parquet")]
        plain = run_cli(*uncached, env=env, timeout=300)
        plain_calls = ep.stats().calls
    assert first.returncode == 0, first.stderr[-2000:]
    # A test call per model (answering and parsing configs differ: two), then
    # an answer and a parse per unit.
    found = re.search(r"preflight: (\d+) model\(s\) answered a test call", first.stderr)
    assert found is not None, first.stderr[-2000:]
    models = int(found.group(1))
    assert models >= 1 and first_calls == models + 2 * N
    assert again.returncode == 0, again.stderr[-2000:]
    assert again_calls == 0
    assert "every call came from the cache" in again.stderr
    assert len(read_results(tmp_path / "again.parquet")) == N
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert plain_calls == models + 2 * N
