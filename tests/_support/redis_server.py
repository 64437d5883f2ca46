"""A real ``redis-server`` for tests, started the way a user would start one.

Each test session gets its own server on a free port in a temporary directory
(AOF on, so a restart keeps data), which keeps tests away from whatever else uses
the machine's Redis and lets a test restart the server. ``VERIFLEET_TEST_REDIS_URL``
points the tests at an existing server instead; they then use their own database
number (the URL's, plus the index of the pytest-xdist process) and key prefix
and delete what they wrote.
"""

from __future__ import annotations

import os
import urllib.parse
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


def _per_process(url: str) -> str:
    """``url`` with its database number moved up by this test process's index
    (pytest-xdist's ``gwN``): each process flushes its own database.

    Raises:
        pytest.UsageError: the numbers would run past Redis's 16 databases.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    parts = urllib.parse.urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    db = base + int(worker[2:])
    if db > 15:
        raise pytest.UsageError(
            f"VERIFLEET_TEST_REDIS_URL: test process {worker} would use database {db}; "
            "give a lower database number or run fewer processes (VERIFLEET_TEST_PROCESSES)"
        )
    return urllib.parse.urlunsplit(parts._replace(path=f"/{db}"))


@pytest.fixture
def redis_url(redis_server: RedisServer | None) -> Iterator[str]:
    """A Redis URL whose database is empty at the start and flushed at the end
    (with ``VERIFLEET_TEST_REDIS_URL``, one database per test process)."""
    given = os.environ.get("VERIFLEET_TEST_REDIS_URL")
    url = _per_process(given) if given else (redis_server.url if redis_server else "")
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()
