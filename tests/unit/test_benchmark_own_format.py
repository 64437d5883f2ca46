"""Our own benchmark format (YAML and JSON): the documented example, round trips, errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifleet.schemas import (
    Benchmark,
    BenchmarkLoadError,
    CallableTrait,
    ExportError,
    Question,
    dump_benchmark,
    load_benchmark,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "format-example.yaml"
SKY_ID = hashlib.md5(b"Explain why the sky is blue.").hexdigest()

GOOD_TEMPLATE = """class Answer(BaseAnswer):
    value: int = Field(description="the number")

    def ground_truth(self):
        return {"value": 4}

    def verify(self) -> bool:
        return self.value == 4
"""


def _write_yaml(tmp_path: Path, document: object, name: str = "bench.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_documented_example_loads() -> None:
    benchmark = load_benchmark(EXAMPLE)
    assert benchmark.name == "format-example"
    assert benchmark.question_ids == ["capital-of-france", SKY_ID]
    first = benchmark.get_question("capital-of-france")
    assert first.keywords == ["geography", "europe"]
    assert first.few_shot_examples == [
        {"question": "What is the capital of Italy?", "answer": "Rome"}
    ]
    assert first.custom_metadata == {"difficulty": "easy"}
    assert first.template_id != "no_template"
    rubric = benchmark.rubric_for(first)
    assert rubric is not None
    assert rubric.get_trait_names() == [
        "clarity",
        "tone",
        "no_apology",
        "short_answer",
        "country_coverage",
    ]
    short = rubric.get_trait("short_answer")
    assert isinstance(short, CallableTrait)
    assert short.evaluate("Paris.") is True
    sky = benchmark.get_question(SKY_ID)
    assert sky.template_id == "no_template"
    assert benchmark.dynamic_rubric_for(sky) is not None


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_dump_then_load_gives_an_equal_benchmark(tmp_path: Path, suffix: str) -> None:
    original = load_benchmark(EXAMPLE)
    target = tmp_path / f"copy{suffix}"
    dump_benchmark(original, target)
    assert load_benchmark(target) == original
    assert not list(tmp_path.glob(".*.partial"))


def test_dumped_yaml_keeps_templates_readable(tmp_path: Path) -> None:
    target = tmp_path / "copy.yaml"
    dump_benchmark(load_benchmark(EXAMPLE), target)
    text = target.read_text()
    assert text.startswith("format: verifleet-benchmark/1\n")
    assert "answer_template: |" in text
    assert "    class Answer(BaseAnswer):\n" in text


def test_dumped_json_has_the_marker(tmp_path: Path) -> None:
    target = tmp_path / "copy.json"
    dump_benchmark(Benchmark(name="tiny"), target)
    assert json.loads(target.read_text()) == {"format": "verifleet-benchmark/1", "name": "tiny"}


def test_dump_reports_unwritable_target(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="cannot write the file"):
        dump_benchmark(Benchmark(name="tiny"), tmp_path / "missing-dir" / "out.yaml")


def test_dump_refuses_other_extensions(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"out\.jsonld: benchmarks are written as \.yaml"):
        dump_benchmark(Benchmark(name="tiny"), tmp_path / "out.jsonld")


def test_trusted_flag_in_the_file_is_ignored(tmp_path: Path) -> None:
    document = {
        "name": "b",
        "global_rubric": {
            "traits": [
                {
                    "trait_type": "callable",
                    "name": "c",
                    "callable_source": "def f(t):\n    return True\n",
                    "trusted": True,
                }
            ]
        },
        "questions": [{"question": "Q?"}],
    }
    loaded = load_benchmark(_write_yaml(tmp_path, document))
    assert loaded.global_rubric is not None
    assert loaded.global_rubric.callable_traits[0].trusted is False


def test_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    path = _write_yaml(tmp_path, {"questions": [{"question": "Q?"}]}, "my-bench.yml")
    assert load_benchmark(path).name == "my-bench"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkLoadError, match=r"nowhere\.yaml: file not found"):
        load_benchmark(tmp_path / "nowhere.yaml")


def test_unknown_extension(tmp_path: Path) -> None:
    path = tmp_path / "bench.toml"
    path.write_text("name = 'x'")
    with pytest.raises(BenchmarkLoadError, match=r"unknown benchmark file type '\.toml'"):
        load_benchmark(path)


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text("name: x\nquestions:\n  - question: [unclosed\n")
    with pytest.raises(BenchmarkLoadError, match=r"bench.yaml: not valid YAML \(line \d+"):
        load_benchmark(path)


def test_wrong_format_marker(tmp_path: Path) -> None:
    path = _write_yaml(tmp_path, {"format": "other/2", "questions": []})
    with pytest.raises(BenchmarkLoadError, match="format 'other/2'"):
        load_benchmark(path)


def test_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkLoadError, match="must hold a mapping"):
        load_benchmark(_write_yaml(tmp_path, ["a", "b"]))


def test_malformed_question_names_file_question_and_field(tmp_path: Path) -> None:
    document = {
        "name": "b",
        "questions": [
            {"id": "fine", "question": "Q?"},
            {
                "id": "bad-trait",
                "question": "R?",
                "question_rubric": {"traits": [{"name": "tone", "kind": "literal"}]},
            },
        ],
    }
    path = _write_yaml(tmp_path, document)
    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(path)
    assert info.value.question_id == "bad-trait"
    assert info.value.path == str(path)
    assert "question_rubric.llm_traits.0" in info.value.problem
    assert "literal trait 'tone' needs classes" in info.value.problem
    assert "Value error" not in info.value.problem


def test_question_without_id_is_named_by_text_hash(tmp_path: Path) -> None:
    document = {"questions": [{"question": "Q?", "keywords": "not-a-list"}]}
    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(_write_yaml(tmp_path, document))
    assert info.value.question_id == hashlib.md5(b"Q?").hexdigest()
    assert info.value.problem.startswith("keywords:")


def test_all_bad_templates_are_listed(tmp_path: Path) -> None:
    document = {
        "questions": [
            {"id": "q1", "question": "A?", "answer_template": GOOD_TEMPLATE},
            {"id": "q2", "question": "B?", "answer_template": "x = 1\n"},
            {"id": "q3", "question": "C?", "answer_template": "class Answer(BaseAnswer)\n"},
        ]
    }
    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(_write_yaml(tmp_path, document))
    message = str(info.value)
    assert "2 problems:" in message
    assert "question q2: template:" in message
    assert "question q3: template: template does not compile" in message
    assert "question q1" not in message


def test_broken_callable_source_is_reported_at_load(tmp_path: Path) -> None:
    document = {
        "questions": [
            {
                "id": "q1",
                "question": "A?",
                "question_rubric": {
                    "traits": [
                        {
                            "trait_type": "callable",
                            "name": "sneaky",
                            "callable_source": "import os\ndef f(t):\n    return True\n",
                        }
                    ]
                },
            }
        ]
    }
    with pytest.raises(BenchmarkLoadError) as info:
        load_benchmark(_write_yaml(tmp_path, document))
    assert info.value.question_id == "q1"
    assert "'sneaky'" in info.value.problem and "'os'" in info.value.problem


_texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=40,
).filter(lambda t: t.strip() != "")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(_texts, min_size=1, max_size=4, unique=True),
    notes=st.one_of(st.none(), _texts),
    keywords=st.lists(_texts, max_size=3),
    suffix=st.sampled_from([".yaml", ".json"]),
)
def test_arbitrary_text_survives_dump_and_load(
    tmp_path: Path, texts: list[str], notes: str | None, keywords: list[str], suffix: str
) -> None:
    benchmark = Benchmark(
        name="fuzz",
        questions=[
            Question(text=t, raw_answer=t[::-1], keywords=keywords, answer_notes=notes)
            for t in texts
        ],
    )
    target = tmp_path / f"fuzz{suffix}"
    dump_benchmark(benchmark, target)
    assert load_benchmark(target) == benchmark
