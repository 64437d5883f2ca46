"""NeMo Gym 0.7.0's own tooling against ``verifleet serve``: installed from PyPI
into a venv of its own (tests/_support/nemo_gym.py, made once and cached), no
shim and no stand-in. The judge is the bench endpoint (a real OpenAI-compatible
server) and the policy under training a scripted OpenAI-compatible stub, both on
127.0.0.1.

* its contract helpers (``check_resources_session_contract``,
  ``exercise_verifier_fixture``) pointed at a running server pass, and the
  server's ``/aggregate_metrics`` equals NeMo Gym's own ``compute_aggregate_metrics``
  on the same rows (but the confidence intervals verifleet does not compute);
* ``gym env start`` launches ``verifleet serve`` from the directory
  ``--nemo-gym-dir`` wrote, with a token in place and an allow-list for the
  agents, ``--max-inflight 2`` and more concurrent rollouts than that;
  ``ng_collect_rollouts`` exits 0 with every reward right and metrics written,
  the two judge failures filed as NeMo Gym's judge failures; once the judge
  answers again, ``gym eval reverify --judge-failed-only`` re-scores exactly those.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support.nemo_gym import PolicyStub, nemo_env, nemo_gym_venv, server_venvs
from _support.redis_server import free_port
from _support.reward import CORRECT, JUDGE_ANSWERS, WRONG, geo_benchmark, nemo_request

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.schemas import Benchmark, Question, dump_benchmark

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
VERIFLEET = [sys.executable, "-m", "verifleet"]
CHECKS = Path(__file__).resolve().parents[1] / "_support" / "nemo_gym_checks.py"

CAPITALS = {
    "France": "Paris",
    "Germany": "Berlin",
    "Italy": "Rome",
    "Spain": "Madrid",
    "Japan": "Tokyo",
    "Egypt": "Cairo",
    "Canada": "Ottawa",
    "Peru": "Lima",
    "Kenya": "Nairobi",
    "Norway": "Oslo",
    "Chile": "Santiago",
    "Greece": "Athens",
}
WRONG_ON = {"Kenya", "Norway", "Chile"}
#: Answered at length: the judge refuses these prompts (too long) until told otherwise.
LONG_ON = {"Peru", "Greece"}
PADDING = " I am entirely sure of it." * 300
TEMPLATE = """class Answer(BaseAnswer):
    capital: str = Field(description="The capital city the response names")

    def verify(self) -> bool:
        return self.capital.strip().lower() == "{capital}".lower()
"""


@pytest.fixture(scope="module")
def venv() -> Path:
    return nemo_gym_venv()


def _start_serve(args: list[str], log: Path, env: dict[str, str] | None = None) -> tuple[Any, str]:
    port = free_port()
    proc = subprocess.Popen(
        [*VERIFLEET, "serve", *args, "--port", str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env=env or dict(os.environ),
    )
    deadline = time.monotonic() + 300
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", trust_env=False)
            return proc, f"http://127.0.0.1:{port}"
        except httpx.ConnectError:
            assert time.monotonic() < deadline, "verifleet serve did not start"
            time.sleep(0.2)


# The first test to run builds NeMo Gym's venv from PyPI (minutes on a fresh
# machine) and the rollout test starts Ray and NeMo Gym's servers: both take longer
# than the suite's 600 s per test on a loaded machine.
@pytest.mark.timeout(1500)
def test_nemo_gym_contract_helpers_pass_and_metrics_match_its_own(
    venv: Path, tmp_path: Path
) -> None:
    bench = tmp_path / "geo.yaml"
    dump_benchmark(geo_benchmark(), bench)
    cases = tmp_path / "cases.jsonl"
    lines = [
        {
            "name": "right",
            "kind": "full_reward",
            "request": nemo_request(CORRECT),
            "expected_reward": 1.0,
        },
        {
            "name": "wrong",
            "kind": "zero_reward",
            "request": nemo_request(WRONG),
            "expected_reward": 0.0,
        },
        {
            "name": "no-response",
            "kind": "malformed",
            "request": {"question_id": "geo"},
            "expected_error": "422",
        },
        {
            "name": "same",
            "kind": "determinism",
            "request": nemo_request(CORRECT),
            "expected_reward": 1.0,
        },
    ]
    cases.write_text("".join(json.dumps(line) + "\n" for line in lines))
    rows = [
        {
            "_ng_task_index": t,
            "_ng_rollout_index": r,
            "reward": float((t + r) % 2),
            "solved": (t + r) % 2 == 1,
            "correctness": 0.25 * (t + r),
            "response": {"usage": {"input_tokens": 10 + t, "output_tokens": 3 * r}},
        }
        for t in range(3)
        for r in range(2)
    ]
    rows.append({"_ng_task_index": 3, "_ng_rollout_index": 0, "reward": 0.0, "mask_sample": True})
    rows_path = tmp_path / "rows.json"
    rows_path.write_text(json.dumps(rows))
    out = tmp_path / "seen.json"
    with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as judge:
        proc, base = _start_serve(
            [str(bench), "--parsing", f"{judge.base_url}#judge"], tmp_path / "serve.log"
        )
        try:
            done = subprocess.run(
                [
                    str(venv / "bin" / "python"),
                    "-P",  # not its folder on sys.path: _support/nemo_gym.py would shadow nemo_gym
                    str(CHECKS),
                    base,
                    str(out),
                    str(cases),
                    str(rows_path),
                ],
                env=nemo_env(venv),
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(out.read_text())
    assert seen["session_contract"] == "passed"
    assert [r[:2] for r in seen["verifier_fixture"]] == [
        ["right", "full_reward"],
        ["wrong", "zero_reward"],
        ["no-response", "malformed"],
        ["same", "determinism"],
    ]
    nemo, ours = seen["nemo_metrics"], seen["server_metrics"]

    def without_ci(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: without_ci(v)
                for k, v in value.items()
                if "ci_low" not in k and "ci_high" not in k
            }
        if isinstance(value, list):
            return [without_ci(v) for v in value]
        return pytest.approx(value) if isinstance(value, float) else value

    for part in ("group_level_metrics", "agent_metrics", "key_metrics", "repeat_level_metrics"):
        assert without_ci(ours[part]) == without_ci(nemo[part]), part
    assert ours["key_metrics"]["mean/reward"] == pytest.approx(0.5)
    assert ours["agent_metrics"]["coverage/masked_rollouts"] == 1


def _capitals(tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, Any]]:
    questions = [
        Question(
            id=f"cap-{c.lower()}",
            text=f"What is the capital of {c}?",
            raw_answer=city,
            answer_template=TEMPLATE.format(capital=city),
        )
        for c, city in CAPITALS.items()
    ]
    bench = tmp_path / "capitals.yaml"
    dump_benchmark(Benchmark(name="capitals", questions=questions), bench)
    replies, answers = {}, {}
    for country, city in CAPITALS.items():
        said = "Springfield" if country in WRONG_ON else city
        text = f"The capital of {country} is {said}." + (PADDING if country in LONG_ON else "")
        replies[f"What is the capital of {country}?"] = text
        answers[text] = {"fields": {"capital": said}}
    return bench, replies, answers


@pytest.fixture
def gym_servers(
    venv: Path, tmp_path: Path
) -> Iterator[tuple[Path, RunningEndpoint, list[str], Callable[[], None]]]:
    """``gym env start`` from a directory ``--nemo-gym-dir`` wrote; the judge refuses
    the long prompts (as a model with a short context would) until the test says."""
    bench, replies, answers = _capitals(tmp_path)
    reward = tmp_path / "reward.yaml"
    reward.write_text("verification: {retry_policy: {max_attempts: 1}}\n")
    judge_config = EndpointConfig(answers=answers, context_chars=len(PADDING))
    with run_endpoint_in_thread(judge_config) as judge, PolicyStub(replies) as policy:
        wrote = subprocess.run(
            [
                *VERIFLEET,
                "serve",
                str(bench),
                "--parsing",
                f"{judge.base_url}#judge",
                "--reward-config",
                str(reward),
                "--infra-errors",
                "failsafe",
                "--allow-net",
                "127.0.0.0/8",
                "--max-inflight",
                "2",
                "--max-queued",
                "64",
                "--nemo-gym-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert wrote.returncode == 0, wrote.stderr
        env = {**nemo_env(venv), "VERIFLEET_SERVE_TOKEN": "not-sent-by-nemo-gym"}
        log = tmp_path / "gym.log"
        configs = [
            "--config",
            "resources_servers/verifleet/configs/verifleet.yaml",
            "--config",
            "responses_api_models/vllm_model/configs/vllm_model.yaml",
            f"++policy_base_url={policy.base_url}",
            "++policy_api_key=none",
            "++policy_model_name=policy",
            "++skip_venv_if_present=true",
            f"++uv_venv_dir={server_venvs(tmp_path / 'venvs', venv)}",
        ]
        command = [str(venv / "bin" / "gym"), "env", "start", *configs]
        # NeMo Gym stops its servers on SIGINT: a background child must not ignore it.
        gym = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.monotonic() + 900
            while "servers ready" not in log.read_text():
                assert gym.poll() is None, log.read_text()[-5000:]
                assert time.monotonic() < deadline, log.read_text()[-5000:]
                time.sleep(2)
            rows = [
                {"responses_create_params": {"input": [{"role": "user", "content": q}]}}
                for q in replies
            ]
            (tmp_path / "input.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

            def stop() -> None:
                if gym.poll() is None:
                    os.killpg(gym.pid, signal.SIGINT)
                    try:
                        gym.wait(timeout=120)
                    except subprocess.TimeoutExpired:
                        os.killpg(gym.pid, signal.SIGKILL)
                        gym.wait()

            yield tmp_path, judge, configs, stop
        finally:
            if gym.poll() is None:
                os.killpg(gym.pid, signal.SIGKILL)
                gym.wait()


def _nemo(command: list[str], root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a NeMo Gym command that may start servers, in a session of its own with
    SIGINT restored (a background test run inherits it ignored; NeMo Gym stops its
    servers with it).

    ``gym eval reverify`` (0.7.0) starts its servers and exits without stopping
    them: they keep its output pipes open, so its output goes to files, and what is
    left of its process group is stopped once it has exited.
    """
    out, err = root / "command.out", root / "command.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            proc.wait(timeout=900)
        finally:
            _stop_group(proc.pid)
    return subprocess.CompletedProcess(
        command, proc.returncode, out.read_text(errors="replace"), err.read_text(errors="replace")
    )


def _stop_group(pgid: int) -> None:
    """SIGINT to what is left of a process group (NeMo Gym's servers stop on it),
    then SIGKILL after a grace period."""
    for sig, grace in ((signal.SIGINT, 60.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.5)


def _rewards(path: Path) -> dict[str, Any]:
    out = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        question = row["responses_create_params"]["input"][0]["content"]
        out[question.removeprefix("What is the capital of ").rstrip("?")] = row
    return out


@pytest.mark.timeout(1500)
def test_nemo_gym_collects_and_reverifies_rollouts_from_verifleet_serve(
    venv: Path, gym_servers: tuple[Path, RunningEndpoint, list[str], Callable[[], None]]
) -> None:
    root, judge, configs, stop = gym_servers
    env = nemo_env(venv)
    collect = _nemo(
        [
            str(venv / "bin" / "ng_collect_rollouts"),
            "+agent_name=verifleet_simple_agent",
            f"+input_jsonl_fpath={root / 'input.jsonl'}",
            f"+output_jsonl_fpath={root / 'out.jsonl'}",
            "+num_samples_in_parallel=8",
        ],
        root,
        env,
    )
    assert collect.returncode == 0, collect.stdout[-5000:] + collect.stderr[-5000:]
    scored = _rewards(root / "out.jsonl")
    failed = _rewards(root / "out_failures.jsonl")
    assert set(scored) == set(CAPITALS) - LONG_ON
    for country, row in scored.items():
        assert row["reward"] == (0.0 if country in WRONG_ON else 1.0), country
    assert set(failed) == LONG_ON
    for row in failed.values():
        assert row["_ng_failure_class"] == "judge_failed" and row["mask_sample"] is True
    metrics = [p for p in root.glob("out*metrics*.json*")]
    assert metrics, sorted(p.name for p in root.iterdir())
    # The judge answers long prompts again: re-verify the judge failures only.
    # `gym eval reverify` starts the servers itself (verifleet serve again, from
    # the same directory): those of `gym env start` stop first.
    stop()
    judge.app.config.context_chars = None
    reverify = _nemo(
        [
            str(venv / "bin" / "gym"),
            "eval",
            "reverify",
            *configs,
            "--judge-failed-only",
            "--inputs",
            str(root / "out_materialized_inputs.jsonl"),
            "--rollouts",
            str(root / "out.jsonl"),
            "--output",
            str(root / "reverified.jsonl"),
        ],
        root,
        env,
    )
    assert reverify.returncode == 0, reverify.stdout[-5000:] + reverify.stderr[-5000:]
    again = _rewards(root / "reverified.jsonl")
    assert set(again) == set(CAPITALS)
    for country, row in again.items():
        assert row["reward"] == (0.0 if country in WRONG_ON else 1.0), country
    assert judge.stats().calls > 0
