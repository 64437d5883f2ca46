"""Loading JSON-LD checkpoints of the original framework."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from verifleet.schemas import (
    AgenticRubricTrait,
    Benchmark,
    BenchmarkLoadError,
    CallableTrait,
    LLMRubricTrait,
    MetricRubricTrait,
    RegexTrait,
    UntrustedCodeError,
    load_benchmark,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALL_TRAITS = FIXTURES / "checkpoint_all_traits.jsonld"
SPIDER_ID = hashlib.md5(b"How many legs does a spider have?").hexdigest()


@pytest.fixture(scope="module")
def benchmark() -> Benchmark:
    return load_benchmark(ALL_TRAITS, trust_callables=True)


def _raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ALL_TRAITS.read_text())
    return data


def _write(tmp_path: Path, data: Any, name: str = "cp.jsonld") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_benchmark_metadata(benchmark: Benchmark) -> None:
    assert benchmark.name == "fixture-all-traits"
    assert benchmark.version == "1.2.0"
    assert benchmark.creator == "verifleet tests"
    assert benchmark.id == "urn:uuid:verifleet-fixture-all-traits"
    assert benchmark.custom_metadata == {"benchmark_format_version": "3.0.0-jsonld"}


def test_question_ids_from_item_or_text(benchmark: Benchmark) -> None:
    assert benchmark.question_ids == [
        "urn:uuid:question-capital-of-france-5f3a2c1d",
        SPIDER_ID,
        "q-no-template",
    ]


def test_question_fields(benchmark: Benchmark) -> None:
    q = benchmark.get_question("urn:uuid:question-capital-of-france-5f3a2c1d")
    assert q.text == "What is the capital of France?"
    assert q.raw_answer == "Paris"
    assert q.keywords == ["geography", "europe"]
    assert q.answer_template is not None and "class Answer(BaseAnswer)" in q.answer_template
    assert q.few_shot_examples == [{"question": "What is the capital of Italy?", "answer": "Rome"}]
    assert q.custom_metadata == {"difficulty": "easy", "source_row": 12}
    assert q.author == {"@type": "Person", "name": "A. Curator"}
    assert q.sources is not None and q.sources[0]["name"] == "Atlas"
    assert q.answer_notes == "Accept 'Paris, France'."
    assert q.finished is True
    assert q.date_modified == "2026-01-05T10:05:00"


def test_keywords_on_the_feed_item_and_empty_template(benchmark: Benchmark) -> None:
    q = benchmark.get_question("q-no-template")
    assert q.keywords == ["physics"]
    assert q.answer_template is None
    assert q.template_id == "no_template"
    assert q.finished is False


def test_global_rubric_traits(benchmark: Benchmark) -> None:
    rubric = benchmark.global_rubric
    assert rubric is not None
    safety, clarity, tone = rubric.llm_traits
    assert safety.kind == "boolean" and safety.deep_judgment_enabled
    assert safety.deep_judgment_max_excerpts == 3
    assert safety.deep_judgment_fuzzy_match_threshold == 0.75
    assert (clarity.kind, clarity.min_score, clarity.max_score) == ("score", 1, 5)
    assert tone.kind == "literal" and tone.classes == ["formal", "neutral", "casual"]
    assert tone.higher_is_better is False
    cite, no_apology = rubric.regex_traits
    assert cite.evaluate("see [3]") and not cite.evaluate("see (3)")
    assert no_apology.invert_result and not no_apology.case_sensitive
    assert not no_apology.evaluate("Sorry, no.")


def test_global_dynamic_rubric(benchmark: Benchmark) -> None:
    dynamic = benchmark.dynamic_rubric_for(SPIDER_ID)
    assert dynamic is not None
    (trait,) = dynamic.llm_traits
    assert (trait.name, trait.summary) == ("dosage_safety", "drug dosages")


def test_question_rubrics_cover_every_trait_type(benchmark: Benchmark) -> None:
    first = benchmark.rubric_for("urn:uuid:question-capital-of-france-5f3a2c1d")
    spider = benchmark.rubric_for(SPIDER_ID)
    sky = benchmark.rubric_for("q-no-template")
    assert first is not None and spider is not None and sky is not None
    kinds = {type(t) for r in (first, spider, sky) for t in r.all_traits()}
    assert kinds == {
        LLMRubricTrait,
        RegexTrait,
        CallableTrait,
        MetricRubricTrait,
        AgenticRubricTrait,
    }
    agentic = first.get_trait("checks_sources")
    assert isinstance(agentic, AgenticRubricTrait)
    assert (agentic.context_mode, agentic.max_turns, agentic.timeout_seconds) == (
        "trace_only",
        5,
        60,
    )
    metric = spider.get_trait("leg_facts")
    assert isinstance(metric, MetricRubricTrait) and metric.evaluation_mode == "full_matrix"
    assert metric.tn_instructions == ["claims six legs"]
    json_text_metric = sky.get_trait("sky_metric")
    assert isinstance(json_text_metric, MetricRubricTrait)
    assert json_text_metric.metrics == ["precision", "recall"]
    assert not json_text_metric.repeated_extraction
    depth = sky.get_trait("explanation_depth")
    assert isinstance(depth, LLMRubricTrait) and (depth.min_score, depth.max_score) == (0, 10)


def test_trusted_pickled_callable_runs(benchmark: Benchmark) -> None:
    rubric = benchmark.rubric_for(SPIDER_ID)
    assert rubric is not None
    trait = rubric.get_trait("short_answer")
    assert isinstance(trait, CallableTrait) and trait.trusted
    assert trait.evaluate("Eight legs.") is True
    assert trait.evaluate("word " * 60) is False


def test_pickled_callable_is_refused_without_trust() -> None:
    with pytest.raises(UntrustedCodeError) as info:
        load_benchmark(ALL_TRAITS)
    message = str(info.value)
    assert "'short_answer'" in message
    assert f"question {SPIDER_ID}" in message
    assert "trust_callables=True" in message


def test_trust_never_comes_from_the_file(tmp_path: Path) -> None:
    data = _raw()
    props = data["dataFeedElement"][1]["item"]["rating"][1]["additionalProperty"]
    props.append({"@type": "PropertyValue", "name": "trusted", "value": True})
    with pytest.raises(UntrustedCodeError):
        load_benchmark(_write(tmp_path, data))


def test_loaded_benchmark_survives_json_round_trip(benchmark: Benchmark) -> None:
    assert Benchmark.model_validate_json(benchmark.model_dump_json()) == benchmark


def test_json_with_context_is_a_checkpoint(tmp_path: Path) -> None:
    loaded = load_benchmark(_write(tmp_path, _raw(), "cp.json"), trust_callables=True)
    assert len(loaded.questions) == 3


def test_every_bad_template_is_reported_with_its_question() -> None:
    path = FIXTURES / "checkpoint_bad_templates.jsonld"
    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(path)
    error = info.value
    assert error.path == str(path)
    assert error.question_id is None
    lines = error.problem.splitlines()
    assert lines[0] == "3 problems:"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "question q-syntax",
        "question q-no-verify",
        "question q-os",
    ]
    assert "q-good" not in str(error)
    assert "'os'" in lines[3]


def test_template_validation_can_be_skipped() -> None:
    loaded = load_benchmark(FIXTURES / "checkpoint_bad_templates.jsonld", validate_templates=False)
    assert len(loaded.questions) == 4


def test_bad_ratings_name_question_and_trait() -> None:
    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(FIXTURES / "checkpoint_bad_rating.jsonld")
    message = str(info.value)
    assert "question q-bad-rating: trait 'mystery': unknown trait type" in message
    assert "question q-bad-metric: metric trait 'coverage'" in message


def _mutated(tmp_path: Path, change: Any) -> Path:
    data = copy.deepcopy(_raw())
    change(data)
    return _write(tmp_path, data)


def test_single_bad_question_sets_question_id(tmp_path: Path) -> None:
    def drop_text(data: dict[str, Any]) -> None:
        del data["dataFeedElement"][2]["item"]["text"]

    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(_mutated(tmp_path, drop_text), trust_callables=True)
    assert info.value.question_id == "q-no-template"
    assert info.value.problem == "question has no text"
    assert str(info.value).startswith(f"{tmp_path / 'cp.jsonld'}, question q-no-template:")


def test_clash_between_global_and_question_trait(tmp_path: Path) -> None:
    def rename(data: dict[str, Any]) -> None:
        data["dataFeedElement"][0]["item"]["rating"][0]["name"] = "clarity"

    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(_mutated(tmp_path, rename), trust_callables=True)
    assert info.value.question_id == "urn:uuid:question-capital-of-france-5f3a2c1d"
    assert "'clarity'" in info.value.problem and "global rubric" in info.value.problem


def test_duplicate_ids(tmp_path: Path) -> None:
    def duplicate(data: dict[str, Any]) -> None:
        data["dataFeedElement"][2]["@id"] = data["dataFeedElement"][0]["@id"]

    with pytest.raises(BenchmarkLoadError, match="used by more than one question"):
        load_benchmark(_mutated(tmp_path, duplicate), trust_callables=True)


def test_broken_pickle_is_reported_when_trusted(tmp_path: Path) -> None:
    def corrupt(data: dict[str, Any]) -> None:
        blob = base64.b64encode(cloudpickle.dumps(42)[:-3]).decode()
        data["dataFeedElement"][1]["item"]["rating"][1]["additionalProperty"][0]["value"] = blob

    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(_mutated(tmp_path, corrupt), trust_callables=True)
    assert info.value.question_id == SPIDER_ID
    assert "'short_answer' cannot be loaded" in info.value.problem


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonld"
    path.write_text('{\n  "name": "x",\n  "dataFeedElement": [\n')
    with pytest.raises(BenchmarkLoadError, match=r"broken.jsonld: not valid JSON \(line 4"):
        load_benchmark(path)


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkLoadError, match="must be a JSON object"):
        load_benchmark(_write(tmp_path, ["not", "a", "feed"]))


def test_legacy_global_rubric_object(tmp_path: Path) -> None:
    data = {
        "@context": {"@vocab": "http://schema.org/"},
        "@type": "DataFeed",
        "name": "legacy",
        "globalRubric": {
            "name": "Test Rubric",
            "llm_traits": [{"name": "Accuracy", "kind": "boolean"}],
            "regex_traits": [{"name": "HasNumbers", "pattern": "\\d+"}],
            "callable_traits": [
                {
                    "name": "Long",
                    "kind": "score",
                    "min_score": 1,
                    "max_score": 3,
                    "callable_code": "def evaluate(trace: str) -> int:\n"
                    "    return min(3, max(1, len(trace) // 10))",
                }
            ],
        },
        "dataFeedElement": [
            {"@id": "q1", "item": {"text": "Q?", "acceptedAnswer": {"text": "A"}}},
        ],
    }
    loaded = load_benchmark(_write(tmp_path, data))
    rubric = loaded.rubric_for("q1")
    assert rubric is not None
    assert rubric.get_trait_names() == ["Accuracy", "HasNumbers", "Long"]
    long_trait = rubric.get_trait("Long")
    assert isinstance(long_trait, CallableTrait) and not long_trait.is_pickled
    assert long_trait.evaluate("x" * 25) == 2


def _with_override(override: dict[str, Any]) -> Any:
    def change(data: dict[str, Any]) -> None:
        props = data["dataFeedElement"][0]["item"]["rating"][1]["additionalProperty"]
        props.append({"@type": "PropertyValue", "name": "model_override", "value": override})

    return change


def test_agentic_model_override_keeps_known_settings(tmp_path: Path) -> None:
    override = {"model_name": "judge-x", "model_provider": "openai", "max_retries": 3}
    path = _mutated(tmp_path, _with_override(override))
    loaded = load_benchmark(path, trust_callables=True)
    rubric = loaded.rubric_for("urn:uuid:question-capital-of-france-5f3a2c1d")
    assert rubric is not None
    trait = rubric.get_trait("checks_sources")
    assert isinstance(trait, AgenticRubricTrait) and trait.model_override is not None
    assert (trait.model_override.model_name, trait.model_override.model_provider) == (
        "judge-x",
        "openai",
    )


def test_agentic_model_override_with_unknown_interface(tmp_path: Path) -> None:
    path = _mutated(tmp_path, _with_override({"model_name": "m", "interface": "carrier_pigeon"}))
    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(path, trust_callables=True)
    assert info.value.question_id == "urn:uuid:question-capital-of-france-5f3a2c1d"
    assert "trait 'checks_sources': model_override.interface" in info.value.problem


def test_legacy_style_checkpoint() -> None:
    """Unprefixed trait types, float ratings, a plain-string creator, templates whose
    ground_truth() assigns self.correct, one without ground truth, and an
    unfinished placeholder template: shapes found in real checkpoints."""
    loaded = load_benchmark(FIXTURES / "checkpoint_legacy_style.jsonld")
    assert loaded.creator == "Plain String Creator"
    assert len(loaded.questions) == 3
    red = loaded.rubric_for("urn:uuid:question-which-planet-is-called-the-red-planet-0a1b2c3d")
    assert red is not None
    (brevity,) = red.llm_traits
    assert brevity.kind == "boolean"
    even = loaded.rubric_for("urn:uuid:question-is-10-even-4e5f6a7b")
    assert even is not None
    reasoning = even.get_trait("reasoning")
    assert isinstance(reasoning, LLMRubricTrait)
    assert (reasoning.kind, reasoning.min_score, reasoning.max_score) == ("score", 1, 5)
    assert reasoning.higher_is_better is True
    digits = even.get_trait("digits")
    assert isinstance(digits, RegexTrait) and digits.evaluate("10 is even")
    placeholder = loaded.get_question("urn:uuid:question-describe-photosynthesis-8c9d0e1f")
    assert placeholder.finished is False and placeholder.has_template
    assert loaded.rubric_for(placeholder) is None
