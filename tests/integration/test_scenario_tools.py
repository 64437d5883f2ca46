"""Per-node MCP tool filters, applied as the original documents them (it saves
them and never applies them), checked against real MCP servers' tool lists
(tests/_support/mcp_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _support.asgi_thread import serve_in_thread
from _support.mcp_server import McpServer, build_tools_server, mcp_server
from _support.scenarios import ANSWERS, Q_GOOD, scenario_config, template

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.pipeline import PipelineResources, run_scenario
from verifleet.pipeline._scenario._tools import ToolFilterError, filtered_model
from verifleet.schemas import ModelConfig, ScenarioDefinition, ToolFilter

pytestmark = pytest.mark.integration

__all__ = ["mcp_server"]

TOOLS = ["add", "gene_length", "sleep"]


@pytest.fixture(scope="module")
def second_server() -> Iterator[McpServer]:
    served = serve_in_thread(build_tools_server().streamable_http_app())
    try:
        yield McpServer(served)
    finally:
        served.stop()


def _model(**servers: str) -> ModelConfig:
    return ModelConfig(
        model_name="agent",
        interface="openai_endpoint",
        endpoint_base_url="http://127.0.0.1:9/v1",
        mcp_urls_dict=servers,
    )


def _filter(*entries: dict[str, str | None]) -> ToolFilter:
    return ToolFilter.model_validate({"remove": list(entries)})


def test_a_filter_removes_servers_and_tools_from_the_real_tool_list(
    mcp_server: McpServer, second_server: McpServer
) -> None:
    model = _model(a=mcp_server.url, b=second_server.url)
    whole = filtered_model(model, _filter({"server": "b"}), "n", timeout=10, deadline=None)
    assert whole.mcp_urls_dict == {"a": mcp_server.url} and whole.mcp_tool_filter is None
    one = filtered_model(
        _model(a=mcp_server.url),
        _filter({"server": "a", "tool": "sleep"}),
        "n",
        timeout=10,
        deadline=None,
    )
    assert one.mcp_tool_filter == ["add", "gene_length"]  # listed from the server
    assert model.mcp_urls_dict == {"a": mcp_server.url, "b": second_server.url}  # not changed


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"server": "a", "tool": "search"},
            f"node 'n': toolFilter removes tool 'search' of MCP server 'a', which offers no "
            f"such tool (its tools: {TOOLS})",
        ),
        (
            {"server": "pubmed"},
            "node 'n': toolFilter names MCP server 'pubmed', which the answering model does "
            "not have (its servers: ['a'])",
        ),
        ({"server": "a"}, "node 'n': toolFilter removes every MCP server of the answering model"),
    ],
)
def test_a_filter_that_does_not_fit_names_the_node_and_what_exists(
    mcp_server: McpServer, entry: dict[str, str | None], problem: str
) -> None:
    with pytest.raises(ToolFilterError) as caught:
        filtered_model(_model(a=mcp_server.url), _filter(entry), "n", timeout=10, deadline=None)
    assert str(caught.value) == problem


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as running:
        yield running


def test_a_scenario_turn_whose_filter_does_not_fit_fails_that_run_naming_the_node(
    endpoint: RunningEndpoint, mcp_server: McpServer
) -> None:
    config = scenario_config(endpoint.base_url)
    agent = config.answering_models[0].model_copy(update={"mcp_urls_dict": {"a": mcp_server.url}})
    scenario = ScenarioDefinition.model_validate(
        {
            "id": "filtered",
            "nodes": [
                {
                    "id": "ask",
                    "question": {"text": Q_GOOD, "answer_template": template("bcl2")},
                    "tool_filter": {"remove": [{"server": "a", "tool": "search"}]},
                }
            ],
        }
    )
    run = run_scenario(
        scenario, agent, config.parsing_models, config, replicate=1, resources=PipelineResources()
    )
    outcome = run.scenario_result
    assert outcome is not None and outcome.status == "error" and outcome.turn_count == 0
    assert outcome.terminal_failure is not None
    assert outcome.terminal_failure.stage == "tool_filter"
    assert outcome.terminal_failure.node_id == "ask"
    assert "tool 'search' of MCP server 'a'" in outcome.terminal_failure.reason
