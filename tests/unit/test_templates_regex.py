"""Template regex checks (``self.regex``): the four match types, malformed checks,
and how a template exposes them through ``verify_regex``."""

from __future__ import annotations

from verifleet.templates import BaseAnswer, RegexOutcome, run_regex_checks

TEXT = "The drug inhibits the target [1] [2] [3]. Approved in 2016."


def _one(spec: dict[str, object], text: str = TEXT) -> RegexOutcome:
    return run_regex_checks({"check": spec}, text)


def test_exact_needs_exactly_one_equal_match() -> None:
    assert _one({"pattern": r"\b\d{4}\b", "expected": "2016", "match_type": "exact"}).results == {
        "check": True
    }
    two_years = TEXT + " Renewed in 2020."
    outcome = _one({"pattern": r"\b\d{4}\b", "expected": "2016", "match_type": "exact"}, two_years)
    assert outcome.results["check"] is False
    assert "exactly one match" in outcome.details["check"]["failure_reason"]


def test_contains_finds_alternation_group() -> None:
    spec = {
        "pattern": r"\b(activates|inhibits|blocks)\b",
        "expected": "inhibits",
        "match_type": "contains",
    }
    outcome = _one(spec)
    assert outcome.overall_success is True
    assert outcome.extraction_results["check"] == ["inhibits"]
    assert _one({**spec, "expected": "blocks"}).overall_success is False


def test_count_compares_number_of_matches() -> None:
    assert _one({"pattern": r"\[\d+\]", "expected": 3, "match_type": "count"}).overall_success
    outcome = _one({"pattern": r"\[\d+\]", "expected": 2, "match_type": "count"})
    assert outcome.overall_success is False
    assert outcome.details["check"]["match_count"] == 3
    assert (
        _one({"pattern": r"\[\d+\]", "expected": "3", "match_type": "count"}).overall_success
        is False
    )


def test_all_requires_every_expected_item() -> None:
    spec = {"pattern": r"\[\d\]", "expected": ["[1]", "[3]"], "match_type": "all"}
    assert _one(spec).overall_success is True
    missing = _one({**spec, "expected": ["[1]", "[4]"]})
    assert missing.overall_success is False
    assert "[4]" in missing.details["check"]["failure_reason"]
    assert _one({**spec, "expected": "[1]"}).overall_success is False


def test_flags_and_case_sensitivity() -> None:
    spec = {"pattern": "INHIBITS", "expected": 1, "match_type": "count"}
    assert _one(spec).overall_success is False
    assert _one({**spec, "flags": ["IGNORECASE"]}).overall_success is True
    assert _one({**spec, "case_sensitive": False}).overall_success is True


def test_malformed_checks_fail_with_an_error_detail() -> None:
    outcome = run_regex_checks(
        {
            "bad_pattern": {"pattern": "(", "expected": 1, "match_type": "count"},
            "bad_type": {"pattern": "x", "expected": 1, "match_type": "fuzzy"},
            "not_a_dict": "x",
            "good": {"pattern": "drug", "expected": "drug", "match_type": "exact"},
        },
        TEXT,
    )
    assert outcome.performed is True
    assert outcome.results == {
        "bad_pattern": False,
        "bad_type": False,
        "not_a_dict": False,
        "good": True,
    }
    assert "error" in outcome.details["bad_pattern"]
    assert "unknown match_type" in outcome.details["bad_type"]["error"]
    assert outcome.overall_success is False


def test_no_checks_means_not_performed_and_not_failed() -> None:
    outcome = run_regex_checks(None, TEXT)
    assert outcome.performed is False
    assert outcome.overall_success is None
    assert outcome.passed is True


class RegexOnly(BaseAnswer):
    def ground_truth(self) -> None:
        self.regex = {
            "mechanism": {
                "pattern": r"\b(activates|inhibits)\b",
                "expected": "inhibits",
                "match_type": "contains",
            },
            "citations": {"pattern": r"\[\d+\]", "expected": 3, "match_type": "count"},
        }


def test_regex_only_template_verifies_through_regex() -> None:
    answer = RegexOnly()
    assert RegexOnly.judge_fields() == []
    assert answer.verify() is True  # field verification is vacuous, regex decides
    outcome = answer.verify_regex(TEXT)
    assert outcome.results == {"mechanism": True, "citations": True}
    assert outcome.passed is True
    failing = answer.verify_regex("It activates the target [1].")
    assert failing.results == {"mechanism": False, "citations": False}
    assert failing.passed is False
    assert RegexOnly.defines_verify() is True
