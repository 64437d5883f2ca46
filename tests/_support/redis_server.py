"""A real ``redis-server`` for tests, started the way a user would start one.

Each test session gets its own server on a free port in a temporary directory
(AOF on, so a restart keeps data), which keeps tests away from whatever else uses
the machine's Redis and lets a test restart the server. ``VERIFLEET_TEST_REDIS_URL``
points the tests at an existing server instead; they then use their own database
number and key prefix and delete what they wrote.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from bench._harness import RedisProc, free_port

__all__ = ["RedisServer", "free_port", "redis_server", "redis_url"]


# The benches' redis-server, with AOF so that a test can restart it.
RedisServer = RedisProc


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer | None]:
    """The session's own redis-server, or None when VERIFLEET_TEST_REDIS_URL is set."""
    if os.environ.get("VERIFLEET_TEST_REDIS_URL"):
        yield None
        return
    server = RedisServer(workdir=tmp_path_factory.mktemp("redis"), appendonly=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer | None) -> Iterator[str]:
    """A Redis URL whose database is empty at the start and flushed at the end."""
    url = os.environ.get("VERIFLEET_TEST_REDIS_URL") or (redis_server.url if redis_server else "")
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()
