"""Verification primitives and normalisers: each compares the way its docstring says,
and a value of the wrong shape is a mismatch, never an exception."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from verifleet.templates import (
    BooleanMatch,
    ContainsAll,
    ContainsAny,
    DateMatch,
    DateRange,
    DateTolerance,
    ExactMatch,
    LiteralMatch,
    NumericExact,
    NumericGraded,
    NumericMaximum,
    NumericMinimum,
    NumericRange,
    NumericRangeGraded,
    NumericThresholdGraded,
    NumericTolerance,
    OrderedMatch,
    RegexMatch,
    SemanticMatch,
    SetContainment,
    SynonymMap,
    TraceContains,
    TraceLength,
    TraceRegex,
    apply_normalizers,
)


class TestNormalizers:
    def test_named_normalisers_compose_in_order(self) -> None:
        text = "  Hello,   WORLD!  "
        assert apply_normalizers(["lowercase", "strip"], text) == "hello,   world!"
        assert apply_normalizers(["remove_punctuation", "collapse_whitespace"], text) == (
            "Hello WORLD"
        )
        assert apply_normalizers(["remove_whitespace", "lowercase"], text) == "hello,world!"

    def test_synonym_map_applies_after_earlier_normalisers(self) -> None:
        synonyms = SynonymMap(mapping={"asa": "aspirin"})
        assert apply_normalizers(["lowercase", "strip", synonyms], " ASA ") == "aspirin"
        assert apply_normalizers([synonyms], "ASA") == "ASA"

    def test_unknown_normaliser_is_named_in_the_error(self) -> None:
        with pytest.raises(ValueError, match="'titlecase'"):
            apply_normalizers(["titlecase"], "x")


class TestStringPrimitives:
    def test_exact_match_default_normalisation(self) -> None:
        assert ExactMatch().check("  Paris ", "paris")
        assert not ExactMatch().check("Lyon", "paris")

    def test_exact_match_without_normalisation_is_case_sensitive(self) -> None:
        assert not ExactMatch(normalize=[]).check("Paris", "paris")

    def test_exact_match_with_synonyms_and_punctuation(self) -> None:
        synonyms = SynonymMap(mapping={"venclexta": "venetoclax"})
        primitive = ExactMatch(normalize=["lowercase", "strip", synonyms])
        assert primitive.check(" Venclexta", "venetoclax")
        assert not primitive.check("navitoclax", "venetoclax")
        assert ExactMatch(normalize=["lowercase", "remove_punctuation"]).check("Bcl-2.", "bcl2")

    def test_contains_any_and_all(self) -> None:
        any_of = ContainsAny(substrings=["mapk", "map kinase"], normalize=["lowercase"])
        assert any_of.check("The MAP kinase pathway", None)
        assert not any_of.check("the wnt pathway", None)
        all_of = ContainsAll(substrings=["inhibits", "COX-2"])
        assert all_of.check("aspirin inhibits COX-2", None)
        assert not all_of.check("aspirin inhibits COX-1", None)

    def test_regex_match_flags_and_fullmatch(self) -> None:
        assert RegexMatch(pattern=r"^brca[12]$", flags=["IGNORECASE"]).check("BRCA1", None)
        assert not RegexMatch(pattern=r"^brca[12]$").check("BRCA1", None)
        assert not RegexMatch(pattern=r"\d+", fullmatch=True).check("12a", None)
        with pytest.raises(ValidationError, match="unknown regex flag"):
            RegexMatch(pattern="x", flags=["NOPE"])

    def test_boolean_match_understands_yes_no_words(self) -> None:
        assert BooleanMatch().check(True, True)
        assert BooleanMatch().check("yes", True)
        assert BooleanMatch().check("False", False)
        assert not BooleanMatch().check(False, True)
        assert not BooleanMatch().check("perhaps", True)

    def test_literal_match_is_plain_equality(self) -> None:
        assert LiteralMatch().check("missense", "missense")
        assert not LiteralMatch().check("Missense", "missense")
        assert LiteralMatch().check(None, None)

    def test_semantic_match_threshold(self) -> None:
        assert SemanticMatch(threshold=0.8).check("the spike protein", "Spike protein")
        assert not SemanticMatch(threshold=0.8).check("nucleocapsid", "spike protein")

    def test_none_extraction_does_not_match(self) -> None:
        assert not ContainsAny(substrings=["a"]).check(None, "a")
        assert not NumericExact().check(None, 1)


class TestNumericPrimitives:
    def test_numeric_exact_converts_text(self) -> None:
        assert NumericExact().check("23", 23)
        assert NumericExact().check("1,000", 1000)
        assert not NumericExact().check(46, 23)

    def test_numeric_garbage_and_booleans_do_not_match(self) -> None:
        assert not NumericExact().check("twenty-three", 23)
        assert not NumericExact().check(True, 1)
        assert not NumericTolerance(tolerance=1).check(float("nan"), 1)

    def test_tolerance_relative_and_absolute(self) -> None:
        relative = NumericTolerance(tolerance=0.05)
        assert relative.check(103, 100)
        assert not relative.check(106, 100)
        assert relative.check(0, 0) and not relative.check(0.001, 0)
        absolute = NumericTolerance(tolerance=0.5, mode="absolute")
        assert absolute.check(0.5, 0.0)
        assert not absolute.check(0.51, 0.0)

    def test_range_bounds_inclusive_and_exclusive(self) -> None:
        assert NumericRange(min=50, max=500).check(50, None)
        assert NumericRange(min=50, max=500).check(500, None)
        assert not NumericRange(min=50, max=500, exclusive_max=True).check(500, None)
        assert not NumericRange(min=50, exclusive_min=True).check(50, None)
        assert NumericRange(max=1).check(-1e9, None)

    def test_minimum_and_maximum_use_ground_truth_as_bound(self) -> None:
        assert NumericMinimum().check(5, 5) and not NumericMinimum(exclusive=True).check(5, 5)
        assert NumericMaximum().check(3, 3) and not NumericMaximum().check(4, 3)


class TestSequencePrimitives:
    def test_set_containment_modes(self) -> None:
        want = ["nausea", "headache"]
        assert SetContainment().check(["headache", "nausea"], want)
        assert not SetContainment().check(["headache"], want)
        assert SetContainment(mode="subset").check(["headache"], want)
        assert SetContainment(mode="superset").check(["headache", "nausea", "rash"], want)
        assert not SetContainment(mode="superset").check(["headache"], want)

    def test_set_overlap_count_and_fraction(self) -> None:
        want = ["a", "b", "c", "d"]
        assert SetContainment(mode="overlap").check(["a", "x"], want)
        assert not SetContainment(mode="overlap", min_overlap=2).check(["a", "x"], want)
        assert SetContainment(mode="overlap", min_overlap_fraction=0.5).check(["a", "b"], want)
        assert not SetContainment(mode="overlap", min_overlap_fraction=0.75).check(["a", "b"], want)

    def test_set_normalisation_and_overlap_settings_validation(self) -> None:
        primitive = SetContainment(normalize=["lowercase", "strip"])
        assert primitive.check(["EGFR ", "kras"], ["egfr", "KRAS"])
        with pytest.raises(ValidationError, match="only apply to mode='overlap'"):
            SetContainment(mode="exact", min_overlap=2)

    def test_ordered_match(self) -> None:
        want = ["diagnosis", "medication", "follow-up"]
        assert OrderedMatch().check(["Diagnosis", " medication", "FOLLOW-UP"], want)
        assert not OrderedMatch().check(["medication", "diagnosis", "follow-up"], want)
        assert not OrderedMatch().check(["diagnosis", "medication"], want)


class TestDatePrimitives:
    def test_date_match_across_formats(self) -> None:
        assert DateMatch().check("March 15, 2023", "2023-03-15")
        assert DateMatch().check(date(2023, 3, 15), "2023-03-15T10:00:00")
        assert not DateMatch().check("2023-03-16", "2023-03-15")
        assert not DateMatch().check("not a date", "2023-03-15")

    def test_date_match_with_explicit_format(self) -> None:
        assert DateMatch(format="%d/%m/%Y").check("15/03/2023", "15/03/2023")
        assert not DateMatch(format="%d/%m/%Y").check("2023-03-15", "15/03/2023")

    def test_date_tolerance_and_range(self) -> None:
        assert DateTolerance(tolerance=30).check("2024-02-10", "2024-01-15")
        assert not DateTolerance(tolerance=2, unit="hours").check("2024-01-15T03:00", "2024-01-15")
        assert DateRange(min="2023-01-01", max="2024-12-31").check("2023-06-01", None)
        assert not DateRange(max="2022-12-31").check("2023-06-01", None)


class TestTracePrimitives:
    def test_trace_regex_presence_and_count(self) -> None:
        assert TraceRegex(pattern=r"\[\d+\]").check_trace("see [1]")
        assert not TraceRegex(pattern=r"\[\d+\]", count_min=2).check_trace("see [1]")
        assert TraceRegex(pattern="fleming", ignore_case=True).check_trace("Alexander Fleming")

    def test_trace_contains_and_length(self) -> None:
        assert TraceContains(substring="consult your doctor").check_trace(
            "Please consult your doctor."
        )
        assert not TraceContains(substring="Doctor").check_trace("doctor")
        assert TraceContains(substring="Doctor", case_sensitive=False).check_trace("doctor")
        assert TraceLength(min=3, unit="words").check_trace("one two three")
        assert not TraceLength(max=5).check_trace("123456")

    def test_trace_primitive_refuses_parsed_comparison(self) -> None:
        # check() on a trace primitive is a mismatch, not a crash.
        assert not TraceContains(substring="x").check("x", True)


class TestGradedPrimitives:
    def test_numeric_graded_single_band(self) -> None:
        graded = NumericGraded(cutoff=0.25)
        assert graded.check(1.67, 1.67) and graded.score(1.67, 1.67) == 1.0
        assert graded.check(1.1, 1.0) and graded.score(1.1, 1.0) == pytest.approx(0.6)
        assert not graded.check(1.3, 1.0) and graded.score(1.3, 1.0) == 0.0
        assert NumericGraded(cutoff=0.5, decay="quadratic").score(1.25, 1.0) == pytest.approx(0.75)

    def test_numeric_graded_double_band_gives_credit_to_near_misses(self) -> None:
        graded = NumericGraded(cutoff=10, full_credit=2, mode="absolute")
        assert graded.check(51.5, 50) and graded.score(51.5, 50) == 1.0
        assert not graded.check(56, 50)
        assert graded.score(56, 50) == pytest.approx(0.5)
        with pytest.raises(ValidationError, match="full_credit must be smaller"):
            NumericGraded(cutoff=1, full_credit=1)

    def test_numeric_range_graded(self) -> None:
        graded = NumericRangeGraded(min=0.001, max=0.09, margin=0.02)
        assert graded.check(0.05, None) and graded.score(0.05, None) == 1.0
        assert not graded.check(0.1, None)
        assert graded.score(0.1, None) == pytest.approx(0.5)
        assert graded.score(0.2, None) == 0.0
        relative = NumericRangeGraded(min=0, max=10, margin=0.5, mode="relative")
        assert relative.score(12.5, None) == pytest.approx(0.5)

    def test_numeric_threshold_graded(self) -> None:
        at_most = NumericThresholdGraded(direction="max", margin=1.0, mode="absolute")
        assert at_most.check(-100, 0.5) and at_most.score(-100, 0.5) == 1.0
        assert not at_most.check(1.0, 0.5) and at_most.score(1.0, 0.5) == pytest.approx(0.5)
        at_least = NumericThresholdGraded(direction="min", margin=0.1)
        assert at_least.score(95, 100) == pytest.approx(0.5)
        assert not NumericThresholdGraded(direction="min", margin=1, exclusive=True).check(5, 5)

    def test_graded_scores_of_garbage_are_zero(self) -> None:
        assert NumericGraded(cutoff=1).score("n/a", 3) == 0.0
        assert NumericGraded(cutoff=1).score(None, 3) == 0.0
        assert ExactMatch().score("x", "x") == 1.0 and ExactMatch().score("x", "y") == 0.0
