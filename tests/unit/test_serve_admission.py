"""Admission counting and the Host check of the reward service, without a server
(their HTTP behaviour is in tests/integration/test_reward_server_load.py)."""

from __future__ import annotations

import pytest

from verifleet.orchestrator._serve_admission import Admission
from verifleet.orchestrator._serve_guards import host_allowed


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


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("localhost", True),
        ("localhost:8080", True),
        ("LocalHost:8080", True),
        ("127.0.0.1:8080", True),
        ("10.1.2.3", True),
        ("[::1]:8080", True),
        ("app.localhost", True),
        ("", True),
        ("rebind.attacker.example", False),
        ("rebind.attacker.example:8080", False),
        ("localhost.attacker.example", False),
        ("127.0.0.1.nip.io", False),
        ("reward.example.org:443", True),
    ],
)
def test_host_names_other_than_loopback_ips_and_configured_ones_are_refused(
    host: str, allowed: bool
) -> None:
    assert host_allowed(host, frozenset({"reward.example.org"})) is allowed
    assert host_allowed(host, frozenset({"*"}))
