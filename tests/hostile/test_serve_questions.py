"""One question of a served benchmark and another's reward (issue 34, item 8),
through a real ``verifleet serve``.

``verifleet serve`` keeps its benchmark's templates in one template process by
default (``SERVED_FRESH_STATE``: a process per question paid a fork and a
compile per request once a benchmark had more questions than an executor
keeps); ``VERIFLEET_SANDBOX_FRESH=template`` gives each served question its own.
The benchmark's first questions poison their process (pydantic's
``model_validate`` replaced, a callable ``bool`` written into builtins); its
victim questions then ask for their rewards.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from _support.cross_job import VICTIM_CASES, VICTIM_REWARDS, mixed_benchmark, victim_rewards
from _support.serve_process import running_serve

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.reward.serve import SERVED_FRESH_STATE
from verifleet.schemas import dump_benchmark

pytestmark = pytest.mark.integration


def _served_rewards(tmp_path: Path, env: dict[str, str]) -> dict[str, float]:
    bench, answers = mixed_benchmark()
    path = tmp_path / "mixed.yaml"
    dump_benchmark(bench, path)
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge:
        flags = ["--parsing", f"{judge.base_url}#judge", "--inline-executors", "0"]
        env = {"VERIFLEET_SANDBOX_POOL": "1", **env}
        served = running_serve(path, flags, tmp_path / "serve.log", env=env)
        with served as base, httpx.Client(base_url=base, timeout=120, trust_env=False) as client:
            for question in bench.questions:
                if question.id in VICTIM_CASES:
                    continue
                body = {"question_id": question.id, "response": "attacker response"}
                reply = client.post("/verify", json=body)
                assert reply.status_code == 200, reply.text
            return victim_rewards(client)


def test_with_a_process_per_question_a_served_question_cannot_touch_anothers_reward(
    tmp_path: Path,
) -> None:
    assert _served_rewards(tmp_path, {"VERIFLEET_SANDBOX_FRESH": "template"}) == VICTIM_REWARDS


def test_control_by_default_the_served_benchmark_shares_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing in the environment: the served benchmark's default, one process
    # for its templates, where the poisoners' code reaches the victims'.
    monkeypatch.delenv("VERIFLEET_SANDBOX_FRESH", raising=False)
    assert SERVED_FRESH_STATE == "job"
    assert _served_rewards(tmp_path, {}) != VICTIM_REWARDS
