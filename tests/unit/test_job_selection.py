"""``--questions`` (ids and globs) and ``--limit``: what runs, and the errors."""

from __future__ import annotations

import pytest
from _support.jobs import capitals_benchmark

from verifleet.orchestrator._selection import parse_question_patterns, select_benchmark
from verifleet.schemas import ConfigError


def test_globs_and_ids_select_questions_in_benchmark_order() -> None:
    bench, _ = capitals_benchmark(30)
    picked = select_benchmark(bench, questions=["q002?", "q0003"])
    assert picked.question_ids == ["q0003", *(f"q{20 + i:04d}" for i in range(10))]
    assert picked.get_question("q0025").id == "q0025"  # the lookup is rebuilt
    assert len(bench.questions) == 30  # the original is left alone


def test_limit_applies_after_the_patterns() -> None:
    bench, _ = capitals_benchmark(30)
    assert select_benchmark(bench, limit=3).question_ids == ["q0000", "q0001", "q0002"]
    picked = select_benchmark(bench, questions=["q001*"], limit=2)
    assert picked.question_ids == ["q0010", "q0011"]
    assert select_benchmark(bench) is bench


def test_a_pattern_matching_nothing_names_itself_and_shows_ids() -> None:
    bench, _ = capitals_benchmark(8)
    with pytest.raises(ConfigError) as info:
        select_benchmark(bench, questions=["q0001", "geo-*"])
    message = str(info.value)
    assert "geo-*" in message and "q0000" in message and "q0001," not in message.split("ids")[0]


def test_limit_below_one_is_refused() -> None:
    bench, _ = capitals_benchmark(2)
    with pytest.raises(ConfigError, match="--limit 0"):
        select_benchmark(bench, limit=0)


def test_patterns_are_split_on_commas_and_trimmed() -> None:
    assert parse_question_patterns(" q1, q2* ,") == ["q1", "q2*"]
    assert parse_question_patterns(["a,b", "c"]) == ["a", "b", "c"]
    assert parse_question_patterns(None) is None
    with pytest.raises(ConfigError):
        parse_question_patterns(" , ")
