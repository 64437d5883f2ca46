"""The scenario model and its two loaders: our YAML and the original framework's
JSON-LD checkpoints (scenarios under ``DataFeed.hasPart``), with graph validation
that names the node or edge at fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from _support.scenarios import template

from verifleet.schemas import (
    END,
    BenchmarkLoadError,
    ScenarioDefinition,
    dump_benchmark,
    load_benchmark,
)
from verifleet.templates import BooleanMatch

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "benchmark.yaml"


def _question(text: str) -> dict[str, Any]:
    return {
        "@type": "Question",
        "text": text,
        "acceptedAnswer": {"@type": "Answer", "text": "BCL2"},
        "hasPart": {
            "@type": "SoftwareSourceCode",
            "name": f"{text} Answer Template",
            "text": template("bcl2"),
        },
    }


def _checkpoint(*scenarios: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint shaped like the original framework writes one."""
    return {
        "@context": {"@vocab": "https://schema.org/", "karenina": "urn:karenina:vocab:"},
        "@type": "DataFeed",
        "name": "scenario checkpoint",
        "dateCreated": "2026-01-01T00:00:00",
        "dateModified": "2026-01-01T00:00:00",
        "dataFeedElement": [],
        "hasPart": list(scenarios),
    }


def _karenina_scenario(**changes: Any) -> dict[str, Any]:
    scenario: dict[str, Any] = {
        "@type": "karenina:Scenario",
        "name": "triage",
        "description": "two turns",
        "entryNode": "ask",
        "nodes": {
            "ask": {
                "@type": "karenina:ScenarioNode",
                "nodeId": "ask",
                "question": _question("Which gene?"),
                "questionData": {
                    "question": "Which gene?",
                    "raw_answer": "BCL2",
                    "answer_template": template("bcl2"),
                    "tags": ["genes"],
                },
                "modelOverride": {
                    "parsing_model": {
                        "id": "strict-judge",
                        "model_name": "gpt-4.1",
                        "model_provider": "openai",
                        "interface": "langchain",
                        "temperature": 0.0,
                    }
                },
                "metadata": {},
            },
            "follow": {
                "@type": "karenina:ScenarioNode",
                "nodeId": "follow",
                "question": _question("And the tissue?"),
                "metadata": {"note": "kept"},
            },
        },
        "edges": [
            {
                "source": "ask",
                "target": "follow",
                "condition": {
                    "type": "state_check",
                    "field": "verify_result",
                    "expected": True,
                    "verify_with": {"type": "BooleanMatch"},
                },
            },
            {"source": "ask", "target": "__end__", "condition": None},
            {"source": "follow", "target": "__end__"},
        ],
        "outcomeCriteria": [
            {
                "name": "both_right",
                "description": "",
                "check": {
                    "type": "AllOf",
                    "conditions": [
                        {
                            "type": "TurnCheck",
                            "scope": {"type": "all_turns", "node_id": None},
                            "field": "verify_result",
                            "expected": True,
                            "verify_with": {"type": "BooleanMatch"},
                        },
                        {
                            "type": "ResultCheck",
                            "field": "turn_count",
                            "expected": 2,
                            "verify_with": {"type": "NumericExact"},
                        },
                    ],
                },
            },
            {"name": "wrong", "check": {"type": "CountTurns", "verify_result": False}},
        ],
        "metadata": {},
    }
    scenario.update(changes)
    return scenario


def test_checkpoint_scenarios_are_loaded_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bench.jsonld"
    path.write_text(json.dumps(_checkpoint(_karenina_scenario())))
    benchmark = load_benchmark(path)
    [scenario] = benchmark.scenarios
    assert scenario.id == "triage" and scenario.entry_node == "ask"
    assert scenario.max_turns == 20  # the original's default turn limit
    ask = scenario.node("ask")
    assert ask.question.text == "Which gene?" and ask.question.keywords == ["genes"]
    assert ask.question.has_template
    assert ask.parsing_model is not None and ask.parsing_model.model_name == "gpt-4.1"
    assert scenario.node("follow").metadata == {"note": "kept"}
    first = scenario.edges[0]
    assert isinstance(first.when[0].verify_with, BooleanMatch)
    assert first.when[0].check({"verify_result": True}) is True
    assert first.when[0].check({"verify_result": False}) is False
    assert scenario.edges[1].is_fallback and scenario.edges[1].target == END
    check = scenario.outcome_criteria[0].check
    assert check.type == "all_of" and [c.type for c in check.conditions] == [
        "turn_check",
        "result_check",
    ]
    assert scenario.outcome_criteria[1].check.type == "count_turns"


@pytest.mark.parametrize(
    ("changes", "fault"),
    [
        ({"entryNode": "nowhere"}, "entry node 'nowhere' is not a node"),
        (
            {
                "edges": [
                    {"source": "ask", "target": "ghost"},
                    {"source": "ask", "target": "follow"},
                ]
            },
            "edge ask -> ghost: target 'ghost' is not a node or END",
        ),
        ({"edges": [{"source": "ask", "target": "__end__"}]}, "node 'follow' is unreachable"),
        (
            {"edges": [{"source": "ask", "target": "follow", "conditionSource": "lambda s"}]},
            "edge ask -> follow: conditionSource: it is not Python",
        ),
        (
            {"edges": [{"source": "ask", "target": "follow", "handover": "carrier_pigeon"}]},
            "edge ask -> follow: unknown handover strategy 'carrier_pigeon'",
        ),
        (
            {
                "edges": [
                    {"source": "ask", "target": "follow", "handover": "transcript_materialize"}
                ]
            },
            "edge ask -> follow: handover 'transcript_materialize' is not supported",
        ),
        (
            {"outcomeCriteria": [{"name": "odd", "check": {"type": "MagicCheck"}}]},
            "outcome criterion 'odd': check type 'MagicCheck' is not supported",
        ),
    ],
)
def test_checkpoint_problems_name_the_node_or_edge_and_fail_that_scenario_alone(
    tmp_path: Path, changes: dict[str, Any], fault: str
) -> None:
    broken = _karenina_scenario(**changes)
    good = {**_karenina_scenario(), "name": "intact"}
    path = tmp_path / "bench.jsonld"
    path.write_text(json.dumps(_checkpoint(broken, good)))
    benchmark = load_benchmark(path)
    assert [s.id for s in benchmark.scenarios] == ["intact"]
    [failed] = benchmark.broken_scenarios
    assert failed.id == "triage" and fault in failed.problem
    assert failed.message.startswith("scenario 'triage': ")


def test_state_update_code_is_kept_and_a_cut_lambda_is_named_once(tmp_path: Path) -> None:
    """The original saves ``lambda acc, parsed: ...`` given as a callable cut at
    its first comma (``lambda acc``): that scenario fails alone, naming the node
    once; intact code is kept as source for the sandbox."""
    cut = _karenina_scenario()
    cut["nodes"]["follow"]["stateUpdateSource"] = "lambda acc"
    whole = {**_karenina_scenario(), "name": "whole"}
    whole["nodes"] = {**whole["nodes"], "follow": dict(whole["nodes"]["follow"])}
    whole["nodes"]["follow"]["stateUpdateSource"] = "def update(acc, parsed):\n    return acc"
    path = tmp_path / "bench.jsonld"
    path.write_text(json.dumps(_checkpoint(cut, whole)))
    benchmark = load_benchmark(path)
    [failed] = benchmark.broken_scenarios
    assert failed.problem.count("node 'follow'") == 1
    assert "node 'follow': stateUpdateSource: it is not Python" in failed.problem
    [kept] = benchmark.scenarios
    assert kept.node("follow").state_update_source.startswith("def update(acc, parsed)")


def test_yaml_example_loads_and_round_trips(tmp_path: Path) -> None:
    benchmark = load_benchmark(EXAMPLE)
    [scenario] = benchmark.scenarios
    assert [n.id for n in scenario.nodes] == ["ask_gene", "ask_tissue", "retry_gene"]
    assert scenario.max_turns == 4
    assert scenario.node("ask_tissue").state_update[0].source == "parsed.cancer"
    assert [e.is_fallback for e in scenario.outgoing("ask_gene")] == [False, True]
    copy = tmp_path / "copy.yaml"
    dump_benchmark(benchmark, copy)
    assert load_benchmark(copy) == benchmark


def _yaml_with(tmp_path: Path, scenario: dict[str, Any]) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(yaml.safe_dump({"name": "b", "questions": [], "scenarios": [scenario]}))
    return path


def test_yaml_cycle_without_turn_limit_names_the_cycle(tmp_path: Path) -> None:
    scenario = {
        "id": "spin",
        "nodes": [{"id": "a", "question": "A?"}, {"id": "b", "question": "B?"}],
        "edges": [{"source": "a", "target": "b"}, {"source": "b", "target": "a"}],
    }
    benchmark = load_benchmark(_yaml_with(tmp_path, scenario))
    [failed] = benchmark.broken_scenarios
    assert benchmark.scenarios == [] and failed.id == "spin"
    assert "cycle a -> b -> a needs a turn limit" in failed.message
    scenario["max_turns"] = 5
    assert load_benchmark(_yaml_with(tmp_path, scenario)).scenarios[0].turn_limit == 5


def test_yaml_unknown_source_and_bad_template_are_named(tmp_path: Path) -> None:
    scenario = {
        "id": "s",
        "nodes": [{"id": "a", "question": "A?", "answer_template": "class Nope: pass"}],
        "edges": [{"source": "z", "target": "a"}],
    }
    [failed] = load_benchmark(_yaml_with(tmp_path, scenario)).broken_scenarios
    assert "edge z -> a: source 'z' is not a node" in failed.problem
    scenario["edges"] = []
    with pytest.raises(BenchmarkLoadError, match="scenario s, node a: template: "):
        load_benchmark(_yaml_with(tmp_path, scenario))


def test_duplicate_ids_and_unknown_primitive_are_refused() -> None:
    base = {"id": "s", "nodes": [{"id": "a", "question": "A?"}]}
    with pytest.raises(ValueError, match="node id 'a' is used by 2 nodes"):
        ScenarioDefinition.model_validate({**base, "nodes": base["nodes"] * 2})
    with pytest.raises(ValueError, match="unknown verify_with type 'Telepathy'"):
        ScenarioDefinition.model_validate(
            {
                **base,
                "edges": [
                    {
                        "source": "a",
                        "target": "END",
                        "when": {"field": "x", "verify_with": {"type": "Telepathy"}},
                    }
                ],
            }
        )


def test_a_tool_filter_is_kept_to_be_applied(tmp_path: Path) -> None:
    """The original saves a node's toolFilter and never applies it: verifleet
    keeps it and applies it at the node's turn (tests/integration/test_scenario_tools.py)."""
    scenario = _karenina_scenario()
    scenario["nodes"]["follow"]["toolFilter"] = {"remove": [{"server": "pubmed", "tool": None}]}
    path = tmp_path / "bench.jsonld"
    path.write_text(json.dumps(_checkpoint(scenario)))
    [kept] = load_benchmark(path).scenarios
    tool_filter = kept.node("follow").tool_filter
    assert tool_filter is not None and tool_filter.remove[0].server == "pubmed"
