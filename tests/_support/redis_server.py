"""A real ``redis-server`` for tests, started the way a user would start one.

Each test session gets its own server on a free port in a temporary directory
(AOF on, so a restart keeps data), which keeps tests away from whatever else uses
the machine's Redis and lets a test restart the server. ``VERIFLEET_TEST_REDIS_URL``
points the tests at an existing server instead; they then use their own database
number and key prefix and delete what they wrote.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RedisServer:
    """A redis-server process this test session owns."""

    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: run scripts/install.sh")
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--logfile",
                str(self.workdir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 20
        while True:
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {self.port} did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        """Stop and start on the same port and directory (AOF reloads the data)."""
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer | None]:
    """The session's own redis-server, or None when VERIFLEET_TEST_REDIS_URL is set."""
    if os.environ.get("VERIFLEET_TEST_REDIS_URL"):
        yield None
        return
    server = RedisServer(workdir=tmp_path_factory.mktemp("redis"))
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
