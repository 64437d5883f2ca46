"""The reward service with more than 1,024 open connections while its sandbox
executors start: every correct answer gets its correct reward (a descriptor above
1023 once broke ``select()`` in the sandbox and turned correct answers into 0.0),
and no executor leaks. Over real HTTP with the bench endpoint as the judge."""

from __future__ import annotations

import asyncio
import resource
import socket
from typing import Any, cast

import aiohttp
import pytest
from _support.asgi_thread import serve_in_thread
from _support.reward import CORRECT, JUDGE_ANSWERS, WRONG, geo_benchmark

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import ModelConfig

pytestmark = pytest.mark.integration


def _raise_open_files(at_least: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < at_least:
        # Root may raise the hard limit too; the bench does the same (`ulimit -n`).
        resource.setrlimit(resource.RLIMIT_NOFILE, (at_least, max(hard, at_least)))


def test_over_1024_open_connections_while_executors_start_every_answer_gets_its_reward() -> None:
    _raise_open_files(8192)
    resources = reward_resources()
    # A cold pool of this test's own: its executors start while the connections
    # below are open, so their pipes get file descriptors above 1023.
    pool = SandboxPool(SandboxSettings.from_env())
    cast(Any, resources.sandbox).pool = pool
    idle: list[socket.socket] = []
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as judge:
            app = create_app(
                geo_benchmark(),
                [ModelConfig.parse(f"{judge.base_url}#judge")],
                RewardConfig(),
                resources=resources,
            )
            served = serve_in_thread(app, lifespan="off")
            base, port = served.url, served.port
            idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(1100)]
            for sock in idle[-5:]:  # the server has accepted them once these are served
                sock.sendall(b"GET /health HTTP/1.1\r\nhost: localhost\r\n\r\n")
                assert b"200 OK" in sock.recv(4096)
            texts = [(f"{CORRECT} (rollout {i})", 1.0) for i in range(150)]
            texts += [(f"{WRONG} (rollout {i})", 0.0) for i in range(150)]

            async def send_all() -> list[tuple[int, Any, float]]:
                connector = aiohttp.TCPConnector(limit=0)
                async with aiohttp.ClientSession(connector=connector) as session:

                    async def one(text: str, expected: float) -> tuple[int, Any, float]:
                        body = {"question_id": "geo", "response": text}
                        async with session.post(f"{base}/verify", json=body) as reply:
                            return reply.status, await reply.json(), expected

                    return await asyncio.gather(*(one(t, e) for t, e in texts))

            try:
                replies = asyncio.run(send_all())
            finally:
                served.stop()
    finally:
        for sock in idle:
            sock.close()
        pool.close()
    wrong = [
        (status, data.get("reward"), data.get("failure") or data.get("message"))
        for status, data, expected in replies
        if status != 200 or data.get("reward") != expected
    ]
    assert not wrong, f"{len(wrong)} of {len(replies)} replies wrong, e.g. {wrong[:3]}"
    assert pool.stats().executors <= pool.settings.pool_size
