"""What one unit costs Redis: server CPU and commands per unit on a real fleet.

Usage::

    .venv/bin/python bench/redis_cost.py                       # 3,000 units, 2 workers, 20 ms
    .venv/bin/python bench/redis_cost.py --n 6000 --latency-ms 5 --workers 2 --threads 32

Runs a private redis-server (no persistence), the scripted endpoint of
``bench/endpoint.py`` with latency L, and ``--workers`` worker processes with
default settings. After a warm-up job it resets Redis's statistics (``CONFIG
RESETSTAT``), runs the measured job and prints, per unit:

- the redis-server process's CPU time (user + system, from ``/proc``; it includes
  the server's own housekeeping over the run, so an idle second counts too);
- commands executed (the sum of ``INFO commandstats`` calls: a Lua script is one
  ``evalsha`` plus the commands it runs, which are listed as well);
- the commands that took most of the server's time (``usec`` per unit);
- the server's user and system CPU apart, and the requests it read per unit (a
  command, a pipeline or a script is one): an idle redis-server wakes up for
  each, which on a VM costs it more CPU than most commands (``PING`` from one
  client: ~60-100 µs here, against ~13 µs each when ten clients keep it busy);
- with ``--scripts``, each Lua script by name and each top-level command, with
  calls and server time per unit (from a ``SLOWLOG`` of every call).

One Redis core serves about 1,000,000 / (CPU µs per unit) units/s whatever the
number of workers: that is the fleet's ceiling. Nothing is asserted; the script
prints figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python bench/redis_cost.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    EndpointProc,
    RedisProc,
    WorkerProcs,
    capitals,
    cpu_seconds,
    fleet_config,
    machine_line,
)
from verifleet.orchestrator._fleet.job import Job


def _text(value: object) -> str:
    # Not the store's own helper: bench/redis_cost_ab.py runs this file against
    # earlier commits, which lack it.
    return value.decode() if isinstance(value, bytes) else str(value)


def _commandstats(client: object) -> dict[str, tuple[int, int]]:
    """``{command: (calls, usec)}`` from INFO commandstats."""
    stats = client.info("commandstats")  # type: ignore[attr-defined]
    return {
        name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
        for name, v in stats.items()
    }


def _script_names() -> dict[str, str]:
    """SHA1 -> name of every Lua script the fleet registers."""
    import hashlib
    import importlib

    names: dict[str, str] = {}
    for module in (
        "verifleet.store._scripts",
        "verifleet.store._schedule",
        "verifleet.store._feeding",
        "verifleet.store._call_cache",
        "verifleet.store._ledger",
        "verifleet.limits._redis",
        "verifleet.results._drain",
    ):
        mod = importlib.import_module(module)
        for attr, value in vars(mod).items():
            if isinstance(value, str) and "redis.call" in value:
                sha = hashlib.sha1(value.encode()).hexdigest()
                names[sha] = f"{module.rsplit('.', 1)[1]}.{attr}"
    return names


def _print_scripts(entries: list[dict[str, object]], n: int) -> None:
    """Top-level calls per unit and their time inside Redis, scripts by name."""
    names = _script_names()
    totals: dict[str, list[int]] = {}
    for entry in entries:
        if entry.get("client_address") in (b"?:0", "?:0"):
            continue  # a command a script ran: its time is in the script's
        command = entry["command"]
        parts = command.split() if isinstance(command, (bytes, str)) else []
        if not parts:
            continue
        name = _text(parts[0]).lower()
        if name == "evalsha" and len(parts) > 1:
            sha = _text(parts[1])
            name = names.get(sha, f"script {sha[:8]}")
        slot = totals.setdefault(name, [0, 0])
        slot[0] += 1
        slot[1] += int(entry["duration"])  # type: ignore[call-overload]
    calls = sum(c for c, _u in totals.values())
    print(f"top-level calls {calls / n:.2f}/unit (a script counts once)")
    print(f"{'call':<34} {'calls/unit':>10} {'us/unit':>9} {'us/call':>8}")
    for name, (c, u) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:40]:
        print(f"{name:<34} {c / n:10.3f} {u / n:9.1f} {u / max(c, 1):8.1f}")


def main(argv: list[str] | None = None) -> int:
    """Run the warm-up and the measured job; print the figures."""
    parser = argparse.ArgumentParser(prog="bench/redis_cost.py", description=__doc__)
    parser.add_argument("--n", type=int, default=3000, help="units of the measured job")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="endpoint latency")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--threads", type=int, default=32, help="threads per worker")
    parser.add_argument("--replicates", type=int, default=10, help="units per question")
    parser.add_argument("--top", type=int, default=12, help="commands listed")
    parser.add_argument(
        "--scripts",
        action="store_true",
        help="also time each Lua script and top-level command (SLOWLOG of every call: "
        "costs the server a little, so the CPU figure is then slightly high)",
    )
    args = parser.parse_args(argv)
    print(machine_line())
    warm_n = 64
    questions = max(1, args.n // args.replicates)
    everything, answers = capitals(questions + warm_n)
    bench = everything.model_copy(update={"questions": everything.questions[:questions]})
    warm = everything.model_copy(update={"questions": everything.questions[questions:]})
    with (
        RedisProc() as server,
        EndpointProc(answers, ["--latency-ms", str(args.latency_ms)]) as endpoint,
        WorkerProcs(server.url, args.workers, concurrency=args.threads),
    ):
        config = fleet_config(endpoint.base_url, replicate_count=args.replicates)
        Job.submit(warm, fleet_config(endpoint.base_url), server.url).wait(poll=0.1)
        client = server.client()
        assert server.proc is not None
        client.config_resetstat()
        if args.scripts:
            client.config_set("slowlog-max-len", 2_000_000)
            client.config_set("slowlog-log-slower-than", 0)
            client.slowlog_reset()
        usage0 = client.info("cpu")
        cpu0, start = cpu_seconds(server.proc.pid), time.perf_counter()
        progress = Job.submit(bench, config, server.url).wait(poll=0.1)
        wall = time.perf_counter() - start
        cpu = cpu_seconds(server.proc.pid) - cpu0
        usage = client.info("cpu")
        user = usage["used_cpu_user"] - usage0["used_cpu_user"]
        system = usage["used_cpu_sys"] - usage0["used_cpu_sys"]
        stats = _commandstats(client)
        reads = int(client.info("stats")["total_reads_processed"])
        entries = client.slowlog_get(2_000_000) if args.scripts else []
        windows = {
            _text(key): {_text(k): _text(v) for k, v in client.hgetall(key).items()}
            for key in client.scan_iter("vf:limit:*:window")
        }
    n = progress.done_units
    calls = sum(c for c, _u in stats.values())
    usec = sum(u for _c, u in stats.values())
    print(
        f"{n} units in {wall:.1f}s ({n / wall:.0f} units/s), {args.workers} workers x "
        f"{args.threads} threads, L={args.latency_ms:g} ms"
    )
    print(
        f"redis-server CPU {cpu / n * 1e6:7.0f} us/unit  (-> ~{n / cpu:,.0f} units/s per Redis "
        f"core)  commands {calls / n:6.1f}/unit  command time {usec / n:6.0f} us/unit"
    )
    print(
        f"of which user {user / n * 1e6:.0f} us/unit (commands, scripts), system "
        f"{system / n * 1e6:.0f} us/unit (sockets, wake-ups)"
    )
    print(
        f"requests read {reads / n:.2f}/unit (a pipeline or a script is one; each may wake "
        f"the server, which costs more than most commands)"
    )
    for key, fields in sorted(windows.items()):
        shown = ", ".join(f"{k} {float(v):.1f}" for k, v in sorted(fields.items()) if k != "shrunk")
        print(f"window {key.split(':')[2]}: {shown}")
    print(f"{'command':<22} {'calls/unit':>10} {'us/unit':>9} {'us/call':>8}")
    for name, (c, u) in sorted(stats.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{name:<22} {c / n:10.2f} {u / n:9.1f} {u / max(c, 1):8.1f}")
    if entries:
        _print_scripts(entries, n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
