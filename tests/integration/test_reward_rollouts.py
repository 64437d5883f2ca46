"""``verifleet reward`` on a JSONL file of rollouts: locally and on a real fleet
(redis-server + ``verifleet worker``) the rewards are identical; malformed lines
are reported with their numbers; an interrupted run resumes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from _support.fleet import Fleet, run_cli
from _support.reward import (
    CORRECT,
    GEO_TEMPLATE,
    JUDGE_ANSWERS,
    PARTIAL,
    QUESTION,
    VERBOSE_CORRECT,
    WRONG,
    geo_benchmark,
    nemo_request,
)

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.reward import (
    RewardConfig,
    RewardScorer,
    load_reward_config,
    score_rollouts_fleet,
)
from verifleet.schemas import Benchmark, ModelConfig, Question, dump_benchmark

REWARD_YAML = """\
mode: hybrid
components:
  - {name: correctness, source: verify_granular_result, weight: 0.5}
  - {name: pedagogy, source: trait, trait: clarity, weight: 0.3}
  - {name: efficiency, source: trait, trait: concise, weight: 0.2}
"""


@pytest.fixture(scope="module")
def judge() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as endpoint:
        yield endpoint


def _rollouts(path: Path) -> dict[int, str]:
    trace = nemo_request(CORRECT, rollout_id="t")
    trace["response"]["output"][:0] = [
        {"type": "function_call", "name": "search", "arguments": "{}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "Paris, France"},
    ]
    lines = {
        1: json.dumps(nemo_request(CORRECT, rollout_id=1)),
        2: json.dumps(nemo_request(WRONG, rollout_id=2)),
        3: json.dumps({"question_id": "geo", "response": PARTIAL}),
        4: "",
        5: '{"responses_create_params": ',
        6: json.dumps(nemo_request(VERBOSE_CORRECT, rollout_id=6)),
        7: json.dumps({"question_id": "atlantis", "response": CORRECT}),
        8: json.dumps(trace),
        9: json.dumps(nemo_request(CORRECT, rollout_id=1)),
        10: "[]",
    }
    path.write_text("\n".join(lines[i] for i in sorted(lines)) + "\n")
    return lines


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    bench, reward, rollouts = tmp_path / "geo.yaml", tmp_path / "reward.yaml", tmp_path / "r.jsonl"
    dump_benchmark(geo_benchmark(), bench)
    reward.write_text(REWARD_YAML)
    _rollouts(rollouts)
    return bench, reward, rollouts


def _args(
    judge: RunningEndpoint, bench: Path, reward: Path, rollouts: Path, out: Path
) -> list[str]:
    return [
        "reward",
        str(rollouts),
        "--benchmark",
        str(bench),
        "--parsing",
        f"{judge.base_url}#judge",
        "--reward-config",
        str(reward),
        "--out",
        str(out),
    ]


def _local_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "VERIFLEET_REDIS_URL"}


def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


EXPECTED = {
    1: 0.5 + 0.3 + 0.2,
    2: 0.0 + 0.3 * 0.25 + 0.2,
    3: 0.5 * 0.5 + 0.3 * 0.75 + 0.2,
    6: 0.5 + 0.3 * 0.5 + 0.0,
    # Rubrics read the whole trace by default: too long for "concise".
    8: 0.5 + 0.3 + 0.0,
    9: 1.0,
}


def test_local_scoring_adds_rewards_in_order_and_reports_bad_lines(
    judge: RunningEndpoint, tmp_path: Path
) -> None:
    bench, reward, rollouts = _setup(tmp_path)
    out = tmp_path / "scored.jsonl"
    proc = run_cli(*_args(judge, bench, reward, rollouts, out), env=_local_env())
    assert proc.returncode == 1, proc.stderr
    assert "line 5: skipped: not valid JSON" in proc.stderr
    assert "line 7: skipped: unknown question id 'atlantis'" in proc.stderr
    assert "line 10: skipped: expected a JSON object, got list" in proc.stderr
    assert "6 rollouts scored locally" in proc.stdout
    records = _read(out)
    assert [r["rollout_line"] for r in records] == [1, 2, 3, 6, 8, 9]
    for record in records:
        assert record["reward"] == pytest.approx(EXPECTED[record["rollout_line"]])  # type: ignore[index]
    assert records[0]["rollout_id"] == 1
    assert (
        records[0]["responses_create_params"]
        == json.loads(_rollouts(rollouts)[1])["responses_create_params"]
    )
    assert records[1]["verify_result"] is False
    assert records[2]["verify_granular_result"] == 0.5
    errors = [
        json.loads(x) for x in (tmp_path / "scored.jsonl.errors.jsonl").read_text().splitlines()
    ]
    assert [e["line"] for e in errors] == [5, 7, 10]


def test_interrupted_run_resumes_without_rescoring(judge: RunningEndpoint, tmp_path: Path) -> None:
    bench, reward, rollouts = _setup(tmp_path)
    out = tmp_path / "scored.jsonl"
    assert run_cli(*_args(judge, bench, reward, rollouts, out), env=_local_env()).returncode == 1
    complete = out.read_text()
    lines = complete.splitlines(keepends=True)
    # Keep two whole lines and half of the third, as a killed run leaves them.
    out.write_text("".join(lines[:2]) + lines[2][:20])
    proc = run_cli(*_args(judge, bench, reward, rollouts, out), env=_local_env())
    assert "4 rollouts scored locally, 2 already in" in proc.stdout
    assert out.read_text() == complete


def test_fleet_scoring_gives_the_same_rewards_as_local(
    judge: RunningEndpoint, fleet: Fleet, tmp_path: Path
) -> None:
    bench, reward, rollouts = _setup(tmp_path)
    local_out, fleet_out = tmp_path / "local.jsonl", tmp_path / "fleet.jsonl"
    assert (
        run_cli(*_args(judge, bench, reward, rollouts, local_out), env=_local_env()).returncode == 1
    )
    fleet.start_worker("rw1", concurrency=4)
    fleet.wait_ready(["rw1"])
    proc = run_cli(
        *_args(judge, bench, reward, rollouts, fleet_out),
        "--redis",
        fleet.redis_url,
        env=fleet.env(),
    )
    assert proc.returncode == 1, proc.stderr + fleet.log("rw1")[-3000:]
    assert "6 rollouts scored on the fleet" in proc.stdout
    assert "line 5: skipped: not valid JSON" in proc.stderr
    assert _read(fleet_out) == _read(local_out)
    # The verdicts really came from the worker, and its judge calls are shared.
    client = redis.Redis.from_url(fleet.redis_url)
    assert "verifleet.score_rollout" in fleet.log("rw1")
    assert any(True for _ in client.scan_iter(match="vf:cc:*"))
    # Re-running on the fleet from scratch collects the stored verdicts.
    fleet_out.unlink()
    again = run_cli(
        *_args(judge, bench, reward, rollouts, fleet_out),
        "--redis",
        fleet.redis_url,
        env=fleet.env(),
    )
    assert again.returncode == 1
    assert _read(fleet_out) == _read(local_out)
    # Tiny batches and window: the collect-as-you-go path gives the same lines.
    small_out = tmp_path / "small.jsonl"
    scorer = RewardScorer(
        geo_benchmark(), [ModelConfig.parse(f"{judge.base_url}#judge")], load_reward_config(reward)
    )
    report = score_rollouts_fleet(
        rollouts, small_out, scorer, fleet.redis_url, window=3, batch_size=2
    )
    assert (report.scored, [e.line for e in report.errors]) == (6, [5, 7, 10])
    assert _read(small_out) == _read(local_out)


def test_fleet_without_workers_stops_with_a_clear_error_and_benchmark_config_applies(
    judge: RunningEndpoint, redis_url: str, tmp_path: Path
) -> None:
    bench = geo_benchmark()
    bench.custom_metadata["reward"] = {"mode": "continuous"}
    path = tmp_path / "geo.yaml"
    dump_benchmark(bench, path)
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"question_id": "geo", "response": PARTIAL}) + "\n")
    args = [
        "reward",
        str(rollouts),
        "--benchmark",
        str(path),
        "--parsing",
        f"{judge.base_url}#judge",
    ]
    stalled = run_cli(
        *args,
        "--out",
        str(tmp_path / "f.jsonl"),
        "--redis",
        redis_url,
        "--stall-timeout",
        "2",
        env=_local_env(),
    )
    assert stalled.returncode == 2
    assert "no verdict from the fleet for 2s" in stalled.stderr
    assert "Traceback" not in stalled.stderr
    local = run_cli(*args, "--out", str(tmp_path / "l.jsonl"), env=_local_env())
    assert local.returncode == 0, local.stderr
    # The benchmark's own reward config (continuous) gives the partial credit.
    assert _read(tmp_path / "l.jsonl")[0]["reward"] == 0.5


def test_a_broken_template_fails_only_its_rollouts_unless_strict(
    judge: RunningEndpoint, tmp_path: Path
) -> None:
    bench = geo_benchmark()
    broken = bench.questions[0].model_copy(
        update={"id": "broken", "text": "Broken?", "answer_template": "class Answer(:\n    pass\n"}
    )
    bench = bench.model_copy(update={"questions": [*bench.questions, broken]})
    path, reward, rollouts = tmp_path / "b.yaml", tmp_path / "reward.yaml", tmp_path / "r.jsonl"
    dump_benchmark(bench, path)
    reward.write_text(REWARD_YAML)
    rollouts.write_text(
        json.dumps({"question_id": "geo", "response": CORRECT})
        + "\n"
        + json.dumps({"question_id": "broken", "response": CORRECT})
        + "\n"
    )
    out = tmp_path / "scored.jsonl"
    proc = run_cli(*_args(judge, path, reward, rollouts, out), env=_local_env())
    assert proc.returncode == 0, proc.stderr
    assert "question broken: template" in proc.stderr  # a warning, not a refusal
    geo, failed = _read(out)
    assert geo["reward"] == pytest.approx(1.0)
    assert failed["reward"] == 0.0
    assert "template validation failed" in str(failed["verification_error"])
    strict = run_cli(
        *_args(judge, path, reward, rollouts, tmp_path / "strict.jsonl"),
        "--strict",
        env=_local_env(),
    )
    assert strict.returncode == 2, strict.stderr
    assert "question broken: template" in strict.stderr
    assert "Traceback" not in strict.stderr


REMEMBERS = GEO_TEMPLATE.replace(
    "def verify(self) -> bool:\n        return all(self._hits())",
    "def verify(self) -> bool:\n        SEEN.append(self.city)\n        return len(SEEN) == 1",
).replace("class Answer(BaseAnswer):", "SEEN = []\n\n\nclass Answer(BaseAnswer):")


def test_two_reward_jobs_never_share_a_template_process(
    judge: RunningEndpoint, fleet: Fleet, tmp_path: Path
) -> None:
    # The template passes its first call in a process and fails every later
    # one. Two tenants' reward jobs (two benchmarks with this same template)
    # each score one rollout on one worker process with one executor
    # (template mode: calls run in their job's template process): each must
    # be its job's first call. Unscoped, the second job's call ran in the
    # first's process and its correct answer got 0.0.
    assert "SEEN.append" in REMEMBERS
    question = Question(id="geo", text=QUESTION, answer_template=REMEMBERS)
    judges = [ModelConfig.parse(f"{judge.base_url}#judge")]
    fleet.start_worker("rw1", concurrency=1, VERIFLEET_SANDBOX_POOL="1")
    fleet.wait_ready(["rw1"])
    rewards = []
    for tenant in ("tenant-a", "tenant-b"):
        bench = Benchmark(name=tenant, questions=[question])
        scorer = RewardScorer(bench, judges, RewardConfig())
        rollouts, out = tmp_path / f"{tenant}.jsonl", tmp_path / f"{tenant}-out.jsonl"
        rollouts.write_text(json.dumps({"question_id": "geo", "response": CORRECT}) + "\n")
        report = score_rollouts_fleet(rollouts, out, scorer, fleet.redis_url)
        assert report.scored == 1, report
        rewards.append(_read(out)[0]["reward"])
    assert rewards == [1.0, 1.0]
