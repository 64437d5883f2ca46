"""The reward package exports exactly its public names; the CLI has its commands."""

from __future__ import annotations

import importlib

from verifleet.orchestrator.cli import build_parser


def test_reward_all_is_complete_and_resolvable() -> None:
    module = importlib.import_module("verifleet.reward")
    exported = list(module.__all__)
    assert len(exported) == len(set(exported))
    for name in exported:
        assert hasattr(module, name), name
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, type(importlib))
        and getattr(value, "__module__", "verifleet").startswith("verifleet")
        and name != "annotations"
    }
    assert public <= set(exported), public - set(exported)


def test_serve_and_reward_commands_parse_their_flags() -> None:
    parser = build_parser()
    serve = parser.parse_args(
        [
            "serve",
            "b.yaml",
            "--parsing",
            "http://h/v1#j",
            "--port",
            "9000",
            "--reward-config",
            "r.yaml",
        ]
    )
    assert (serve.command, serve.port, str(serve.reward_config)) == ("serve", 9000, "r.yaml")
    reward = parser.parse_args(
        ["reward", "r.jsonl", "--benchmark", "b.yaml", "--parsing", "x:y", "--out", "o.jsonl"]
    )
    assert (reward.command, str(reward.out), reward.concurrency) == ("reward", "o.jsonl", 8)
