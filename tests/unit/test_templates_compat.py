"""Templates written for the original framework run unchanged, and the judge-facing
helpers (schema, field names, build, parsed ground truth / LLM fields) keep the
ground truth, ids, regex checks and trace fields away from the judge."""

from __future__ import annotations

import json
import textwrap

import pytest
from pydantic import ValidationError

from verifleet.schemas import TemplateValidationError
from verifleet.templates import (
    build_answer,
    inject_question_id,
    judge_field_names,
    judge_json_schema,
    parsed_ground_truth,
    parsed_llm_fields,
    validate_answer_template,
)

ENTITIES_TEMPLATE = textwrap.dedent(
    """
    from pydantic import Field

    from karenina.schemas.entities import BaseAnswer


    class Answer(BaseAnswer):
        target: str = Field(description="The protein target of the drug")
        count: int = Field(description="Number of chromosome pairs")

        def model_post_init(self, __context):
            self.correct = {"target": "BCL2", "count": 23}

        def verify(self) -> bool:
            return (
                self.target.strip().upper().replace("-", "") == self.correct["target"]
                and self.count == self.correct["count"]
            )

        def verify_granular(self) -> float:
            hits = [
                self.target.strip().upper().replace("-", "") == self.correct["target"],
                self.count == self.correct["count"],
            ]
            return sum(hits) / len(hits)
    """
)

OLD_TEMPLATE = textwrap.dedent(
    """
    from karenina.schemas.answer_class import BaseAnswer
    from pydantic import Field
    from typing import List


    class Answer(BaseAnswer):
        \"\"\"Answer to the question: which genes?\"\"\"

        genes: List[str] = Field(description="Genes named in the response")

        def ground_truth(self):
            self.correct = {"genes": ["EGFR", "KRAS"]}
            self.regex = {"cites": {"pattern": r"\\[\\d+\\]", "expected": 1, "match_type": "count"}}

        def verify(self) -> bool:
            return sorted(g.upper() for g in self.genes) == sorted(self.correct["genes"])
    """
)

DOMAIN_NO_IMPORTS_TEMPLATE = textwrap.dedent(
    """
    class Answer(BaseAnswer):
        answer: Optional[str] = Field(description="The answer", default=None)
        tags: List[str] = Field(default_factory=list, description="tags")

        def model_post_init(self, __context):
            self.correct = {"answer": "Paris"}

        def verify(self):
            return (self.answer or "").lower() == "paris"
    """
)

VERIFIED_TEMPLATE = textwrap.dedent(
    """
    from karenina.schemas.entities import BaseAnswer, VerifiedField
    from karenina.schemas.entities.primitives import BooleanMatch, ExactMatch, TraceRegex
    from karenina.schemas.entities.composition import AnyOf, FieldCheck
    from karenina.schemas.primitives import SynonymMap


    class VenetoclaxAnswer(BaseAnswer):
        target: str = VerifiedField(
            description="The drug target protein",
            ground_truth="BCL2",
            verify_with=ExactMatch(normalize=["lowercase", "strip", SynonymMap(mapping={"bcl-2": "bcl2"})]),
            weight=2.0,
            extraction_hint="HGNC symbol",
        )
        approved: bool = VerifiedField(
            description="True if the response states FDA approval",
            ground_truth=True,
            verify_with=BooleanMatch(),
        )
        cites: bool = VerifiedField(
            description="Has citations", ground_truth=True, verify_with=TraceRegex(pattern=r"\\[\\d+\\]")
        )

        class VerificationStrategy:
            verify_strategy = AnyOf(conditions=[FieldCheck(field="target"), FieldCheck(field="approved")])
    """
)


def test_entities_template_with_model_post_init_runs_unchanged() -> None:
    cls = inject_question_id(validate_answer_template(ENTITIES_TEMPLATE, question_id="q1"), "q1")
    answer = build_answer(cls, {"target": "Bcl-2", "count": 23})
    assert answer.id == "q1"
    assert answer.verify() is True
    assert cls.defines_granular() is True
    assert build_answer(cls, {"target": "TP53", "count": 23}).verify_granular() == 0.5
    assert parsed_ground_truth(cls) == {"target": "BCL2", "count": 23}
    assert answer.field_results() is None and cls.composition_strategy() is None


def test_old_answer_class_template_with_ground_truth_method() -> None:
    cls = validate_answer_template(OLD_TEMPLATE, question_id="q2")
    answer = build_answer(cls, {"genes": ["kras", "egfr"]})
    assert answer.verify() is True
    assert parsed_ground_truth(cls) == {"genes": ["EGFR", "KRAS"]}
    assert answer.verify_regex("EGFR and KRAS [1]").overall_success is True
    assert answer.verify_regex("EGFR and KRAS").overall_success is False
    assert judge_field_names(cls) == ["genes"]


def test_template_relying_on_preloaded_names() -> None:
    cls = validate_answer_template(DOMAIN_NO_IMPORTS_TEMPLATE, question_id="q3")
    assert build_answer(cls, {"answer": "PARIS"}).verify() is True
    assert build_answer(cls, {}).verify() is False


def test_verified_field_template_through_karenina_paths() -> None:
    cls = inject_question_id(validate_answer_template(VERIFIED_TEMPLATE, question_id="q4"), "q4")
    assert cls.__name__ == "VenetoclaxAnswer"
    assert cls.composition_strategy() == "any_of"
    answer = build_answer(cls, {"target": "Bcl-2", "approved": False})
    answer.set_raw_trace("Venetoclax targets BCL-2 [1].")
    assert answer.field_results() == {"target": True, "approved": False, "cites": True}
    assert answer.verify() is True
    assert answer.verify_granular() == pytest.approx(2 / 4)
    assert parsed_ground_truth(cls) == {"target": "BCL2", "approved": True, "cites": True}


def test_judge_schema_hides_ground_truth_ids_and_trace_fields() -> None:
    cls = inject_question_id(validate_answer_template(VERIFIED_TEMPLATE, question_id="q4"), "q4")
    schema = judge_json_schema(cls)
    assert list(schema["properties"]) == ["target", "approved"]
    assert schema["required"] == ["target", "approved"]
    assert "additionalProperties" not in schema
    assert "HGNC symbol" in schema["properties"]["target"]["description"]
    text = json.dumps(schema)
    for leaked in ("BCL2", "bcl2", "__verification__", "ExactMatch", "cites", '"id"', "correct"):
        assert leaked not in text
    # Even pydantic's own schema entry point carries no verification metadata.
    assert "BCL2" not in json.dumps(cls.model_json_schema())


def test_judge_schema_of_classic_template_excludes_id_correct_and_regex() -> None:
    cls = validate_answer_template(OLD_TEMPLATE, question_id="q2")
    schema = judge_json_schema(cls)
    assert set(schema["properties"]) == {"genes"}
    text = json.dumps(schema)
    assert "EGFR" not in text and "regex" not in text and "correct" not in text


def test_build_answer_drops_what_the_judge_must_not_set() -> None:
    cls = inject_question_id(validate_answer_template(ENTITIES_TEMPLATE, question_id="q1"), "q1")
    answer = build_answer(
        cls,
        {
            "target": "TP53",
            "count": 1,
            "id": "forged",
            "correct": {"target": "TP53", "count": 1},
            "x": 1,
        },
    )
    assert answer.id == "q1"
    assert answer.correct == {"target": "BCL2", "count": 23}
    assert answer.verify() is False
    assert parsed_llm_fields(answer) == {"target": "TP53", "count": 1}


def test_build_answer_raises_validation_error_for_bad_judge_output() -> None:
    cls = validate_answer_template(ENTITIES_TEMPLATE, question_id="q1")
    with pytest.raises(ValidationError, match="count"):
        build_answer(cls, {"target": "BCL2", "count": "many"})
    with pytest.raises(ValidationError, match="target"):
        build_answer(cls, {"count": 1})


def test_regex_only_template_needs_no_judge() -> None:
    source = textwrap.dedent(
        """
        from karenina.schemas.entities import BaseAnswer

        class Answer(BaseAnswer):
            def ground_truth(self):
                self.regex = {"year": {"pattern": r"\\b\\d{4}\\b", "expected": "1928", "match_type": "exact"}}
        """
    )
    cls = validate_answer_template(source, question_id="q5")
    assert judge_field_names(cls) == []
    assert judge_json_schema(cls)["properties"] == {}
    answer = build_answer(cls, {})
    assert answer.verify() is True
    assert answer.verify_regex("Discovered in 1928.").overall_success is True
    assert parsed_ground_truth(cls) is None


def test_injection_keeps_identity_and_links_the_raw_class() -> None:
    raw = validate_answer_template(ENTITIES_TEMPLATE, question_id="q1")
    bound = inject_question_id(raw, "q9")
    assert bound.__name__ == raw.__name__ and bound.__module__ == raw.__module__
    assert bound.raw_answer_class is raw and bound.bound_question_id == "q9"
    assert bound.template_source == ENTITIES_TEMPLATE
    assert raw(target="x", count=1).id is None
    assert bound(target="x", count=1).id == "q9"


def test_parsed_ground_truth_is_a_fresh_copy_each_time() -> None:
    cls = validate_answer_template(OLD_TEMPLATE, question_id="q2")
    first = parsed_ground_truth(cls)
    assert first is not None
    first["genes"].append("TP53")
    assert parsed_ground_truth(cls) == {"genes": ["EGFR", "KRAS"]}


def test_source_code_is_kept_on_the_class() -> None:
    cls = validate_answer_template(OLD_TEMPLATE, question_id="q2")
    assert cls.get_source_code() == OLD_TEMPLATE


def test_judge_schema_hides_ids_of_nested_answer_models() -> None:
    source = textwrap.dedent(
        """
        from pydantic import Field
        from karenina.schemas.domain import BaseAnswer

        class Citation(BaseAnswer):
            identifier: str = Field(description="Citation identifier like [1]")

        class Answer(BaseAnswer):
            main: str = Field(description="The answer")
            citations: list[Citation] = Field(default_factory=list, description="Sources")

            def model_post_init(self, __context):
                self.correct = {"main": "x"}

            def verify(self):
                return self.main == "x"
        """
    )
    cls = validate_answer_template(source, question_id="q6")
    schema = judge_json_schema(cls)
    citation = schema["$defs"]["Citation"]
    assert set(citation["properties"]) == {"identifier"}
    assert citation["required"] == ["identifier"]
    assert "additionalProperties" not in citation
    assert schema["properties"]["citations"]["items"] == {"$ref": "#/$defs/Citation"}
    schema["properties"].clear()  # callers get a copy, not the cached schema
    assert set(judge_json_schema(cls)["properties"]) == {"main", "citations"}


def test_verified_fields_with_model_post_init_ground_truth() -> None:
    source = textwrap.dedent(
        """
        from karenina.schemas.entities import BaseAnswer, VerifiedField
        from karenina.schemas.entities import NumericTolerance

        class Answer(BaseAnswer):
            rate: float = VerifiedField(
                description="Efficacy rate in percent",
                ground_truth=85.5,
                verify_with=NumericTolerance(tolerance=0.05),
            )

            def model_post_init(self, __context):
                self.correct = {"rate": 85.5, "source": "trial report"}
        """
    )
    cls = inject_question_id(validate_answer_template(source, question_id="q7"), "q7")
    assert parsed_ground_truth(cls) == {"rate": 85.5, "source": "trial report"}
    answer = build_answer(cls, {"rate": 84})
    assert answer.id == "q7"
    assert answer.verify() is True and answer.field_results() == {"rate": True}
    assert build_answer(cls, {"rate": 70}).verify() is False


def test_templates_may_import_from_verifleet_schemas() -> None:
    source = textwrap.dedent(
        """
        from verifleet.templates import BaseAnswer, NumericTolerance, VerifiedField


        class Answer(BaseAnswer):
            celsius: float = VerifiedField(
                description="Boiling point",
                ground_truth=100.0,
                verify_with=NumericTolerance(tolerance=0.02),
            )
        """
    )
    cls = validate_answer_template(source, question_id="q")
    assert cls(celsius=99.0).verify() is True
    assert cls(celsius=90.0).verify() is False
    with pytest.raises(TemplateValidationError, match=r"verifleet\.orchestrator"):
        validate_answer_template("import verifleet.orchestrator\n" + source, question_id="q")
