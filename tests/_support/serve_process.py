"""``verifleet serve`` as a user starts it: a subprocess on a free port, its
output in a log file, ready once ``GET /health`` answers."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

from _support.fleet import VERIFLEET
from _support.redis_server import free_port

__all__ = ["running_serve"]


@contextlib.contextmanager
def running_serve(
    benchmark: Path,
    flags: Sequence[str],
    log: Path,
    *,
    env: dict[str, str] | None = None,
    start_timeout: float = 120.0,
) -> Iterator[str]:
    """Run ``verifleet serve BENCHMARK FLAGS --port <free>`` until the block ends;
    yields its base URL (``http://127.0.0.1:PORT``) once ``/health`` answers 200.

    Raises:
        AssertionError: the server exited, or did not answer within
            ``start_timeout`` seconds (the message carries its log).
    """
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*VERIFLEET, "serve", str(benchmark), *flags, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + start_timeout
            while True:
                assert proc.poll() is None, log.read_text()
                try:
                    if httpx.get(f"{base}/health", trust_env=False).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "verifleet serve did not start:\n" + (
                    log.read_text()
                )
                time.sleep(0.2)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
