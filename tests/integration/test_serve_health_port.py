"""``--health-port``: ``/health`` and ``/ready`` answered by a thread on a port of
their own, reporting the process's admission state; every ``--workers`` process
can bind the same port."""

from __future__ import annotations

import http.client
import json

import pytest
from _support.redis_server import free_port

from verifleet import __version__
from verifleet.reward.serve import HealthListener
from verifleet.reward.serve._admission import Admission

pytestmark = pytest.mark.integration


def _get(port: int, path: str) -> tuple[int, dict[str, object], str | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read()), reply.getheader("retry-after")
    finally:
        conn.close()


def test_the_health_port_reports_liveness_and_admission() -> None:
    admission = Admission(2)
    port = free_port()
    listeners = [HealthListener("127.0.0.1", port, admission) for _ in range(2)]
    for listener in listeners:
        listener.start()  # a second process's listener binds the same port
    try:
        assert _get(port, "/health") == (200, {"status": "ok", "version": __version__}, None)
        status, ready, _ = _get(port, "/ready")
        assert (status, ready["ready"], ready["inflight"]) == (200, True, 0)
        assert admission.try_enter(2)
        status, ready, retry_after = _get(port, "/ready")
        assert (status, ready["ready"], ready["inflight"]) == (503, False, 2)
        assert retry_after is not None and int(retry_after) >= 1
        admission.leave(2)
        assert _get(port, "/ready")[0] == 200
        assert _get(port, "/verify")[0] == 404
    finally:
        for listener in listeners:
            listener.stop()
