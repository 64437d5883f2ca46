"""Shared pieces of the throughput, overhead, scale and limits benchmarks.

Every real part runs in its own process, started the way a user starts it, so
that what a bench measures for verifleet is not mixed with the endpoint's or
Redis's CPU time and so that the GIL of one does not slow the other:

- :class:`RedisProc`: a private ``redis-server`` on a free port (no persistence).
- :class:`EndpointProc`: ``bench/endpoint.py`` with an answers file.
- :class:`WorkerProcs`: ``verifleet worker`` processes (threads pool).

The figures helpers read ``/proc`` (Linux only), which is where the CPU time and
resident memory of a process tree live without instrumenting it.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import redis

from verifleet.schemas import Benchmark, ModelConfig, Question, VerificationConfig
from verifleet.store import DEFAULT_QUEUE

__all__ = [
    "BENCH_DIR",
    "BENCH_PIDS",
    "EndpointProc",
    "RedisProc",
    "WorkerProcs",
    "capitals",
    "cpu_seconds",
    "descendants_cpu_seconds",
    "fleet_config",
    "free_port",
    "machine_line",
    "rss_mb",
    "self_cpu_seconds",
]

BENCH_DIR = Path(__file__).resolve().parent
_TICKS = os.sysconf("SC_CLK_TCK")

_TEMPLATE = textwrap.dedent(
    """
    from pydantic import Field

    from karenina.schemas.entities import BaseAnswer


    class Answer(BaseAnswer):
        city: str = Field(description="The city the response names as the capital")

        def model_post_init(self, __context):
            self.correct = {"city": "CITY"}

        def verify(self) -> bool:
            return self.city.strip().lower() == self.correct["city"].lower()
    """
)


def capitals(
    n: int, *, wrong_every: int = 4, id_digits: int = 6
) -> tuple[Benchmark, dict[str, Any]]:
    """``n`` one-field questions and the endpoint answers map: every
    ``wrong_every``-th question is answered wrongly (0: none), so results mix
    passes and fails. Also the tests' benchmark (``tests/_support/jobs.py``).

    Every question has its own template (its own template id), as real
    benchmarks do, so the per-process template cache is exercised honestly.
    """
    questions = []
    answers: dict[str, Any] = {}
    for i in range(n):
        city = f"Capital{i}"
        text = f"What is the capital of Country{i}?"
        questions.append(
            Question(
                id=f"q{i:0{id_digits}d}",
                text=text,
                raw_answer=city,
                answer_template=_TEMPLATE.replace("CITY", city),
            )
        )
        said = f"Wrong{i}" if wrong_every and i % wrong_every == 0 else city
        answers[text] = {"text": f"The capital is {said}.", "fields": {"city": said}}
    return Benchmark(name=f"capitals-{n}", questions=questions), answers


def fleet_config(
    base_url: str,
    *,
    answering: Sequence[str] = ("m",),
    parsing: str = "m",
    cap: int | None = None,
    rpm: int | None = None,
    **extra: Any,
) -> VerificationConfig:
    """A template-mode config whose models all live on ``base_url``.

    Models with the same name share one endpoint limit (``cap`` concurrent
    calls, ``rpm`` requests per minute), which is what makes the endpoint's own
    peak in-flight count comparable with the cap.
    """

    def model(name: str) -> ModelConfig:
        return ModelConfig.parse(f"{base_url}#{name}", max_concurrency=cap, requests_per_minute=rpm)

    return VerificationConfig.build(
        answering_models=[model(name) for name in answering],
        parsing_models=[model(parsing)],
        **extra,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0.0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # Fields 14 and 15 of stat (utime, stime), counted after the ")" of comm.
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB now (0.0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_mb() -> float:
    """This process's peak resident memory in MB (``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _children() -> dict[int, list[int]]:
    """Live processes by parent pid (from /proc)."""
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(stat.parent.name))
    return kids


def descendant_pids(pid: int) -> list[int]:
    """The live descendants of ``pid`` (from /proc; empty once it is gone)."""
    kids, found = _children(), []
    stack = list(kids.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(kids.get(child, []))
    return found


def descendants_cpu_seconds(pid: int, exclude: Sequence[int] = ()) -> float:
    """CPU seconds of the live descendants of ``pid`` (the sandbox's template
    executors, say), plus those of its children it has reaped, leaving out the
    subtrees of ``exclude`` (the bench's own endpoint and Redis)."""
    kids, total = _children(), 0.0
    stack = [c for c in kids.get(pid, []) if c not in exclude]
    while stack:
        child = stack.pop()
        # A descendant's reaped children count too: a template process reaps
        # the short-lived process it forks for each call.
        total += cpu_seconds(child) + _reaped_cpu_seconds(child)
        stack.extend(c for c in kids.get(child, []) if c not in exclude)
    return total + _reaped_cpu_seconds(pid)


def _reaped_cpu_seconds(pid: int) -> float:
    """CPU seconds of the children ``pid`` has waited for (cutime + cstime)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) / _TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


#: Processes a bench started for itself (endpoint, Redis, workers): never counted
#: as this process's descendants.
BENCH_PIDS: set[int] = set()


def self_cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of its descendants but the
    bench's own servers and workers (:data:`BENCH_PIDS`): in local mode the
    sandbox's template executors are children of this process, and their CPU
    is verifleet's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    own = usage.ru_utime + usage.ru_stime
    return own + descendants_cpu_seconds(os.getpid(), tuple(BENCH_PIDS))


def machine_line() -> str:
    """Where and when: cores, load average, Python, UTC time (for the README)."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: {os.cpu_count()} cores, load avg {load}, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


@dataclass
class RedisProc:
    """A private redis-server on a free port in its own directory.

    Benches run it without persistence (they measure, not recover); the tests turn
    ``appendonly`` on (fsync always) so that :meth:`restart` keeps the data.
    """

    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="vf-bench-")))
    port: int = field(default_factory=free_port)
    appendonly: bool = False
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's URL (database 0)."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisProc:
        """Start and wait for PING.

        Raises:
            RuntimeError: no ``redis-server`` binary, or it did not answer in 20 s.
        """
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found (Debian package redis-server)")
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.appendonly else "no",
                "--appendfsync",
                "always",
                "--dir",
                str(self.workdir),
                "--logfile",
                str(self.workdir / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        BENCH_PIDS.add(self.proc.pid)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def client(self) -> redis.Redis:
        """A fresh client (bytes replies)."""
        return redis.Redis.from_url(self.url)

    def used_memory(self) -> int:
        """``used_memory`` in bytes, from INFO memory."""
        return int(self.client().info("memory")["used_memory"])

    def _terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stop and start on the same port and directory (AOF reloads the data)."""
        self._terminate()
        self.start()

    def stop(self) -> None:
        """Terminate the server and remove its directory; safe to call twice."""
        self._terminate()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> RedisProc:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


class EndpointProc:
    """``bench/endpoint.py`` in its own process (its CPU is not verifleet's).

    Args:
        answers: The answers map (written to a temporary JSON file).
        options: Extra command-line options, e.g. ``["--latency-ms", "100"]``.
    """

    def __init__(self, answers: dict[str, Any], options: Sequence[str] = ()) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="vf-endpoint-"))
        path = self._dir / "answers.json"
        path.write_text(json.dumps(answers), encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH_DIR / "endpoint.py"), "--answers", str(path), *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        BENCH_PIDS.add(self.proc.pid)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "port=" not in line:
            self.stop()
            raise RuntimeError(f"the endpoint did not start: {line!r}")
        self.port = int(line.rsplit("port=", 1)[1])
        self._http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", trust_env=False)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL to give a model config."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """The endpoint's counters (calls, peak_in_flight, sent_429, ...)."""
        result: dict[str, Any] = self._http.get("/stats").json()
        return result

    def reset(self) -> None:
        """Zero the counters."""
        self._http.post("/stats/reset").raise_for_status()

    def cpu_seconds(self) -> float:
        """The endpoint process's CPU seconds so far."""
        return cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        """Terminate the endpoint; safe to call twice."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> EndpointProc:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


class WorkerProcs:
    """``verifleet worker`` processes on one Redis, each in its own session.

    Args:
        redis_url: Broker and store.
        count: How many worker processes.
        concurrency: Threads per worker (None: ``verifleet worker``'s default).
        env: Extra environment (e.g. ``VERIFLEET_LEASE_SECONDS``).
        count_round_trips: Run each worker under ``bench/_roundtrips.py``, which
            counts its Redis round trips (read with :meth:`round_trips`).
        drain: Start each worker as ``verifleet worker --no-supervise``, which
            also runs the result drainer (jobs submitted with ``results_to``);
            the process is still the Celery worker itself, so its RSS is the
            worker's.
    """

    def __init__(
        self,
        redis_url: str,
        count: int,
        *,
        concurrency: int | None,
        env: dict[str, str] | None = None,
        count_round_trips: bool = False,
        drain: bool = False,
    ) -> None:
        self.logdir = Path(tempfile.mkdtemp(prefix="vf-workers-"))
        environment = {**os.environ, "VERIFLEET_REDIS_URL": redis_url, **(env or {})}
        if concurrency is None:
            from verifleet.orchestrator.cli.worker import DEFAULT_CONCURRENCY

            concurrency = DEFAULT_CONCURRENCY
        # The command ``verifleet worker`` runs (see its --help); started through
        # celery directly so a bench does not depend on every CLI module importing.
        celery = ["-m", "celery", "-A", "verifleet.workers.app", "worker"]
        celery += ["-P", "threads", "-c", str(concurrency), "-Q", DEFAULT_QUEUE]
        self.procs: list[subprocess.Popen[bytes]] = []
        for index in range(count):
            log = (self.logdir / f"w{index}.log").open("wb")
            counter = [str(BENCH_DIR / "_roundtrips.py"), str(self.logdir / f"w{index}.rtt")]
            if drain:
                # The celery command has no drainer: it is started by the CLI.
                command = [sys.executable, "-m", "verifleet", "worker", "--no-supervise"]
                command += ["--concurrency", str(concurrency), "--queues", DEFAULT_QUEUE]
                command += ["--hostname", f"bench{index}@%h"]
            else:
                command = [sys.executable, *(counter if count_round_trips else []), *celery]
                command += ["-n", f"bench{index}@%h"]
            command += ["--loglevel", "WARNING"]
            self.procs.append(
                subprocess.Popen(
                    command,
                    env=environment,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            BENCH_PIDS.add(self.procs[-1].pid)
        try:
            self._wait_ready(redis_url)
        except BaseException:
            self.stop(keep_logs=True)
            raise

    def _wait_ready(self, redis_url: str, timeout: float = 90.0) -> None:
        # At WARNING level celery logs nothing on start; a worker is ready when it
        # answers a broadcast ping, which is also how a user checks a fleet.
        from celery import Celery

        client = Celery("bench-ping", broker=redis_url)
        deadline = time.monotonic() + timeout
        try:
            while True:
                for proc in self.procs:
                    if proc.poll() is not None:
                        raise RuntimeError(f"a worker exited; logs in {self.logdir}")
                replies = client.control.ping(timeout=1.0) or []
                if len(replies) >= len(self.procs):
                    return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"workers not ready after {timeout}s; logs in {self.logdir}")
        finally:
            client.close()

    def cpu_seconds(self) -> float:
        """CPU seconds of all worker processes so far, their sandbox executors
        (child processes) included."""
        return sum(cpu_seconds(p.pid) + descendants_cpu_seconds(p.pid) for p in self.procs)

    def round_trips(self) -> int:
        """Redis round trips of all workers so far (``count_round_trips`` only;
        the counts lag by up to 0.2 s)."""
        total = 0
        for path in self.logdir.glob("w*.rtt"):
            with contextlib.suppress(OSError, ValueError):
                total += int(path.read_text())
        return total

    def rss_mb(self) -> list[float]:
        """Resident memory of each worker now, in MB."""
        return [rss_mb(p.pid) for p in self.procs]

    def stop(self, *, keep_logs: bool = False) -> None:
        """SIGTERM each worker's session, SIGKILL after 20 s; safe to call twice."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if not keep_logs:
            shutil.rmtree(self.logdir, ignore_errors=True)

    def __enter__(self) -> WorkerProcs:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
