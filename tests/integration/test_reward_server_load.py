"""The reward service under load, over real HTTP: admission beyond
``max_inflight``, ``/health`` and ``/ready`` while saturated, a client that
disconnects (from ``/verify`` or ``/verify/batch``), and the ``Host`` check against DNS rebinding (more than 1,024 open
connections: test_reward_server_fds.py). The judge is the bench endpoint (a real OpenAI-compatible
server) with slow answers where a request must stay in flight.

No timings are asserted: "answered while saturated" is checked as "answered
while N requests are still pending"; bench/reward.py measures the latencies.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from _support.asgi_thread import serve_in_thread
from _support.reward import CORRECT, JUDGE_ANSWERS, WRONG, geo_benchmark

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import CoalescingHttpToolsProtocol, create_app
from verifleet.schemas import ModelConfig

pytestmark = pytest.mark.integration

SLOW = "The capital is Paris, in France, after a long think."
HYBRID = RewardConfig.build(
    {
        "mode": "hybrid",
        "components": [
            {"name": "correctness", "source": "verify_result", "weight": 0.5},
            {"name": "clarity", "source": "trait", "trait": "clarity", "weight": 0.5},
        ],
    }
)


@contextmanager
def _judge(slow_ms: float) -> Iterator[RunningEndpoint]:
    slow = {"fields": {"city": "Paris", "country": "France", "clarity": 5}, "delay_ms": slow_ms}
    config = EndpointConfig(answers={**JUDGE_ANSWERS, SLOW: slow})
    with run_endpoint_in_thread(config) as endpoint:
        yield endpoint


@contextmanager
def _service(
    judge: RunningEndpoint, reward: RewardConfig = RewardConfig(), **options: Any
) -> Iterator[tuple[str, Any]]:
    resources = options.pop("resources", None) or reward_resources()
    http = options.pop("http", "auto")
    wrap = options.pop("wrap", lambda app: app)
    app = create_app(
        geo_benchmark(),
        [ModelConfig.parse(f"{judge.base_url}#judge")],
        reward,
        resources=resources,
        **options,
    )
    with serve_in_thread(wrap(app), lifespan="off", http=http) as served:
        yield served.url, app


def _client(base: str, timeout: float = 60) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=timeout, trust_env=False)


class _ReadsAfterBody:
    """An ASGI app around the service that counts, for requests to ``path``, the
    ``receive`` calls its route makes once it has the whole body: how a route
    watches for its client leaving without the server's disconnect extension."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.started = 0
        self.returned: list[str] = []

    def __call__(self, app: Any) -> Any:
        async def counting(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["path"] != self.path:
                await app(scope, receive, send)
                return
            body_read = False

            async def reading() -> Any:
                nonlocal body_read
                if body_read:
                    self.started += 1
                message = await receive()
                if body_read:
                    self.returned.append(message["type"])
                elif message["type"] == "http.request" and not message.get("more_body"):
                    body_read = True
                return message

            await app(scope, reading, send)

        return counting


@pytest.mark.parametrize(
    "http", ["httptools", CoalescingHttpToolsProtocol], ids=["uvicorn", "serve"]
)
def test_a_disconnected_client_makes_no_judge_call_after_the_disconnect(http: Any) -> None:
    # Each judge call on SLOW takes 1.5 s; the request needs two (parsing, then
    # the rubric's "clarity"). The client gives up during the first. uvicorn's
    # own protocol: the route watches ``receive``; the one `verifleet serve`
    # runs tells the route through its disconnect extension instead.
    with _judge(slow_ms=1500) as judge, _service(judge, HYBRID, http=http) as (base, app):
        with _client(base) as client:  # warm: the template is described, an executor runs
            warm = client.post("/verify", json={"question_id": "geo", "response": CORRECT})
        assert warm.status_code == 200 and warm.json()["reward"] == 1.0
        before = judge.stats().calls
        with pytest.raises(httpx.ReadTimeout), _client(base, timeout=0.7) as client:
            client.post("/verify", json={"question_id": "geo", "response": SLOW})
        assert judge.stats().calls == before + 1  # the parsing call, under way
        # Long enough for the parsing call to have ended and the rubric's to start,
        # had the request not been cancelled.
        time.sleep(3.5)
        assert judge.stats().calls == before + 1
        assert app.state.admission.inflight == 0
        with _client(base) as client:
            after = client.post("/verify", json={"question_id": "geo", "response": WRONG})
        assert after.status_code == 200 and after.json()["reward"] == 0.125  # clarity 2 of 5


@pytest.mark.parametrize(
    "http", ["httptools", CoalescingHttpToolsProtocol], ids=["uvicorn", "serve"]
)
def test_a_batch_whose_client_disconnects_is_cancelled_whole(http: Any) -> None:
    # As for /verify above: the client gives up during the SLOW rollouts'
    # parsing calls, and no rubric call follows. Under uvicorn's own protocol
    # the batch learns it by reading ``receive`` once more; under the one
    # `verifleet serve` runs, from the disconnect extension, with no such read.
    reads = _ReadsAfterBody("/verify/batch")
    with (
        _judge(slow_ms=1500) as judge,
        _service(judge, HYBRID, http=http, wrap=reads) as (base, app),
    ):
        with _client(base) as client:  # warm: the template is described, an executor runs
            warm = client.post("/verify", json={"question_id": "geo", "response": CORRECT})
        assert warm.status_code == 200 and warm.json()["reward"] == 1.0
        before = judge.stats().calls
        slow = {"question_id": "geo", "response": SLOW}
        with pytest.raises(httpx.ReadTimeout), _client(base, timeout=0.7) as client:
            client.post("/verify/batch", json=[slow, slow])
        under_way = judge.stats().calls
        assert under_way > before  # the parsing calls
        # Long enough for the parsing calls to have ended and the rubric's to
        # start, had the batch not been cancelled.
        time.sleep(3.5)
        assert judge.stats().calls == under_way
        assert app.state.admission.inflight == 0
        if http is CoalescingHttpToolsProtocol:
            assert (reads.started, reads.returned) == (0, [])
        else:
            assert (reads.started, reads.returned) == (1, ["http.disconnect"])
        with _client(base) as client:
            after = client.post("/verify/batch", json=[{"question_id": "geo", "response": WRONG}])
        assert after.status_code == 200
        assert after.json()["results"][0]["reward"] == 0.125  # clarity 2 of 5


def test_over_max_inflight_is_503_with_retry_after_and_health_answers_while_saturated() -> None:
    with (
        _judge(slow_ms=3000) as judge,
        _service(judge, max_inflight=4) as (base, _app),
        ThreadPoolExecutor(max_workers=4) as pool,
        _client(base) as client,
    ):
        body = {"question_id": "geo", "response": SLOW}
        pending: list[Future[httpx.Response]] = [
            pool.submit(client.post, "/verify", json=body) for _ in range(4)
        ]
        while client.get("/ready").json()["inflight"] < 4:
            assert not any(f.done() for f in pending)
            time.sleep(0.05)
        refused = client.post("/verify", json=body)
        ready = client.get("/ready")
        health = client.get("/health")
        batch = client.post("/verify/batch", json=[body])
        still_pending = sum(not f.done() for f in pending)
        replies = [f.result() for f in pending]
        ready_after = client.get("/ready")
    assert still_pending == 4  # everything below was answered while all 4 were in flight
    assert refused.status_code == 503
    assert int(refused.headers["retry-after"]) >= 1
    assert "--max-inflight 4" in refused.json()["message"]
    assert ready.status_code == 503 and ready.json()["ready"] is False
    assert int(ready.headers["retry-after"]) >= 1
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert batch.status_code == 503 and int(batch.headers["retry-after"]) >= 1
    assert [r.status_code for r in replies] == [200] * 4
    assert all(r.json()["reward"] == 1.0 for r in replies)
    assert ready_after.status_code == 200
    payload = ready_after.json()
    # The one client, still counted for its fair share while it lingers after
    # its last reply (LINGER seconds), or no longer.
    assert payload.pop("callers") in (0, 1)
    assert payload == {
        "ready": True,
        "inflight": 0,
        "max_inflight": 4,
        "rejected": 2,
        "queued": 0,
    }


def test_dns_rebinding_requests_are_refused_before_anything_runs() -> None:
    body = {"question_id": "geo", "response": CORRECT}
    with (
        _judge(slow_ms=0) as judge,
        _service(judge, allowed_hosts=["reward.example.org"]) as (base, _app),
        _client(base) as client,
    ):
        port = base.rsplit(":", 1)[1]
        # The attack: a page on rebind.attacker.example whose name now resolves to
        # 127.0.0.1 posts to the server; the browser sends the page's host name.
        for host in (
            "rebind.attacker.example",
            f"rebind.attacker.example:{port}",
            "LOCALHOST.evil",
        ):
            attack = client.post("/verify", json=body, headers={"host": host})
            assert attack.status_code == 403, host
            assert "--allowed-host" in attack.json()["message"]
            assert client.get("/health", headers={"host": host}).status_code == 403
        assert judge.stats().calls == 0
        for host in (
            f"localhost:{port}",
            f"127.0.0.1:{port}",
            f"[::1]:{port}",
            "reward.example.org",
            f"Reward.Example.Org:{port}",
        ):
            reply = client.post("/verify", json=body, headers={"host": host})
            assert reply.status_code == 200, host
            assert reply.json()["reward"] == 1.0
