"""Rubric and DynamicRubric collections and their merging."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from verifleet.schemas import (
    DynamicRubric,
    LLMRubricTrait,
    RegexTrait,
    Rubric,
    RubricError,
    merge_dynamic_rubrics,
    merge_rubrics,
)


def _rubric(*names: str) -> Rubric:
    return Rubric(llm_traits=[LLMRubricTrait(name=n) for n in names])


def test_flat_traits_list_is_sorted_by_type() -> None:
    rubric = Rubric.model_validate(
        {
            "traits": [
                {"name": "clarity", "kind": "score"},
                {"trait_type": "regex", "name": "cite", "pattern": "x"},
                {"trait_type": "metric", "name": "m", "metrics": ["f1"], "tp_instructions": ["a"]},
            ]
        }
    )
    assert [t.name for t in rubric.llm_traits] == ["clarity"]
    assert [t.name for t in rubric.regex_traits] == ["cite"]
    assert [t.name for t in rubric.metric_traits] == ["m"]
    assert rubric.get_trait_names() == ["clarity", "cite", "m"]


def test_flat_traits_unknown_type() -> None:
    with pytest.raises(ValidationError, match="trait_type 'psychic'"):
        Rubric.model_validate({"traits": [{"trait_type": "psychic", "name": "x"}]})


def test_duplicate_names_within_one_rubric() -> None:
    with pytest.raises(ValidationError, match="'dup' is used twice"):
        Rubric(
            llm_traits=[LLMRubricTrait(name="dup")],
            regex_traits=[RegexTrait(name="dup", pattern="x")],
        )


def test_lookup_helpers() -> None:
    rubric = Rubric(
        llm_traits=[
            LLMRubricTrait(name="s", kind="score", max_score=7),
            LLMRubricTrait(name="b", higher_is_better=False),
        ],
        regex_traits=[RegexTrait(name="r", pattern="x")],
    )
    assert rubric.get_trait("r") is rubric.regex_traits[0]
    assert rubric.get_trait("nope") is None
    assert rubric.get_trait_max_scores() == {"s": 7}
    assert rubric.get_trait_directionalities() == {"s": True, "b": False, "r": True}
    assert not rubric.is_empty() and Rubric().is_empty()


def test_merge_keeps_global_first() -> None:
    merged = merge_rubrics(_rubric("a", "b"), _rubric("c"), question_id="q1")
    assert merged is not None
    assert merged.get_trait_names() == ["a", "b", "c"]


def test_merge_with_missing_or_empty_sides() -> None:
    only = _rubric("a")
    assert merge_rubrics(None, None) is None
    assert merge_rubrics(Rubric(), Rubric()) is None
    assert merge_rubrics(only, None) is only
    assert merge_rubrics(None, only) is only
    assert merge_rubrics(Rubric(), only) is only


def test_merge_clash_names_trait_and_both_sources() -> None:
    with pytest.raises(RubricError) as info:
        merge_rubrics(_rubric("clarity", "x"), _rubric("clarity"), question_id="q42")
    message = str(info.value)
    assert "'clarity'" in message
    assert "global rubric" in message
    assert "rubric of question q42" in message
    assert "'x'" not in message


def test_dynamic_rubric_needs_concept_text() -> None:
    with pytest.raises(ValidationError, match="summary or a description"):
        DynamicRubric(llm_traits=[LLMRubricTrait(name="bare")])
    ok = DynamicRubric(llm_traits=[LLMRubricTrait(name="d", summary="drug dosages")])
    assert ok.llm_traits[0].concept_text() == "drug dosages"


def test_dynamic_merge_clash() -> None:
    first = DynamicRubric(llm_traits=[LLMRubricTrait(name="d", description="x")])
    second = DynamicRubric(llm_traits=[LLMRubricTrait(name="d", description="y")])
    with pytest.raises(RubricError, match=r"global dynamic rubric.*question q1"):
        merge_dynamic_rubrics(first, second, question_id="q1")


def test_rubric_json_round_trip() -> None:
    rubric = Rubric.model_validate(
        {
            "traits": [
                {"name": "tone", "kind": "literal", "classes": {"a": "x", "b": "y"}},
                {
                    "trait_type": "callable",
                    "name": "c",
                    "callable_source": "def f(t):\n    return 1",
                },
            ]
        }
    )
    assert Rubric.model_validate_json(rubric.model_dump_json()) == rubric
