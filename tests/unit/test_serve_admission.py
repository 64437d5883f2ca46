"""Admission counting of the reward service, without a server (its HTTP behaviour
is in tests/integration/test_reward_server_load.py; the Host check's rule is in
tests/unit/test_web_guards.py)."""

from __future__ import annotations

import pytest

from verifleet.reward.serve._admission import Admission


def test_admission_takes_places_all_or_none_and_suggests_a_wait() -> None:
    admission = Admission(3)
    assert admission.retry_after() == 1  # nothing finished yet: no rate to go by
    assert admission.try_enter(2) and not admission.saturated
    assert not admission.try_enter(2)  # would pass the limit: nothing taken
    assert admission.inflight == 2 and admission.rejected == 1
    assert admission.try_enter() and admission.saturated
    admission.leave(3)
    assert admission.inflight == 0 and admission.completion_rate() > 0
    assert 1 <= admission.retry_after() <= 60
    with pytest.raises(ValueError):
        Admission(0)
