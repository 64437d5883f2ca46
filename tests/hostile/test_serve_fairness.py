"""One ``/verify`` caller cannot starve another (issue 34, item 6).

The attack, replayed through a real ``verifleet serve`` (a subprocess, the bench
endpoint as its judge): an attacker on 127.0.0.1 keeps ten connections busy
with an inline question whose ``verify()`` spins for :data:`SPIN` seconds (inside
the sandbox's time limit: templates cannot import ``time``, so a clock loop is
the attacker's sleep). The server has two executors, shared by the benchmark's
questions and inline ones (``--inline-executors 0``: what an inline caller's
code and another caller's benchmark question both need), so eight of the
attacker's calls always wait for one. A victim on 127.0.0.2 then sends its
requests one after another, each with a deadline of :data:`DEADLINE` seconds:
the benchmark's question, an inline question of its own, the benchmark's again.

With per-caller shares (the default, ``--fair-share address``) a freed executor
goes to the victim before the attacker's queue, and while the victim is active
the attacker holds at most one of the two: every victim request answers,
correctly, within its deadline. The honest control is the same attack with
``--fair-share off`` (first come, first served, main's behaviour before the
shares): the victim's first request waits behind the eight queued calls (four
rounds of :data:`SPIN` seconds) and misses the deadline. The only time compared
is that deadline, which the feature promises (a caller waits for at most one of
another caller's calls) and the control misses by a whole call.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _support.reward import CORRECT, JUDGE_ANSWERS, geo_benchmark
from _support.serve_process import running_serve

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.schemas import dump_benchmark

pytestmark = pytest.mark.integration

#: Seconds one of the attacker's ``verify()`` calls spins.
SPIN = 4
#: The attacker's connections: two running, eight waiting for an executor.
ATTACKERS = 10
#: Seconds each victim request may take: two of the attacker's calls. Fair, it
#: waits for at most one; first come, first served, for four or more.
DEADLINE = 2.0 * SPIN

ATTACK_RESPONSE = "ATTACKER-RESPONSE-7f3a"
VICTIM_INLINE_RESPONSE = "VICTIM-INLINE-RESPONSE-91c2"

SLOW_TEMPLATE = f"""
import datetime


class Answer(BaseAnswer):
    value: str = Field(description="Any value")

    def verify(self) -> bool:
        end = datetime.datetime.now() + datetime.timedelta(seconds={SPIN})
        while datetime.datetime.now() < end:
            pass
        return True
"""

VICTIM_TEMPLATE = """
class Answer(BaseAnswer):
    value: str = Field(description="The value the response states")

    def verify(self) -> bool:
        return self.value == "ok"
"""

ANSWERS = {
    **JUDGE_ANSWERS,
    ATTACK_RESPONSE: {"fields": {"value": "x", "clarity": 3, "hedging": False}},
    VICTIM_INLINE_RESPONSE: {"fields": {"value": "ok", "clarity": 5, "hedging": False}},
}


@pytest.fixture(scope="module")
def judge() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as endpoint:
        yield endpoint


def _headers(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def _attack(
    base: str, stop: threading.Event, index: int, done: list[int], token: str | None
) -> None:
    """One attacker connection: slow inline questions back to back until
    ``stop``; each answered one is counted in ``done``."""
    with httpx.Client(
        base_url=base, timeout=300, trust_env=False, headers=_headers(token)
    ) as client:
        while not stop.is_set():
            body = {
                "question": {
                    "id": f"slow-{index}-{uuid.uuid4().hex[:8]}",
                    "text": "Anything at all?",
                    "answer_template": SLOW_TEMPLATE,
                },
                "response": ATTACK_RESPONSE,
            }
            try:
                client.post("/verify", json=body)
            except httpx.HTTPError:
                return  # the server is going away at the end of the test
            done.append(index)


def _victim(base: str, address: str, token: str | None) -> list[tuple[str, float | None]]:
    """The victim's three requests from ``address``, one after another, each cut
    at :data:`DEADLINE`: (what it asked, its reward), reward None for a request
    past its deadline."""
    transport = httpx.HTTPTransport(local_address=address)
    bodies = [
        ("benchmark", {"question_id": "geo", "response": CORRECT}),
        (
            "inline",
            {
                "question": {
                    "id": "victim-inline",
                    "text": "Which value?",
                    "answer_template": VICTIM_TEMPLATE,
                },
                "response": VICTIM_INLINE_RESPONSE,
            },
        ),
        ("benchmark", {"question_id": "geo", "response": CORRECT}),
    ]
    outcomes: list[tuple[str, float | None]] = []
    with httpx.Client(
        base_url=base,
        transport=transport,
        timeout=DEADLINE,
        trust_env=False,
        headers=_headers(token),
    ) as client:
        for label, body in bodies:
            try:
                reply = client.post("/verify", json=body)
            except httpx.TimeoutException:
                outcomes.append((label, None))
                break  # past its deadline: the victim gives up, as a trainer would
            assert reply.status_code == 200, reply.text
            outcomes.append((label, reply.json()["reward"]))
    return outcomes


def _replay(
    judge: RunningEndpoint,
    tmp_path: Path,
    name: str,
    flags: list[str],
    *,
    victim_address: str = "127.0.0.2",
    tokens: tuple[str | None, str | None] = (None, None),
    env: dict[str, str] | None = None,
) -> list[tuple[str, float | None]]:
    """The attack on a server started with ``flags``; the victim's outcomes.
    ``tokens``: the attacker's and the victim's bearer tokens."""
    bench = tmp_path / "geo.yaml"
    dump_benchmark(geo_benchmark(), bench)
    flags = [
        *flags,
        "--parsing",
        f"{judge.base_url}#judge",
        "--inline-executors",
        "0",
        "--request-timeout",
        "300",
    ]
    attacker_token, victim_token = tokens
    log = tmp_path / f"serve-{name}.log"
    env = {"VERIFLEET_SANDBOX_POOL": "2", **(env or {})}
    with running_serve(bench, flags, log, env=env) as base:
        # A warm server: the benchmark's template compiled, the judge's replies
        # for the victim's benchmark answer cached.
        warm = httpx.post(
            base + "/verify",
            json={"question_id": "geo", "response": CORRECT},
            timeout=120,
            trust_env=False,
            headers=_headers(attacker_token),
        )
        assert warm.status_code == 200 and warm.json()["reward"] == 1.0, warm.text
        stop = threading.Event()
        done: list[int] = []
        attackers = [
            threading.Thread(
                target=_attack, args=(base, stop, i, done, attacker_token), daemon=True
            )
            for i in range(ATTACKERS)
        ]
        for thread in attackers:
            thread.start()
        try:
            # The attack's steady state: its first calls came back and every
            # connection has a request in flight again, two running and the
            # rest queued for an executor, before the victim asks.
            polls = 0
            while len(done) < 2 or _inflight(base, attacker_token) < ATTACKERS:
                polls += 1
                assert polls < 3000, "the attack never filled the executors"
                stop.wait(0.1)
            outcomes = _victim(base, victim_address, victim_token)
        finally:
            stop.set()
    # The server is gone: the attackers' last requests ended with an error.
    for thread in attackers:
        thread.join(timeout=60)
    return outcomes


def _inflight(base: str, token: str | None) -> int:
    """Requests in flight on the server (``/ready`` counts them)."""
    reply = httpx.get(base + "/ready", timeout=10, trust_env=False, headers=_headers(token))
    return int(reply.json()["inflight"])


def test_a_callers_slow_templates_never_push_another_caller_past_its_deadline(
    judge: RunningEndpoint, tmp_path: Path
) -> None:
    fair = _replay(judge, tmp_path, "address", [])
    assert fair == [("benchmark", 1.0), ("inline", 1.0), ("benchmark", 1.0)], fair
    # Control: first come, first served, the victim's first request waits
    # behind the attacker's queue and misses its deadline.
    shared = _replay(judge, tmp_path, "off", ["--fair-share", "off"])
    assert shared == [("benchmark", None)], shared


def test_tenants_with_tokens_of_their_own_are_callers_of_their_own_on_one_address(
    judge: RunningEndpoint, tmp_path: Path
) -> None:
    """Two tenants behind one address (a gateway, one NAT): with a token each
    (``--tokens-file``) they are two callers; the control is the same attack
    with the one shared token, where the address makes them one caller and
    the victim waits behind the attacker's queue."""
    tokens = tmp_path / "tokens"
    tokens.write_text("# one per tenant\nattacker-t0ken\nvictim-t0ken\n")
    own = _replay(
        judge,
        tmp_path,
        "tokens",
        ["--tokens-file", str(tokens)],
        victim_address="127.0.0.1",
        tokens=("attacker-t0ken", "victim-t0ken"),
    )
    assert own == [("benchmark", 1.0), ("inline", 1.0), ("benchmark", 1.0)], own
    shared = _replay(
        judge,
        tmp_path,
        "one-token",
        [],
        victim_address="127.0.0.1",
        tokens=("shared-t0ken", "shared-t0ken"),
        env={"VERIFLEET_SERVE_TOKEN": "shared-t0ken"},
    )
    assert shared == [("benchmark", None)], shared
