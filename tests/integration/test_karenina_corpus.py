"""Every checkpoint of our corpus (written the way the original framework writes
them, see fixtures/karenina_corpus/build_corpus.py) loads, and what it holds is
read as the original reads it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from verifleet.pipeline._rubric_eval.deterministic import (
    evaluate_callable_traits,
    evaluate_regex_traits,
)
from verifleet.schemas import Benchmark, CallableTrait, load_benchmark

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "karenina_corpus"
FILES = sorted(CORPUS.glob("*.jsonld"))


def _load(name: str) -> Benchmark:
    return load_benchmark(CORPUS / name)


def test_the_corpus_is_not_empty() -> None:
    assert len(FILES) >= 5


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_checkpoint_loads(path: Path) -> None:
    benchmark = load_benchmark(path)
    assert benchmark.questions
    for question in benchmark.questions:
        benchmark.rubric_for(question)
        benchmark.dynamic_rubric_for(question)


def _callable(benchmark: Benchmark, name: str) -> CallableTrait:
    assert benchmark.global_rubric is not None
    trait = benchmark.global_rubric.get_trait(name)
    assert isinstance(trait, CallableTrait)
    return trait


def test_base64_def_source_is_decoded_to_source_and_runs() -> None:
    benchmark = _load("every_trait.jsonld")
    cites = _callable(benchmark, "Cites")
    # Decoded to source (runs without trust_callables), not kept as a blob.
    assert not cites.is_pickled
    assert cites.callable_source is not None
    assert cites.callable_source.startswith("import re\n\ndef evaluate")
    assert cites.evaluate("as shown in [3]") is True
    assert cites.evaluate("no citation") is False
    length = _callable(benchmark, "Length")
    assert length.evaluate(" ".join(["w"] * 50)) == 3.0
    tone = _callable(benchmark, "Tone")
    assert tone.classes == ["formal", "casual"]
    assert tone.evaluate("Therefore, yes.") == 0
    question_rubric = benchmark.questions[0].question_rubric
    assert question_rubric is not None
    wordy = question_rubric.get_trait("Wordy")
    assert isinstance(wordy, CallableTrait) and wordy.evaluate("short") is True  # inverted


def test_missing_code_and_pattern_take_the_originals_defaults() -> None:
    benchmark = _load("incomplete_traits.jsonld")
    completeness = _callable(benchmark, "Completeness")
    assert not completeness.has_code
    question = benchmark.questions[0]
    rubric = benchmark.rubric_for(question)
    assert rubric is not None
    # The trait without code fails alone when evaluated; the rest is scored.
    scores = evaluate_callable_traits("Fe", rubric.callable_traits)
    assert scores.scores == {}
    assert "has no code" in scores.failures["Completeness"]
    regex = evaluate_regex_traits("anything", rubric.regex_traits)
    assert rubric.regex_traits[0].pattern == ""
    assert regex.scores == {"Citations": True}  # "" matches every text, as in the original


def test_every_trait_type_and_both_dynamic_scopes() -> None:
    benchmark = _load("every_trait.jsonld")
    rubric = benchmark.global_rubric
    assert rubric is not None
    assert [t.name for t in rubric.llm_traits] == ["Clarity", "Accurate", "Register", "Facts"]
    kinds = {t.name: t.kind for t in rubric.llm_traits}
    assert kinds == {
        "Clarity": "score",
        "Accurate": "boolean",
        "Register": "literal",
        "Facts": "template",
    }
    assert [t.name for t in rubric.metric_traits] == ["Coverage", "Discipline"]
    assert [t.name for t in rubric.agentic_traits] == ["WorkspaceTidy"]
    dynamic = benchmark.dynamic_rubric_for(benchmark.questions[0])
    assert dynamic is not None
    assert sorted(dynamic.get_trait_names()) == ["Hedging", "MentionsTagus", "UnitsGiven"]


def test_metadata_templates_and_ids() -> None:
    benchmark = _load("metadata_and_templates.jsonld")
    first = benchmark.questions[0]
    assert first.few_shot_examples is not None and len(first.few_shot_examples) == 3
    assert first.custom_metadata == {"difficulty": "easy", "reviewed_by": ["ana", "joe"]}
    planets = hashlib.md5(b"How many planets orbit the Sun?").hexdigest()
    assert benchmark.question_ids[1] == planets
    # The template importing difflib and unicodedata validated at load.
    assert benchmark.questions[2].has_template
    assert not benchmark.questions[3].has_template
    assert benchmark.questions[3].custom_metadata == {"workspace_path": "workspaces/water"}


def test_a_template_using_difflib_and_unicodedata_runs() -> None:
    # The original's templates may use these standard-library modules; the
    # corpus template normalises accents and fuzzy-matches the city name.
    import verifleet
    from bench.endpoint import EndpointConfig, run_endpoint_in_thread
    from verifleet.schemas import ModelConfig, VerificationConfig

    benchmark = _load("metadata_and_templates.jsonld")
    zurich = benchmark.questions[2]
    answers = {zurich.text: {"text": "Zürich", "fields": {"city": "Zürich"}}}
    with run_endpoint_in_thread(EndpointConfig(answers=answers)) as endpoint:  # type: ignore[arg-type]
        model = ModelConfig(
            model_name="m", interface="openai_endpoint", endpoint_base_url=endpoint.base_url
        )
        config = VerificationConfig(answering_models=[model], parsing_models=[model])
        one = benchmark.model_copy(update={"questions": [zurich]})
        [result] = verifleet.run(one, config).results
    assert result.metadata.error is None
    assert result.template is not None and result.template.verify_result is True
