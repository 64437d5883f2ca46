"""Real ``verifleet worker`` processes for fleet tests, started as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

VERIFLEET = [sys.executable, "-m", "verifleet"]


class Fleet:
    """Worker processes against one Redis; each started with ``verifleet worker``."""

    def __init__(self, redis_url: str, logdir: Path) -> None:
        self.redis_url = redis_url
        self.logdir = logdir
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            VERIFLEET_REDIS_URL=self.redis_url,
            # Short deadline and restore interval: a killed worker's units come back
            # within seconds instead of the production default of half an hour.
            VERIFLEET_UNIT_DEADLINE="8",
            VERIFLEET_RESTORE_INTERVAL="1",
            VERIFLEET_LEASE_SECONDS="10",
            # A job whose lost messages no worker carries is re-sent after 5 s.
            VERIFLEET_STALL_SETTLE="5",
            # The operator's results roots: the test's own folder (--results-to
            # of the tests' jobs points into it).
            VERIFLEET_RESULTS_ROOTS=str(self.logdir),
        )
        env.update(extra)
        return env

    def start_worker(
        self,
        name: str,
        *,
        concurrency: int = 8,
        queues: str | None = None,
        options: tuple[str, ...] = (),
        **env: str,
    ) -> subprocess.Popen[bytes]:
        log = (self.logdir / f"{name}.log").open("wb")
        extra = [*(["--queues", queues] if queues else []), *options]
        proc = subprocess.Popen(
            [
                *VERIFLEET,
                "worker",
                "--concurrency",
                str(concurrency),
                "--hostname",
                f"{name}@localhost",
                "--loglevel",
                "INFO",
                *extra,
            ],
            env=self.env(**env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.workers[name] = proc
        return proc

    def wait_ready(self, names: list[str], timeout: float = 120.0) -> None:
        """Wait until each worker logged that it is ready to consume (two Python
        start-ups each: the supervisor's and its worker process's)."""
        deadline = time.monotonic() + timeout
        for name in names:
            path = self.logdir / f"{name}.log"
            while b"ready." not in path.read_bytes():
                if self.workers[name].poll() is not None:
                    raise RuntimeError(f"worker {name} exited:\n{path.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"worker {name} not ready:\n{path.read_text()[-3000:]}")
                time.sleep(0.2)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.workers[name]
        os.killpg(proc.pid, sig)
        proc.wait(timeout=30)

    def stop(self) -> None:
        for proc in self.workers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.workers.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def log(self, name: str) -> str:
        return (self.logdir / f"{name}.log").read_text(errors="replace")


@pytest.fixture
def fleet(redis_url: str, tmp_path: Path) -> Iterator[Fleet]:
    """A fleet (no workers yet) on the test's Redis; workers are stopped at the end."""
    f = Fleet(redis_url, tmp_path)
    try:
        yield f
    finally:
        f.stop()
        redis.Redis.from_url(redis_url).flushdb()


def until(condition: Callable[[], object], what: str, timeout: float = 120) -> None:
    """Poll ``condition`` every 0.1 s until it is true; fail saying ``what`` did
    not happen within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} after {timeout}s"
        time.sleep(0.1)


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``verifleet ARGS`` and capture its output."""
    return subprocess.run(
        [*VERIFLEET, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
