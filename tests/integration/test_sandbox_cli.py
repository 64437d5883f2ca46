"""The commands that run benchmark code refuse to start when the machine lacks the
isolation the sandbox mode needs, and name what is missing and the downgrade."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support.fleet import run_cli

pytestmark = pytest.mark.integration


def _env_without_bwrap(tmp_path: Path, **extra: str) -> dict[str, str]:
    # A PATH with no bwrap on it: the machine "lacks bubblewrap".
    env = dict(os.environ, PATH=str(tmp_path), **extra)
    env.pop("VERIFLEET_SANDBOX", None)
    return env


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "--redis", "redis://127.0.0.1:1/0"],
        ["run", "missing.yaml", "--answering", "manual", "--out", "out.parquet"],
        ["serve", "missing.yaml"],
    ],
)
def test_strict_mode_refuses_to_start_without_bwrap(tmp_path: Path, command: list[str]) -> None:
    done = run_cli(*command, env=_env_without_bwrap(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "bwrap (bubblewrap) is not installed" in done.stderr
    assert "--sandbox=seccomp" in done.stderr and "docs/security.md" in done.stderr


def test_the_downgrade_flag_lets_it_start(tmp_path: Path) -> None:
    # With the documented downgrade the sandbox starts; the command then fails on
    # the missing benchmark file, which proves it got past the sandbox check.
    done = run_cli(
        "run",
        str(tmp_path / "missing.yaml"),
        "--answering",
        "manual",
        "--out",
        str(tmp_path / "out.parquet"),
        "--sandbox",
        "seccomp",
        env=_env_without_bwrap(tmp_path),
    )
    assert done.returncode == 2
    assert "bwrap" not in done.stderr
    assert "missing.yaml" in done.stderr


def test_the_local_runner_refuses_before_any_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    from _support.jobs import capitals_benchmark

    from verifleet.orchestrator._local.runner import LocalRunner
    from verifleet.pipeline import PipelineResources
    from verifleet.sandbox import SandboxPool, SandboxSettings, SandboxUnavailable
    from verifleet.schemas import ModelConfig, VerificationConfig

    monkeypatch.setenv("PATH", "/nonexistent")
    bench, _answers = capitals_benchmark(2)
    model = ModelConfig.parse("http://127.0.0.1:9/v1#m")
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    pool = SandboxPool(SandboxSettings())
    runner = LocalRunner(bench, config, resources=PipelineResources(sandbox=pool))
    with pytest.raises(SandboxUnavailable, match="bwrap"):
        next(runner.run())
    pool.close()
