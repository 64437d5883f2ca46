"""What Redis's CPU per unit cannot go below: a round trip, the unit's scripts
alone, and Celery's own work per message (issue 23, item 5).

Usage::

    .venv/bin/python bench/redis_floor.py              # 5,000 calls, 3,000 tasks

Prints, each against a private redis-server and from its ``/proc`` CPU time:

- one client calling it in a loop, one round trip at a time: ``PING``, the
  store's unit step script (``UNITS_STEP``) taking one unit up, writing one
  unit's results, and writing k units then taking k up (what a worker thread
  running a message of several units sends per step of k; per call and per
  unit), with a 1,300-byte result blob per unit;
- Celery alone: two worker processes of 32 threads with verifleet's Celery
  settings (late acks, prefetch 1, task-sent events) running no-op tasks that
  sleep 20 ms, one message each: the push, the pop, kombu's unacked bookkeeping
  and the ack.

The first is what a unit's Redis work costs when Redis has the machine to
itself; the second is why one message per unit cannot reach 100 µs per unit.
Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/redis_floor.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import RedisProc, cpu_seconds, machine_line
from verifleet.store._scripts import UNITS_STEP

# A Celery app with verifleet's settings for messages (workers/app.py) and one
# task that does nothing but wait, so that Redis sees Celery's work alone.
_NOOP_APP = """
import os, time
from celery import Celery
app = Celery("noop", broker=os.environ["NOOP_BROKER"])
app.conf.update(
    task_acks_late=True, worker_prefetch_multiplier=1, task_reject_on_worker_lost=True,
    task_ignore_result=True, result_backend=None, task_serializer="json",
    accept_content=["json"], worker_send_task_events=False, task_send_sent_event=True,
    worker_pool="threads", worker_concurrency=32, worker_hijack_root_logger=False,
)
@app.task(name="noop", acks_late=True)
def noop(i, **labels):
    time.sleep(0.02)
"""


def _lone_calls(server: RedisProc, n: int) -> None:
    assert server.proc is not None
    client = server.client()
    client.hset("m", mapping={"status": "running", "total_units": 10**9})
    blob = os.urandom(1300)
    step = client.register_script(UNITS_STEP)
    keys = ["m", "done", "inflight", "templates", "attempts", "results", "pairs", "failed"]

    def measure(name: str, units: int, call: Callable[[int], object]) -> None:
        cpu = cpu_seconds(server.proc.pid)  # type: ignore[union-attr]
        for i in range(n):
            call(i)
        used = cpu_seconds(server.proc.pid) - cpu  # type: ignore[union-attr]
        print(
            f"one client, {name:<32} {used / n * 1e6:6.1f} µs of redis-server CPU per call,"
            f" {used / n / units * 1e6:6.1f} per unit"
        )

    def run_step(i: int, writes: int, begins: int) -> object:
        args: list[object] = [time.time(), "t", writes]
        for w in range(writes):
            args += [f"w{i}.{w}", 1, f"r{i}.{w}", blob, "pair", "answering\tparsing", "0"]
        for b in range(begins):
            args += [f"b{i}.{b}", ""]
        return step(keys=[*keys, *["verdicts"] * writes], args=args)

    measure("PING", 1, lambda i: client.ping())
    measure("UNITS_STEP, 1 unit begun", 1, lambda i: run_step(i, 0, 1))
    measure("UNITS_STEP, 1 unit written", 1, lambda i: run_step(i, 1, 0))
    for size in (1, 2, 4, 8):
        label = f"UNITS_STEP, {size} written + {size} begun"
        measure(label, size, lambda i, size=size: run_step(i, size, size))  # type: ignore[misc]


def _celery_alone(server: RedisProc, tasks: int, workers: int) -> None:
    assert server.proc is not None
    folder = Path(tempfile.mkdtemp(prefix="vf-noop-"))
    (folder / "noop_app.py").write_text(_NOOP_APP)
    env = {**os.environ, "NOOP_BROKER": server.url, "PYTHONPATH": str(folder)}
    command = [sys.executable, "-m", "celery", "-A", "noop_app", "worker", "-P", "threads"]
    command += ["-c", "32", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    command += ["-l", "WARNING"]
    procs = [
        subprocess.Popen(
            command, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(workers)
    ]
    try:
        sys.path.insert(0, str(folder))
        os.environ["NOOP_BROKER"] = server.url
        from noop_app import app, noop  # type: ignore[import-not-found]

        client = server.client()
        time.sleep(4)  # the workers' start: nothing to measure yet
        client.config_resetstat()
        cpu, started = cpu_seconds(server.proc.pid), time.perf_counter()
        with app.producer_or_acquire() as producer:
            for i in range(tasks):
                noop.apply_async((i,), {"question_id": "q"}, producer=producer)
        while client.llen("celery") or client.hlen("unacked"):
            time.sleep(0.05)
        used = cpu_seconds(server.proc.pid) - cpu
        wall = time.perf_counter() - started
        stats = client.info("commandstats")
        commands = sum(int(v["calls"]) for v in stats.values())
        print(
            f"Celery alone, {workers} workers x 32 threads: {tasks} no-op tasks in {wall:.1f} s, "
            f"{used / tasks * 1e6:.0f} µs of redis-server CPU and "
            f"{commands / tasks:.1f} commands per task"
        )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    """Measure both floors; print one line each."""
    parser = argparse.ArgumentParser(prog="bench/redis_floor.py", description=__doc__)
    parser.add_argument("--calls", type=int, default=5000, help="calls per lone measurement")
    parser.add_argument("--tasks", type=int, default=3000, help="no-op Celery tasks")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    args = parser.parse_args(argv)
    print(machine_line())
    with RedisProc() as server:
        _lone_calls(server, args.calls)
    with RedisProc() as server:
        _celery_alone(server, args.tasks, args.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
