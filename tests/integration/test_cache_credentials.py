"""The model-call cache follows the credential (issue 34, item 4).

Behind one gateway, two API keys may reach two backends (LiteLLM virtual keys,
Azure deployments). Two jobs whose ``api_key_env`` holds different keys must
never share a reply, whatever the variables are called; a job with the same key
value (under another variable name) still shares them. The gateway here answers
every question right for key A and wrong for key B, so a reply served across keys
shows in the verdicts and in the gateway's per-key call counts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from _support.asgi_thread import serve_in_thread
from _support.fleet import run_cli
from _support.gateway import Gateway

from bench._harness import capitals
from bench.endpoint import EndpointConfig
from verifleet.orchestrator import read_results
from verifleet.pipeline import call_key, credential_identity
from verifleet.schemas import ModelConfig, dump_benchmark

pytestmark = pytest.mark.integration

N = 6
KEY_A = "sk-tenant-a-0123456789"
KEY_B = "sk-tenant-b-9876543210"


def _config(path: Path, base_url: str, env_name: str) -> Path:
    def model(name: str) -> dict[str, str]:
        return {
            "model_name": name,
            "interface": "openai_endpoint",
            "endpoint_base_url": base_url,
            "api_key_env": env_name,
        }

    path.write_text(
        yaml.safe_dump(
            {"answering_models": [model("answerer")], "parsing_models": [model("judge")]}
        )
    )
    return path


def test_two_keys_behind_one_gateway_never_share_cached_replies(tmp_path: Path) -> None:
    bench, right = capitals(N, wrong_every=0, id_digits=4)
    _, wrong = capitals(N, wrong_every=1, id_digits=4)
    bench_file = tmp_path / "bench.yaml"
    dump_benchmark(bench, bench_file)
    gateway = Gateway({KEY_A: EndpointConfig(answers=right), KEY_B: EndpointConfig(answers=wrong)})
    env = {
        **os.environ,
        "VERIFLEET_CACHE_DIR": str(tmp_path / "cache"),
        "TENANT_A_KEY": KEY_A,
        "TENANT_B_KEY": KEY_B,
        "ALSO_TENANT_A_KEY": KEY_A,
    }

    def run(name: str, env_name: str) -> list[bool]:
        config = _config(tmp_path / f"{name}.yaml", f"{served.url}/v1", env_name)
        out = tmp_path / f"{name}.json"
        done = run_cli(
            "run", str(bench_file), "--config", str(config), "--cache", "--no-preflight",
            "--out", str(out), env=env, timeout=300,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr[-3000:]
        results = read_results(out)
        assert len(results) == N
        return [bool(r.template and r.template.verify_result) for r in results]

    with serve_in_thread(gateway, lifespan="off") as served:
        assert run("a", "TENANT_A_KEY") == [True] * N
        assert gateway.calls[KEY_A] == 2 * N
        # The attack: the same calls with key B. Each must reach B's backend.
        assert run("b", "TENANT_B_KEY") == [False] * N
        assert gateway.calls[KEY_B] == 2 * N
        # The control: key A's value under another variable name is the same
        # credential: every reply comes from the cache, none from the gateway.
        assert run("a-again", "ALSO_TENANT_A_KEY") == [True] * N
        assert gateway.calls[KEY_A] == 2 * N
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert stored, "the cache kept nothing"
    for key in (KEY_A, KEY_B):
        assert key.encode() not in stored, "an API key was written into the cache"


def test_the_judge_cache_key_follows_the_key_value(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [{"role": "user", "content": "Is Paris the capital of France?"}]

    def key(env_name: str) -> str:
        model = ModelConfig.parse("http://127.0.0.1:9/v1#judge", api_key_env=env_name)
        return call_key(model, messages, kind="json", schema={"type": "object"}, schema_name="r")

    monkeypatch.setenv("JUDGE_KEY_1", KEY_A)
    monkeypatch.setenv("JUDGE_KEY_2", KEY_B)
    monkeypatch.setenv("JUDGE_KEY_3", KEY_A)
    assert key("JUDGE_KEY_1") != key("JUDGE_KEY_2")
    # Control: same value under another name, same entry.
    assert key("JUDGE_KEY_1") == key("JUDGE_KEY_3")
    identity = credential_identity(ModelConfig.parse("http://x/v1#m", api_key_env="JUDGE_KEY_1"))
    assert len(identity) == 64 and KEY_A not in identity
    # The operator's secret changes every identity (a keyed hash, not a bare digest).
    monkeypatch.setenv("VERIFLEET_CACHE_KEY_SECRET", "fleet-secret")
    assert key("JUDGE_KEY_1") == key("JUDGE_KEY_3") != key("JUDGE_KEY_2")
    assert (
        credential_identity(ModelConfig.parse("http://x/v1#m", api_key_env="JUDGE_KEY_1"))
        != identity
    )
