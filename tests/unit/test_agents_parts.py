"""The agent runtime's pure parts: server addresses, trace conversion, metrics,
and the ``--mcp`` flag. (The runtime itself runs for real in
tests/integration/test_agents.py.)"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from verifleet.orchestrator.cli import build_parser
from verifleet.orchestrator.cli.config import build_config
from verifleet.pipeline._agents import (
    McpServerError,
    agent_metrics,
    connection_for,
    tool_timeout,
    trace_of,
)
from verifleet.schemas import ConfigError


def test_addresses_pick_the_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    http = connection_for("a", "http://h:1/mcp", timeout=5)
    assert (http["transport"], http["url"], http["timeout"]) == (
        "streamable_http",
        "http://h:1/mcp",
        5,
    )
    assert connection_for("a", "https://h/x/sse", timeout=5)["transport"] == "sse"
    sse = connection_for("a", "sse+http://h:1/events", timeout=5)
    assert (sse["transport"], sse["url"]) == ("sse", "http://h:1/events")
    with pytest.raises(McpServerError, match="not an http"):
        connection_for("a", "ftp://h/mcp", timeout=5)
    monkeypatch.delenv("VERIFLEET_MCP_ALLOW_STDIO", raising=False)
    with pytest.raises(McpServerError, match="VERIFLEET_MCP_ALLOW_STDIO=1"):
        connection_for("files", "stdio:python -m server --root '/a b'", timeout=5)
    monkeypatch.setenv("VERIFLEET_MCP_ALLOW_STDIO", "1")
    stdio = connection_for("files", "stdio:python -m server --root '/a b'", timeout=5)
    assert stdio == {
        "transport": "stdio",
        "command": "python",
        "args": ["-m", "server", "--root", "/a b"],
    }


def test_tool_timeout_defaults_to_the_request_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERIFLEET_MCP_TOOL_TIMEOUT", raising=False)
    assert tool_timeout(30.0) == 30.0
    monkeypatch.setenv("VERIFLEET_MCP_TOOL_TIMEOUT", "2.5")
    assert tool_timeout(30.0) == 2.5
    monkeypatch.setenv("VERIFLEET_MCP_TOOL_TIMEOUT", "soon")
    assert tool_timeout(30.0) == 30.0


def test_trace_and_metrics_of_a_run() -> None:
    messages = [
        HumanMessage(content="How long is BCL2?"),
        AIMessage(content="", tool_calls=[{"id": "c1", "name": "gene_length", "args": {"g": "X"}}]),
        ToolMessage(
            content=[{"type": "text", "text": "error: gene X not found"}],
            tool_call_id="c1",
            name="gene_length",
        ),
        AIMessage(content="", tool_calls=[{"id": "c2", "name": "add", "args": {"a": 1}}]),
        ToolMessage(content="3", tool_call_id="c2", name="add"),
        AIMessage(content="The result is 3."),
    ]
    trace = trace_of(messages, "Be brief.")
    assert [m["role"] for m in trace] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert trace[0]["content"] == "Be brief."
    assert trace[2]["tool_calls"] == [{"id": "c1", "name": "gene_length", "args": {"g": "X"}}]
    assert trace[3]["content"] == "error: gene X not found"  # content blocks as text
    assert (trace[3]["tool_call_id"], trace[3]["name"]) == ("c1", "gene_length")
    assert agent_metrics(trace) == {
        "iterations": 3,
        "tool_calls": 2,
        "tools_used": ["add", "gene_length"],
        "suspect_failed_tool_calls": 1,
        "suspect_failed_tools": ["gene_length"],
    }


def test_error_status_counts_as_a_suspect_failure() -> None:
    trace = [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "name": "slow"}]},
        {"role": "tool", "content": "fine", "tool_call_id": "1", "status": "error"},
    ]
    metrics = agent_metrics(trace)
    assert metrics["suspect_failed_tools"] == ["slow"]  # name found through the call id


def test_mcp_flag_attaches_servers_to_every_answering_model() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "bench.yaml",
            "--out",
            "o.parquet",
            "--answering",
            "http://a/v1#one",
            "http://a/v1#two",
            "--parsing",
            "http://a/v1#judge",
            "--mcp",
            "genes=http://tools/mcp",
            "--mcp",
            "papers=http://tools/sse",
        ]
    )
    config = build_config(args)
    for model in config.answering_models:
        assert model.mcp_urls_dict == {"genes": "http://tools/mcp", "papers": "http://tools/sse"}
    assert config.parsing_models[0].mcp_urls_dict is None
    bad = build_parser().parse_args(
        [
            "run",
            "b.yaml",
            "--out",
            "o.parquet",
            "--answering",
            "http://a/v1#x",
            "--parsing",
            "http://a/v1#j",
            "--mcp",
            "x",
        ]
    )
    with pytest.raises(ConfigError, match="NAME=URL"):
        build_config(bad)


def test_agent_steps_keep_the_first_step_stored_and_survive_a_failing_store() -> None:
    """The agents' step cache follows the call cache's semantics: a run that
    raced another and lost goes on with the step stored first, and a store that
    fails is a counted miss, not a failed step. The failing store stands in for a
    locked file or Redis away, which cannot be had at the moment of one call."""
    import asyncio
    import sqlite3

    from langchain.agents.middleware import ModelResponse

    from verifleet.pipeline import MemoryCallCache, UsageTracker, call_cache_failures
    from verifleet.pipeline._agents._cached_steps import StepCache
    from verifleet.schemas import ModelConfig

    class Broken(MemoryCallCache):
        def get(self, key: str) -> bytes | None:
            raise sqlite3.OperationalError("database is locked")

        def put(self, key: str, value: bytes) -> bytes:
            raise sqlite3.OperationalError("database is locked")

    model = ModelConfig.parse("http://127.0.0.1:1/v1#agent")
    step_a = ModelResponse(result=[AIMessage(content="step A")])
    step_b = ModelResponse(result=[AIMessage(content="step B")])
    shared = MemoryCallCache()
    first, second = (StepCache(shared, model, UsageTracker(), "parsing") for _ in range(2))
    assert asyncio.run(first.keep("k", step_a)) is step_a
    kept = asyncio.run(second.keep("k", step_b))
    assert [m.content for m in kept.result] == ["step A"]
    broken = StepCache(Broken(), model, UsageTracker(), "parsing")
    before = call_cache_failures()
    assert asyncio.run(broken.lookup("k")) is None
    assert asyncio.run(broken.keep("k", step_b)) is step_b
    assert call_cache_failures() == before + 2
