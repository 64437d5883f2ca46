"""The HTTP guards the reward service and the viewer share (``verifleet.web``): the
Host rule, the loopback test behind both binding rules, and one status and body for
a refused Host or a missing token from either service (their behaviour over a real
socket: tests/integration/test_reward_server_load.py, test_viewer_attacks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.viewer_data import full_run
from fastapi.testclient import TestClient
from starlette.types import Receive, Scope, Send

from verifleet.orchestrator import write_results
from verifleet.reward.serve._admission import Admission
from verifleet.reward.serve._app import _guarded
from verifleet.viewer import FileRun, create_app
from verifleet.web import host_allowed, is_loopback


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


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        # The bracketed form a URL or Host header gives ::1 names the same address;
        # the viewer's old test said no and the reward server's yes.
        ("[::1]", True),
        ("localhost", True),
        ("LocalHost", True),
        ("[::1", False),
        ("0.0.0.0", False),
        ("::", False),
        ("[::]", False),
        ("10.1.2.3", False),
        ("localhost.", False),  # resolved through DNS, not /etc/hosts alone
        ("reward.internal", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def _services(tmp_path: Path) -> dict[str, TestClient]:
    """The reward service's guards and the viewer, each with a token and the Host
    check on (bound to 127.0.0.1, no extra names)."""
    path = tmp_path / "r.parquet"
    write_results(full_run(2), path)
    reward = _guarded(
        _ok, admission=Admission(4), max_body_bytes=1000, token="s3cret", allowed_hosts=()
    )
    viewer = create_app([FileRun(path)], token="s3cret", allowed_hosts=frozenset({"127.0.0.1"}))
    base = "http://127.0.0.1:8600"
    return {
        "reward": TestClient(reward, base_url=base),
        "viewer": TestClient(viewer, base_url=base),
    }


def test_both_services_refuse_a_host_and_a_missing_token_alike(tmp_path: Path) -> None:
    for name, client in _services(tmp_path).items():
        rebound = client.get("/api/runs", headers={"host": "rebind.attacker.example:8600"})
        assert rebound.status_code == 403, name
        assert list(rebound.json()) == ["message"], name
        assert "DNS rebinding" in rebound.json()["message"], name
        # The Host check runs first: a rebound page learns nothing of its token guess.
        guessed = client.get(
            "/api/runs",
            headers={"host": "rebind.attacker.example", "authorization": "Bearer s3cret"},
        )
        assert guessed.status_code == 403, name
        anonymous = client.get("/api/runs", headers={"host": "127.0.0.1:8600"})
        assert anonymous.status_code == 401, name
        assert list(anonymous.json()) == ["message"], name
        assert "missing or invalid bearer token" in anonymous.json()["message"], name
        assert anonymous.headers["www-authenticate"] == 'Bearer realm="verifleet"', name
        admitted = client.get(
            "/api/runs", headers={"host": "[::1]:8600", "authorization": "Bearer s3cret"}
        )
        assert admitted.status_code == 200, name


def test_a_browser_token_in_the_query_becomes_a_cookie_for_the_viewer_only(
    tmp_path: Path,
) -> None:
    clients = _services(tmp_path)
    with clients["viewer"] as viewer:
        assert viewer.get("/api/runs", params={"token": "wrong"}).status_code == 401
        opened = viewer.get("/", params={"token": "s3cret"})
        assert opened.status_code == 200
        assert "HttpOnly" in opened.headers["set-cookie"]
        assert viewer.get("/api/runs").status_code == 200  # the cookie carries it
    # The reward service takes the token from the Authorization header alone.
    reward = clients["reward"]
    assert reward.get("/verify", params={"token": "s3cret"}).status_code == 401
    reward.cookies.set("verifleet_viewer_token", "s3cret")
    assert reward.get("/verify").status_code == 401
