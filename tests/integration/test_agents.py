"""MCP agents for real: a FastMCP server (the official SDK, streamable HTTP on a
loopback port), the built-in agent runtime (langchain ``create_agent`` +
langchain-mcp-adapters) and a scripted OpenAI-compatible endpoint that issues the
tool calls (tests/_support/agent_endpoint.py: no local model can be told to loop
or to end with an empty message on demand). Locally and on a two-worker fleet."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support.agent_endpoint import ScriptedEndpoint, build_app
from _support.asgi_thread import ServedApp, serve_in_thread
from _support.fleet import Fleet
from _support.mcp_server import McpServer, mcp_server

from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import PipelineResources, verify_question
from verifleet.schemas import (
    AgenticRubricTrait,
    Benchmark,
    ModelConfig,
    Question,
    Rubric,
    VerificationConfig,
    VerificationResult,
    VerificationResultSet,
)
from verifleet.store import JobStatus

__all__ = ["mcp_server"]

pytestmark = pytest.mark.integration


def _template(expected: int) -> str:
    return textwrap.dedent(
        f"""
        class Answer(BaseAnswer):
            value: int = Field(description="The number the response gives as the result")

            def model_post_init(self, __context):
                self.correct = {{"value": {expected}}}

            def verify(self) -> bool:
                return self.value == self.correct["value"]
        """
    )


QUESTIONS = {
    "tool": (
        'How long is BCL2? [tool:gene_length {"gene": "BCL2"}] [check:gene_length {"gene": "BCL2"}]'
        ' [findings {"length": 239, "source": "gene_length"}]',
        239,
    ),
    "failing-tool": (
        'How long is XYZ, plus 1+2? [tool:gene_length {"gene": "XYZ"}] [tool:add {"a": 1, "b": 2}]',
        3,
    ),
    "loop": ("Count forever. [loop]", 1),
    "malformed": ("Say nothing. [malformed]", 1),
}


EVIDENCE_SCHEMA = {
    "type": "object",
    "properties": {"length": {"type": "integer"}, "source": {"type": "string"}},
    "required": ["length", "source"],
}


def _benchmark(served: ServedApp, tools_url: str) -> Benchmark:
    # The "tool" question also has an agentic trait: an investigating agent with its
    # own MCP tools and turn limit checks the answer; the judge extracts the verdict.
    investigator = ModelConfig(
        model_name="investigator",
        interface="openai_endpoint",
        endpoint_base_url=f"{served.url}/v1",
        mcp_urls_dict={"tools": tools_url},
    )
    checked = AgenticRubricTrait(
        name="length_checked",
        kind="boolean",
        description="Check the stated protein length with the gene_length tool.",
        max_turns=3,
        model_override=investigator,
    )
    # The original's template kind, as a checkpoint stores it: the investigation
    # should end with an object of the schema ("tool" does: [findings ...]); else
    # the judge fills the schema from the investigation ("failing-tool").
    evidence = AgenticRubricTrait.model_validate(
        {
            "name": "evidence",
            "kind": {"type": "template", "schema": EVIDENCE_SCHEMA},
            "description": "Check the stated length; report what you found.",
            "max_turns": 3,
            "model_override": investigator,
        }
    )
    traits = {"tool": [checked, evidence], "failing-tool": [evidence]}
    return Benchmark(
        name="agents",
        questions=[
            Question(
                id=qid,
                question=text,
                raw_answer=str(value),
                answer_template=_template(value),
                question_rubric=Rubric(agentic_traits=traits[qid]) if qid in traits else None,
            )
            for qid, (text, value) in QUESTIONS.items()
        ],
    )


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[ServedApp, ScriptedEndpoint]]:
    state = ScriptedEndpoint()
    served = serve_in_thread(build_app(state), lifespan="off")
    try:
        yield served, state
    finally:
        served.stop()


def _config(served: ServedApp, tools_url: str) -> VerificationConfig:
    base = f"{served.url}/v1"
    return VerificationConfig.build(
        answering_models=[
            ModelConfig(
                model_name="scripted",
                interface="openai_endpoint",
                endpoint_base_url=base,
                mcp_urls_dict={"tools": tools_url},
                agent_recursion_limit=7,
                # The agent's model calls pass the same endpoint gate as plain calls.
                max_concurrency=1,
            ),
            ModelConfig(
                # Its own name: results are keyed by model identity, not by id.
                model_name="scripted-dead-tools",
                interface="openai_endpoint",
                endpoint_base_url=base,
                # Nothing listens on port 1 of the loopback.
                mcp_urls_dict={"tools": "http://127.0.0.1:1/mcp"},
            ),
        ],
        parsing_models=[
            ModelConfig(model_name="judge", interface="openai_endpoint", endpoint_base_url=base)
        ],
        abstention_enabled=True,
        evaluation_mode="template_and_rubric",
        max_concurrency=4,
    )


def _check(results: list[VerificationResult]) -> None:
    dead = [r for r in results if "127.0.0.1:1/" in str(r.metadata.error)]
    live = {r.metadata.question_id: r for r in results if r not in dead}
    assert len(results) == 8 and len(live) == 4 and len(dead) == 4, [
        (r.metadata.question_id, r.metadata.answering.model_name, r.metadata.error) for r in results
    ]

    # A dead MCP server fails its units (and only those) with a clear error.
    for r in dead:
        assert r.metadata.completed_without_errors is False
        assert (r.metadata.error or "").startswith(
            "answer generation failed: MCP server 'tools' (http://127.0.0.1:1/mcp) cannot be used:"
        )

    tool = live["tool"]
    template = tool.template
    assert template is not None and tool.metadata.completed_without_errors, tool.metadata.error
    assert template.verify_result is True
    assert template.parsed_llm_response == {"value": 239}
    assert [m["role"] for m in template.trace_messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    call = template.trace_messages[2]["tool_calls"][0]
    assert (call["name"], call["args"]) == ("gene_length", {"gene": "BCL2"})
    assert template.trace_messages[3]["content"] == "239"
    assert template.agent_metrics == {
        "iterations": 2,
        "tool_calls": 1,
        "tools_used": ["gene_length"],
        "suspect_failed_tool_calls": 0,
        "suspect_failed_tools": [],
    }
    assert template.answering_mcp_servers == ["tools"]
    assert tool.metadata.answering.tools == ["tools"]
    usage = template.usage_metadata or {}
    assert usage["answer_generation"]["input_tokens"] > 0  # both agent turns counted
    assert tool.evaluation_input == "The result is 239."
    assert tool.used_full_trace is False and tool.trace_extraction_error is None
    assert template.abstention_check_performed and template.abstention_detected is False

    # The agentic traits: investigated with their own tools, scored, traces kept.
    # The template-kind trait's findings come from the JSON the investigation
    # ends with (no judge call for them), each field under "<trait>.<field>".
    rubric = tool.rubric
    assert rubric is not None and rubric.agentic_trait_scores == {
        "length_checked": True,
        "evidence.length": 239,
        "evidence.source": "gene_length",
    }
    assert (rubric.agentic_trait_extraction_metadata or {})["evidence"] == {
        "method": "local_json",
        "local_json_error": None,
        "parser_error": None,
    }
    investigation = (rubric.agentic_trait_investigation_traces or {})["length_checked"]
    assert "evaluation agent" in investigation  # its own system prompt
    assert '"name": "gene_length"' in investigation and "The result is 239." in investigation
    assert usage["rubric_evaluation"]["total_tokens"] > 0

    failing = live["failing-tool"].template
    assert failing is not None and failing.verify_result is True
    # No JSON ends this investigation: the judge filled the trait's schema from it.
    fallback = live["failing-tool"].rubric
    assert fallback is not None and fallback.agentic_trait_scores is not None
    assert set(fallback.agentic_trait_scores) == {"evidence.length", "evidence.source"}
    assert isinstance(fallback.agentic_trait_scores["evidence.length"], int)
    assert isinstance(fallback.agentic_trait_scores["evidence.source"], str)
    meta = (fallback.agentic_trait_extraction_metadata or {})["evidence"]
    assert meta["method"] == "parser_after_local_json_failed" and meta["parser_error"] is None
    assert failing.agent_metrics is not None
    assert failing.agent_metrics["suspect_failed_tool_calls"] == 1
    assert failing.agent_metrics["suspect_failed_tools"] == ["gene_length"]
    assert failing.agent_metrics["tools_used"] == ["add", "gene_length"]

    # Looping until the turn limit: auto-failed, not an error, trace and tokens kept.
    loop = live["loop"]
    assert loop.template is not None and loop.metadata.completed_without_errors
    assert loop.template.recursion_limit_reached is True
    assert loop.template.verify_result is False
    assert loop.template.parsed_llm_response is None
    last = loop.template.trace_messages[-1]
    assert last["role"] == "tool" or last.get("tool_calls")  # stopped mid-loop
    assert (loop.template.agent_metrics or {})["tool_calls"] >= 3
    assert (loop.template.usage_metadata or {})["answer_generation"]["total_tokens"] > 0
    assert loop.template.abstention_check_performed is False

    # A trace ending in an empty AI message: TraceValidationAutoFail, parsing skipped.
    bad = live["malformed"]
    assert bad.template is not None and bad.metadata.completed_without_errors
    assert bad.template.verify_result is False and bad.template.parsed_llm_response is None
    assert bad.template.recursion_limit_reached is False
    assert bad.trace_extraction_error == "the final AI message has no text"
    # The abstention judge never saw it (no final AI message to judge).
    assert bad.template.abstention_check_performed is False

    # The template summary counts the two auto-fails as failures, as the original
    # does: 2 of 4 passed (the dead-tools model's results errored).
    summary = VerificationResultSet(results=list(live.values())).get_template_results()
    counted = summary.get_template_summary()
    assert (counted["num_results"], counted["num_passed"], counted["num_failed"]) == (4, 2, 2)
    assert counted["pass_rate"] == 0.5


def test_agents_locally(
    endpoint: tuple[ServedApp, ScriptedEndpoint], mcp_server: McpServer
) -> None:
    served, state = endpoint
    state.max_in_flight.clear()
    config = _config(served, mcp_server.url)
    results = [
        r for _unit, rs in LocalRunner(_benchmark(served, mcp_server.url), config).run() for r in rs
    ]
    _check(results)
    # max_concurrency=1 on the answering model held for its agents' calls too.
    assert state.max_in_flight["scripted"] == 1


def test_agents_on_a_two_worker_fleet(
    fleet: Fleet,
    redis_url: str,
    endpoint: tuple[ServedApp, ScriptedEndpoint],
    mcp_server: McpServer,
) -> None:
    served, state = endpoint
    state.max_in_flight.clear()
    config = _config(served, mcp_server.url)
    # The fleet fixture's 8 s unit deadline is for kill tests; here it would
    # count a busy machine's first import of the agent stack (langgraph, mcp)
    # against each unit: in two full suite runs all 8 units hit it at once.
    fleet.start_worker("w1", concurrency=4, VERIFLEET_UNIT_DEADLINE="90")
    fleet.start_worker("w2", concurrency=4, VERIFLEET_UNIT_DEADLINE="90")
    fleet.wait_ready(["w1", "w2"])
    # The MCP addresses travel in the job's config; the workers reach the server.
    job = Job.submit(_benchmark(served, mcp_server.url), config, redis_url)
    progress = job.wait(timeout=120)
    assert progress.status == JobStatus.DONE
    results: list[Any] = list(job.result_set())
    _check(results)
    # The Redis limiter capped the agents' calls across both workers.
    assert state.max_in_flight["scripted"] == 1
    for name in ("w1", "w2"):
        assert fleet.workers[name].poll() is None, f"{name} died"


def test_stdio_server_when_the_operator_allows_it(
    endpoint: tuple[ServedApp, ScriptedEndpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    served, _state = endpoint
    script = Path(__file__).resolve().parents[1] / "_support" / "mcp_stdio.py"
    model = ModelConfig(
        model_name="scripted",
        interface="openai_endpoint",
        endpoint_base_url=f"{served.url}/v1",
        mcp_urls_dict={"tools": f"stdio:{sys.executable} {script}"},
    )
    judge = ModelConfig(
        model_name="judge", interface="openai_endpoint", endpoint_base_url=f"{served.url}/v1"
    )
    config = VerificationConfig.build(answering_models=[model], parsing_models=[judge])
    text, value = QUESTIONS["failing-tool"]
    question = Question(id="q", question=text, raw_answer="3", answer_template=_template(value))
    monkeypatch.setenv("VERIFLEET_MCP_ALLOW_STDIO", "1")
    [result] = verify_question(
        question,
        model,
        [judge],
        config,
        replicate=None,
        resources=PipelineResources(),
        deadline=time.monotonic() + 60,
    )
    assert result.metadata.error is None
    assert result.template is not None and result.template.verify_result is True
    assert (result.template.agent_metrics or {})["tools_used"] == ["add", "gene_length"]


def test_tool_timeout_and_unit_deadline(
    endpoint: tuple[ServedApp, ScriptedEndpoint],
    mcp_server: McpServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    served, _state = endpoint
    model = ModelConfig(
        model_name="scripted",
        interface="openai_endpoint",
        endpoint_base_url=f"{served.url}/v1",
        mcp_urls_dict={"tools": mcp_server.url},
    )
    judge = ModelConfig(
        model_name="judge", interface="openai_endpoint", endpoint_base_url=f"{served.url}/v1"
    )
    config = VerificationConfig.build(answering_models=[model], parsing_models=[judge])
    question = Question(
        id="q",
        question='Wait. [tool:sleep {"seconds": 3}]',
        raw_answer="1",
        answer_template=_template(1),
    )
    resources = PipelineResources()

    def run(deadline: float) -> VerificationResult:
        [result] = verify_question(
            question, model, [judge], config, replicate=None, resources=resources, deadline=deadline
        )
        return result

    # A tool call past VERIFLEET_MCP_TOOL_TIMEOUT becomes an error the agent sees.
    monkeypatch.setenv("VERIFLEET_MCP_TOOL_TIMEOUT", "0.3")
    slow = run(time.monotonic() + 60)
    assert slow.metadata.error is None and slow.template is not None
    tool_message = slow.template.trace_messages[-2]
    assert tool_message["status"] == "error"
    assert tool_message["content"] == "error: tool 'sleep' timed out after 0.3 s"
    assert (slow.template.agent_metrics or {})["suspect_failed_tools"] == ["sleep"]

    # The unit deadline ends the whole run (its sessions are closed on the way out).
    monkeypatch.delenv("VERIFLEET_MCP_TOOL_TIMEOUT")
    late = run(time.monotonic() + 1.0)
    assert late.metadata.error == (
        "answer generation failed: the agent run was stopped at its deadline"
    )
