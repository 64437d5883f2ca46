"""The agent demo (examples/agent/) runs as documented: its MCP server, its
benchmark and its config, with the scripted endpoint in place of a model that can
call tools (the bundled 135M model cannot)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml
from _support.agent_endpoint import build_app
from _support.asgi_thread import serve_in_thread

from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import VerificationConfig, load_benchmark

pytestmark = pytest.mark.integration

DEMO = Path(__file__).resolve().parents[2] / "examples" / "agent"


def _server_module() -> object:
    spec = importlib.util.spec_from_file_location("agent_demo_server", DEMO / "server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_agent_demo_verifies_its_benchmark() -> None:
    server = _server_module().build(0)  # type: ignore[attr-defined]
    with (
        serve_in_thread(server.streamable_http_app()) as mcp,
        serve_in_thread(build_app(), lifespan="off") as endpoint,
    ):
        # config.yaml with the free ports of this run instead of 7401/7402.
        text = (DEMO / "config.yaml").read_text(encoding="utf-8")
        text = text.replace("127.0.0.1:7401", f"127.0.0.1:{endpoint.port}")
        text = text.replace("127.0.0.1:7402", f"127.0.0.1:{mcp.port}")
        config = VerificationConfig.build(**yaml.safe_load(text))
        bench = load_benchmark(DEMO / "benchmark.yaml")
        results = {
            r.metadata.question_id: r for _unit, rs in LocalRunner(bench, config).run() for r in rs
        }
    verdicts = {qid: r.template.verify_result for qid, r in results.items() if r.template}
    assert verdicts == {
        "bcl2-length": True,
        "kras-plus-tp53": True,
        "unknown-gene": False,
        "stuck-agent": False,
    }
    assert all(r.metadata.completed_without_errors for r in results.values())
    stuck = results["stuck-agent"].template
    assert stuck is not None and stuck.recursion_limit_reached is True
    unknown = results["unknown-gene"].template
    assert unknown is not None and unknown.agent_metrics is not None
    assert unknown.agent_metrics["suspect_failed_tools"] == ["protein_length"]
    rubric = results["bcl2-length"].rubric
    assert rubric is not None and rubric.agentic_trait_scores == {"length_checked": True}
