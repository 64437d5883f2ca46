"""Rollout file helpers: resume bookkeeping, content keys, line parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support.reward import CORRECT, geo_benchmark, nemo_request

from verifleet.reward import (
    LINE_FIELD,
    InvalidRequestError,
    RewardConfig,
    RewardScorer,
    reward_job_id,
    rollout_key,
)
from verifleet.reward._rollouts import done_lines, iter_lines, parse_rollout
from verifleet.schemas import ModelConfig

# Resolving questions and answers calls no model: the judge is never reached.
JUDGE = ModelConfig.parse("http://127.0.0.1:9/v1#judge")


def test_done_lines_reads_line_numbers_and_cuts_a_torn_last_line(tmp_path: Path) -> None:
    out = tmp_path / "scored.jsonl"
    whole = json.dumps({"reward": 1.0, LINE_FIELD: 3}) + "\n" + json.dumps({LINE_FIELD: 7}) + "\n"
    out.write_text(whole + '{"reward": 0.5, "rollo')
    assert done_lines(out) == {3, 7}
    assert out.read_text() == whole
    assert done_lines(tmp_path / "absent.jsonl") == set()


def test_iter_lines_numbers_from_one_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("a\n\n  \nb\n")
    assert [(n, t.strip()) for n, t in iter_lines(path)] == [(1, "a"), (4, "b")]


def test_keys_are_content_hashes() -> None:
    a = nemo_request(CORRECT, rollout_id=1)
    assert rollout_key(a) == rollout_key(json.loads(json.dumps(a, sort_keys=True)))
    assert rollout_key(a) != rollout_key(nemo_request(CORRECT, rollout_id=2))
    bench = geo_benchmark()
    assert reward_job_id(bench, [JUDGE], RewardConfig()) == reward_job_id(
        bench, [JUDGE], RewardConfig()
    )
    assert reward_job_id(bench, [JUDGE], RewardConfig()) != reward_job_id(
        bench, [JUDGE], RewardConfig(mode="continuous")
    )


def test_parse_rollout_checks_without_calling_the_judge() -> None:
    scorer = RewardScorer(geo_benchmark(), [JUDGE], RewardConfig())
    rollout, _request = parse_rollout(json.dumps({**nemo_request(CORRECT), LINE_FIELD: 4}), scorer)
    assert LINE_FIELD not in rollout  # a scored file can be scored again
    for text, message in [
        ("{", "not valid JSON"),
        ("3", "expected a JSON object, got int"),
        ('{"question_id": "geo"}', "exactly one of 'response' and 'messages'"),
        ('{"question_id": "x", "response": "a"}', "unknown question id 'x'"),
    ]:
        with pytest.raises(InvalidRequestError, match=message):
            parse_rollout(text, scorer)
