"""VerifiedField templates: field results, composition strategies and the spec's
granular rules (AllOf = passing weight share, AnyOf = best passing weight, AtLeastN =
top-N passing weights), all over the total weight of every verified field."""

from __future__ import annotations

import pytest
from pydantic import Field

from verifleet.templates import (
    AllOf,
    AnyOf,
    AtLeastN,
    BaseAnswer,
    BooleanMatch,
    ExactMatch,
    FieldCheck,
    NumericGraded,
    NumericTolerance,
    TraceRegex,
    VerifiedField,
    evaluate_strategy,
    granular_score,
    strategy_label,
)


class Plain(BaseAnswer):
    a: str = VerifiedField(
        description="A", ground_truth="yes", verify_with=ExactMatch(), weight=3.0
    )
    b: str = VerifiedField(
        description="B", ground_truth="yes", verify_with=ExactMatch(), weight=2.0
    )
    c: str = VerifiedField(
        description="C", ground_truth="yes", verify_with=ExactMatch(), weight=1.0
    )


class Any2(Plain):
    class VerificationStrategy:
        verify_strategy = AnyOf(conditions=[FieldCheck(field=n) for n in ("a", "b", "c")])


class AtLeast2(Plain):
    class VerificationStrategy:
        verify_strategy = AtLeastN(n=2, conditions=[FieldCheck(field=n) for n in ("a", "b", "c")])


class Explicit(Plain):
    class VerificationStrategy:
        verify_strategy = AllOf(conditions=[FieldCheck(field="a"), FieldCheck(field="b")])


class Nested(Plain):
    class VerificationStrategy:
        verify_strategy = AnyOf(
            conditions=[
                FieldCheck(field="a"),
                AllOf(conditions=[FieldCheck(field="b"), FieldCheck(field="c")]),
            ]
        )


def test_field_results_report_each_primitive() -> None:
    answer = Plain(a="YES", b="no", c=" yes ")
    assert answer.field_results() == {"a": True, "b": False, "c": True}


def test_default_is_all_of_with_weighted_share() -> None:
    answer = Plain(a="yes", b="no", c="yes")
    assert answer.verify() is False
    assert answer.verify_granular() == pytest.approx(4 / 6)
    assert Plain.composition_strategy() is None
    assert Plain(a="yes", b="yes", c="yes").verify() is True


def test_any_of_passes_on_one_field_and_scores_best_weight() -> None:
    answer = Any2(a="no", b="yes", c="yes")
    assert answer.verify() is True
    # Best single passing weight (b = 2) over the total (6), not the sum (3).
    assert answer.verify_granular() == pytest.approx(2 / 6)
    assert Any2.composition_strategy() == "any_of"
    assert Any2(a="no", b="no", c="no").verify() is False
    assert Any2(a="no", b="no", c="no").verify_granular() == 0.0


def test_at_least_n_counts_passes_and_scores_top_n_weights() -> None:
    all_pass = AtLeast2(a="yes", b="yes", c="yes")
    assert all_pass.verify() is True
    # Top two passing weights (3 + 2) over 6: the third pass earns nothing more.
    assert all_pass.verify_granular() == pytest.approx(5 / 6)
    one_pass = AtLeast2(a="yes", b="no", c="no")
    assert one_pass.verify() is False
    assert one_pass.verify_granular() == pytest.approx(3 / 6)
    assert AtLeast2.composition_strategy() == "at_least_n(2)"


def test_explicit_all_of_ignores_unlisted_fields_for_verify() -> None:
    answer = Explicit(a="yes", b="yes", c="no")
    assert answer.verify() is True
    assert answer.verify_granular() == pytest.approx(5 / 6)
    assert Explicit.composition_strategy() == "all_of"


def test_nested_strategies() -> None:
    assert Nested(a="no", b="yes", c="yes").verify() is True
    assert Nested(a="no", b="yes", c="no").verify() is False
    assert Nested(a="yes", b="no", c="no").verify() is True


def test_zero_total_weight_scores_zero() -> None:
    class Weightless(BaseAnswer):
        a: str = VerifiedField(
            description="A", ground_truth="x", verify_with=ExactMatch(), weight=0
        )

    assert Weightless(a="x").verify() is True
    assert Weightless(a="x").verify_granular() == 0.0


def test_strategy_naming_an_unknown_field_is_refused_at_class_definition() -> None:
    with pytest.raises(TypeError, match=r"unknown VerifiedField\(s\) \['nope'\]"):

        class Broken(Plain):
            class VerificationStrategy:
                verify_strategy = AnyOf(conditions=[FieldCheck(field="nope")])


def test_correct_is_a_reserved_field_name() -> None:
    with pytest.raises(TypeError, match="reserved"):

        class Clash(BaseAnswer):
            correct: str = "x"


def test_ground_truth_comes_from_verified_fields() -> None:
    answer = Plain(a="yes", b="no", c="no")
    assert answer.correct == {"a": "yes", "b": "yes", "c": "yes"}
    assert answer.get_ground_truth() == {"a": "yes", "b": "yes", "c": "yes"}


class WithTrace(BaseAnswer):
    value: float = VerifiedField(
        description="Reported value",
        ground_truth=85.5,
        verify_with=NumericTolerance(tolerance=0.05),
    )
    cites: bool = VerifiedField(
        description="Citations present",
        ground_truth=True,
        verify_with=TraceRegex(pattern=r"\[\d+\]"),
    )
    no_apology: bool = VerifiedField(
        description="No apology", ground_truth=False, verify_with=TraceRegex(pattern="(?i)sorry")
    )


def test_trace_fields_use_the_raw_response() -> None:
    answer = WithTrace(value=84.0, cites=False, no_apology=False)
    with pytest.raises(ValueError, match="set_raw_trace"):
        answer.field_results()
    answer.set_raw_trace("The rate is 84% [1].")
    assert answer.field_results() == {"value": True, "cites": True, "no_apology": True}
    answer.set_raw_trace("Sorry, roughly 84%.")
    assert answer.field_results() == {"value": True, "cites": False, "no_apology": False}
    assert answer.verify() is False
    assert answer.verify_granular() == pytest.approx(1 / 3)
    assert WithTrace.judge_fields() == ["value"]
    assert WithTrace.trace_fields() == ["cites", "no_apology"]


def test_classic_template_has_no_field_results_or_default_granular() -> None:
    class Classic(BaseAnswer):
        answer: str = Field(description="x")

        def verify(self) -> bool:
            return self.answer == "42"

    instance = Classic(answer="42")
    assert instance.field_results() is None
    assert Classic.defines_granular() is False
    with pytest.raises(NotImplementedError):
        instance.verify_granular()


def test_classic_template_without_verify_is_reported() -> None:
    class NoVerify(BaseAnswer):
        answer: str = Field(description="x")

    assert NoVerify.defines_verify() is False
    with pytest.raises(NotImplementedError, match="neither verify"):
        NoVerify(answer="x").verify()


def test_strategy_helpers_directly() -> None:
    node = AtLeastN(n=1, conditions=[FieldCheck(field="x"), FieldCheck(field="y")])
    assert evaluate_strategy(node, {"x": None, "y": True}) is True
    assert evaluate_strategy(node, {"x": None, "y": False}) is False
    with pytest.raises(KeyError):
        evaluate_strategy(node, {"x": True})
    assert strategy_label(node) == "at_least_n(1)"
    assert strategy_label(FieldCheck(field="x")) is None
    assert granular_score(None, {"x": True, "y": False}, {"x": 1.0}) == pytest.approx(0.5)
    assert granular_score(AnyOf(), {}, {}) == 0.0


def test_strategy_accepts_the_serialised_dict_form() -> None:
    class FromDict(Plain):
        class VerificationStrategy:
            verify_strategy = {
                "type": "any_of",
                "conditions": [{"type": "field_check", "field": "c"}],
            }

    assert FromDict.composition_strategy() == "any_of"
    assert FromDict(a="no", b="no", c="yes").verify() is True


def test_verified_field_metadata_is_exposed_in_declaration_order() -> None:
    metas = Plain.verified_fields()
    assert list(metas) == ["a", "b", "c"]
    assert [m.weight for m in metas.values()] == [3.0, 2.0, 1.0]
    assert all(m.ground_truth == "yes" for m in metas.values())


def test_verified_field_rejects_bad_declarations() -> None:
    with pytest.raises(ValueError, match="non-empty description"):
        VerifiedField(description=" ", ground_truth=1, verify_with=BooleanMatch())
    with pytest.raises(ValueError, match="verify_with"):
        VerifiedField(description="x", ground_truth=1, verify_with="exact")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="weight"):
        VerifiedField(description="x", ground_truth=1, verify_with=BooleanMatch(), weight=-1)


class GradedMix(BaseAnswer):
    mean: float = VerifiedField(
        description="Mean distance",
        ground_truth=1.0,
        verify_with=NumericGraded(cutoff=0.5),
        weight=2.0,
    )
    named: str = VerifiedField(description="Name", ground_truth="x", verify_with=ExactMatch())


def test_graded_fields_earn_partial_weight_in_verify_granular() -> None:
    answer = GradedMix(mean=1.25, named="y")
    assert answer.field_results() == {"mean": True, "named": False}
    assert answer.field_scores() == {"mean": pytest.approx(0.5), "named": 0.0}
    # 2.0 * 0.5 earned of 3.0 total.
    assert answer.verify_granular() == pytest.approx(1 / 3)
    assert answer.verify() is False
    assert Plain(a="yes", b="no", c="no").field_scores() == {"a": 1.0, "b": 0.0, "c": 0.0}
