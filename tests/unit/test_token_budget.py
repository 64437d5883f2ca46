"""Tokens-per-minute budgets: the local gate's arithmetic and the estimate rule
(the callers' side of the gate protocol is tested for both callers in
``test_pipeline_openai_http.py``).

The local gate runs on an injected clock so that a minute passes without waiting
for it, and with ``max_wait=0`` so that a call that would wait fails at once
instead: "admitted or not" is then a plain yes/no, with no timing involved.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from verifleet.limits import LocalCallGate, NoCapacityError
from verifleet.pipeline import ModelCallError
from verifleet.pipeline._llm._gate import (
    DEFAULT_REPLY_TOKENS,
    estimate_tokens,
    gate_attempt,
    report_usage,
)
from verifleet.schemas import ConfigError, ModelConfig, VerificationConfig

BUDGET = 100


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _model(budget: int = BUDGET, **extra: object) -> ModelConfig:
    return ModelConfig.parse("http://127.0.0.1:9/v1#m", tokens_per_minute=budget, **extra)


def _gate(clock: _Clock) -> LocalCallGate:
    return LocalCallGate(max_wait=0, clock=clock)


def _admits(gate: LocalCallGate, model: ModelConfig, tokens: int) -> bool:
    """Whether a call reserving ``tokens`` may start now (it ends at once, unreported)."""
    try:
        with gate(model, tokens=tokens):
            return True
    except NoCapacityError:
        return False


def test_calls_start_until_the_next_one_would_exceed_the_budget() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model()
    with gate(model, tokens=40), gate(model, tokens=40):
        assert gate.tokens_in_window(model) == 80
        assert not _admits(gate, model, 21)  # 101 > 100
        assert _admits(gate, model, 20)  # exactly 100
    assert gate.tokens_in_window(model) == 100  # unreported calls keep their estimate
    assert not _admits(gate, model, 1)


def test_reported_usage_replaces_the_estimate() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model()
    with gate(model, tokens=90) as slot:
        assert not _admits(gate, model, 20)  # 90 reserved while in flight
        report_usage(slot, 30)
    assert gate.tokens_in_window(model) == 30
    assert _admits(gate, model, 70)
    assert not _admits(gate, model, 1)


def test_spends_age_out_after_sixty_seconds() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model()
    assert _admits(gate, model, 60)
    clock.now += 30
    assert _admits(gate, model, 40)
    clock.now += 29.5  # the first call is 59.5 s old: still in the window
    assert not _admits(gate, model, 1)
    clock.now += 0.5  # exactly 60 s: out
    assert gate.tokens_in_window(model) == 40
    assert _admits(gate, model, 60)


def test_a_call_larger_than_the_budget_goes_alone_through_an_empty_window() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model()
    assert _admits(gate, model, 5 * BUDGET)  # would otherwise wait forever
    assert not _admits(gate, model, 1)  # the window now holds 5x the budget ...
    clock.now += 60
    assert _admits(gate, model, 1)  # ... until it ages out


def test_a_429_frees_the_reservation_and_other_failures_keep_it() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model()

    class RateLimited(Exception):
        # The endpoint's 429 at one exact moment; the pipeline reads only status_code.
        status_code = 429

    with pytest.raises(RateLimited), gate_attempt(gate, model, 80):
        raise RateLimited
    assert gate.tokens_in_window(model) == 0  # refused: the provider did no work
    with pytest.raises(TimeoutError), gate(model, tokens=80):
        raise TimeoutError  # the provider may have done the work
    assert gate.tokens_in_window(model) == 80


def test_a_call_without_estimate_reserves_nothing_but_its_usage_counts() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model()
    with gate(model) as slot:  # tokens default to 0
        assert gate.tokens_in_window(model) == 0
        report_usage(slot, 95)
    assert gate.tokens_in_window(model) == 95
    assert not _admits(gate, model, 10)


def test_token_budget_and_request_budget_both_hold() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model(requests_per_minute=2)
    assert _admits(gate, model, 10) and _admits(gate, model, 10)
    assert not _admits(gate, model, 10)  # tokens fit (30), requests do not
    assert gate.tokens_in_window(model) == 20  # the refused call reserved nothing


# One step of a random schedule: start a call (estimate, actual usage or None,
# whether it stays in flight), finish the oldest call in flight, or let time pass.
# Tokens in tens, so that sums hitting the budget exactly are common.
_TOKENS = st.integers(0, 15).map(lambda n: n * 10)
_STEP = st.one_of(
    st.tuples(
        st.just("start"),
        _TOKENS,
        st.one_of(st.none(), _TOKENS),
        st.booleans(),
    ),
    st.tuples(st.just("finish"), st.just(0), st.just(None), st.just(False)),
    st.tuples(st.just("wait"), st.integers(1, 40), st.just(None), st.just(False)),
)


@given(st.lists(_STEP, max_size=40))
@example(
    [
        ("start", 0, None, True),
        ("wait", 1, None, False),
        ("start", 0, None, True),
        ("finish", 0, None, False),
        ("start", 0, None, False),
        ("start", 0, None, False),
    ]
)
def test_admissions_follow_the_window_arithmetic(
    steps: list[tuple[str, int, int | None, bool]],
) -> None:
    """Against a plain model of the rule: a call starts iff the tokens of the calls
    started in the last 60 s (estimates in flight, reported usage once finished)
    plus its estimate fit the budget, or the window is empty."""
    clock = _Clock()
    # The window of calls in flight off: the rule modelled here is the token
    # budget's. With it on, a held call whose latency jumps from 0 to 1 s of
    # this clock reads as the endpoint queueing and shrinks the window to the
    # call in flight, which refuses the next start (hypothesis found that
    # schedule in CI: start, wait 1, start, finish, start, start).
    gate, model = _gate(clock), _model(adaptive_concurrency=False)
    spends: list[list[float]] = []  # [start, tokens] of every admitted call
    held: list[tuple[contextlib.ExitStack, object, list[float], int | None]] = []

    def used() -> int:
        return int(sum(tokens for at, tokens in spends if at > clock.now - 60))

    def finish(
        stack: contextlib.ExitStack, slot: object, spend: list[float], actual: int | None
    ) -> None:
        report_usage(slot, actual)
        stack.close()
        if actual is not None:
            spend[1] = actual

    for kind, amount, actual, hold in steps:
        if kind == "wait":
            clock.now += amount
        elif kind == "finish" and held:
            finish(*held.pop(0))
        elif kind == "start":
            expected = used() == 0 or used() + amount <= BUDGET
            stack = contextlib.ExitStack()
            try:
                slot = stack.enter_context(gate(model, tokens=amount))
            except NoCapacityError:
                assert not expected
                continue
            assert expected
            spend = [clock.now, float(amount)]
            spends.append(spend)
            if hold:
                held.append((stack, slot, spend, actual))
            else:
                finish(stack, slot, spend, actual)
        assert gate.tokens_in_window(model) == used()
    for call in held:
        finish(*call)
    assert gate.tokens_in_window(model) == used()


def test_estimate_is_a_quarter_of_the_characters_plus_the_reply() -> None:
    messages = [{"role": "system", "content": "x" * 10}, {"role": "user", "content": "y" * 7}]
    assert estimate_tokens(_model(max_tokens=50), messages) == 5 + 50  # ceil(17 / 4)
    assert estimate_tokens(_model(), messages) == 5 + DEFAULT_REPLY_TOKENS
    assert estimate_tokens(_model(), []) == DEFAULT_REPLY_TOKENS


def test_no_capacity_becomes_a_model_call_error_the_retry_loop_does_not_retry() -> None:
    clock = _Clock()
    gate, model = _gate(clock), _model()
    with (
        gate(model, tokens=BUDGET),
        pytest.raises(ModelCallError) as caught,
        gate_attempt(gate, model, 1),
    ):
        pass
    assert caught.value.transient and caught.value.attempts == 0
    assert "no capacity" in str(caught.value)


def test_a_config_file_sets_the_budget_and_a_non_positive_one_is_named() -> None:
    model = {"model_name": "m", "model_provider": "openai", "tokens_per_minute": 5000}
    config = VerificationConfig.build(answering_models=[model], parsing_models=[model])
    assert config.parsing_models[0].tokens_per_minute == 5000
    bad = {**model, "tokens_per_minute": 0}
    with pytest.raises(ConfigError, match=r"parsing_models\[0\]\.tokens_per_minute"):
        VerificationConfig.build(answering_models=[model], parsing_models=[bad])
    with pytest.raises(ConfigError, match="tokens_per_minute"):
        ModelConfig.parse("openai:gpt-4.1-mini", tokens_per_minute=-5)
