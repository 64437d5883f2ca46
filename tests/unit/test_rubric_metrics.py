"""Metric computation from confusion lists."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifleet.schemas import RubricError, compute_metrics, deduplicate_confusion

FULL = ["precision", "recall", "f1", "specificity", "accuracy"]


def _items(n: int, prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_tp_only_values() -> None:
    confusion = {"tp": _items(3, "t"), "fn": _items(1, "n"), "fp": []}
    result = compute_metrics(confusion, ["precision", "recall", "f1"], "tp_only")
    assert result == pytest.approx({"precision": 1.0, "recall": 0.75, "f1": 6 / 7})
    assert list(result) == ["precision", "recall", "f1"]


def test_full_matrix_values() -> None:
    confusion = {
        "tp": _items(2, "t"),
        "fn": _items(2, "n"),
        "fp": _items(1, "p"),
        "tn": _items(3, "z"),
    }
    result = compute_metrics(confusion, FULL, "full_matrix")
    assert result == pytest.approx(
        {
            "precision": 2 / 3,
            "recall": 0.5,
            "f1": 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5),
            "specificity": 0.75,
            "accuracy": 5 / 8,
        }
    )


def test_empty_denominators_give_zero() -> None:
    assert compute_metrics({}, FULL, "full_matrix") == dict.fromkeys(FULL, 0.0)
    only_fn = compute_metrics({"fn": ["a"]}, ["precision", "recall", "f1"], "tp_only")
    assert only_fn == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_tn_is_ignored_in_tp_only_mode() -> None:
    with_tn = compute_metrics({"tp": ["a"], "fp": ["b"], "tn": ["c"]}, ["precision"], "tp_only")
    assert with_tn == {"precision": 0.5}


@pytest.mark.parametrize("metric", ["specificity", "accuracy"])
def test_tp_only_refuses_negative_metrics(metric: str) -> None:
    with pytest.raises(RubricError, match="full_matrix"):
        compute_metrics({"tp": ["a"]}, [metric], "tp_only")


def test_unknown_metric_and_mode() -> None:
    with pytest.raises(RubricError, match="unknown metric 'auc'"):
        compute_metrics({}, ["auc"], "tp_only")
    with pytest.raises(RubricError, match="evaluation mode"):
        compute_metrics({}, ["recall"], "half_matrix")  # type: ignore[arg-type]


@given(
    tp=st.integers(0, 30),
    fn=st.integers(0, 30),
    fp=st.integers(0, 30),
    tn=st.integers(0, 30),
)
def test_metrics_are_ratios_and_f1_is_harmonic_mean(tp: int, fn: int, fp: int, tn: int) -> None:
    confusion = {
        "tp": _items(tp, "t"),
        "fn": _items(fn, "n"),
        "fp": _items(fp, "p"),
        "tn": _items(tn, "z"),
    }
    result = compute_metrics(confusion, FULL, "full_matrix")
    assert all(0.0 <= v <= 1.0 for v in result.values())
    p, r = result["precision"], result["recall"]
    expected_f1 = 2 * p * r / (p + r) if p + r else 0.0
    assert result["f1"] == pytest.approx(expected_f1)
    assert (p == 0.0) == (tp == 0)


def test_deduplicate_is_case_insensitive_and_keeps_first_spelling() -> None:
    confusion = {"tp": ["Aspirin", "aspirin ", "Ibuprofen"], "fp": ["x", "X"], "fn": []}
    assert deduplicate_confusion(confusion) == {
        "tp": ["Aspirin", "Ibuprofen"],
        "fp": ["x"],
        "fn": [],
    }
