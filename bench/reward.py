"""Reward service under RL load: N concurrent ``POST /verify`` connections at once.

Usage::

    .venv/bin/python bench/reward.py                               # 256,1024,4096,16000; judge
    .venv/bin/python bench/reward.py --levels 16000 --scenarios judge,nojudge,faults
    .venv/bin/python bench/reward.py --levels 1024 --workers 2 --redis redis://127.0.0.1:6390/0

Each (scenario, level) starts a fresh ``verifleet serve`` process, warms it
(except ``cold``), then opens ``level`` connections at once
with aiohttp, each sending one ``/verify`` with a response text never seen before,
while a prober sends ``GET /health`` every 100 ms. The open-files limit is raised
first (``ulimit -n``; the server inherits it).

Scenarios:

- ``judge``: the template is filled by the judge (one judge call per request).
  The judge is ``bench/endpoint.py`` in its own process, ``--latency-ms`` per call
  (exponential) and at most ``--judge-concurrency`` calls served at once (later
  ones queue there, as on a real inference server): the judge-bound ideal is
  ``judge_concurrency / latency`` requests/s.
- ``nojudge``: a regex trait only (``evaluation_mode: rubric_only``): no judge call,
  one sandbox call per request.
- ``faults``: as ``judge``, with 10 % of judge calls answered 503 and 10 % hanging
  (``--slow-ms``); the judge's per-call timeout is ``--judge-timeout`` and failed
  calls are retried.
- ``cold``: as ``judge``, without the warm-up the others get (one rollout per
  question before the measured ones): the measured rollouts start the sandbox
  executors and have the 100 templates described.

Printed per run: replies by status, answered within the time limit, requests/s
(200s over the wall time), the ratio to the judge-bound ideal, latency
percentiles, ``/health`` latency while loaded, the server's CPU per request (the
server processes only: sandbox executors and the judge not included) and its peak
memory. Nothing is asserted: figures for docs/reward.md.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import math
import multiprocessing
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verifleet.schemas import Benchmark, Question, RegexTrait, Rubric, dump_benchmark

TEMPLATE = textwrap.dedent(
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

#: The ``/health`` prober: every 100 ms until its stdin says stop, one line per
#: probe (milliseconds, or ``failed``), 10 s timeout.
PROBER = textwrap.dedent(
    """
    import http.client, select, sys, time, urllib.parse
    url = urllib.parse.urlsplit(sys.argv[1])
    while not select.select([sys.stdin], [], [], 0.1)[0]:
        began = time.perf_counter()
        try:
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
            conn.request("GET", "/health")
            reply = conn.getresponse()
            reply.read()
            conn.close()
            ok = reply.status == 200
        except OSError:
            ok = False
        print(f"{(time.perf_counter() - began) * 1000:.2f}" if ok else "failed", flush=True)
    """
)

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")


def _benchmark(questions: int) -> Benchmark:
    return Benchmark(
        name="bench-capitals",
        questions=[
            Question(
                id=f"q{i}",
                text=f"What is the capital of Country{i}?",
                answer_template=TEMPLATE.replace("CITY", f"Capital{i}"),
            )
            for i in range(questions)
        ],
        global_rubric=Rubric(regex_traits=[RegexTrait(name="concise", pattern=r"^.{0,200}$")]),
    )


def _reward_config(scenario: str, judge_timeout: float) -> dict[str, Any]:
    """``nojudge``: a regex trait alone; the others: the judge fills the template."""
    if scenario == "nojudge":
        return {
            "mode": "hybrid",
            "components": [{"name": "concise", "source": "trait", "trait": "concise", "weight": 1}],
            "verification": {"evaluation_mode": "rubric_only"},
        }
    return {"mode": "binary", "verification": {"request_timeout": judge_timeout}}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start_judge(args: argparse.Namespace, faults: bool, answers: Path) -> tuple[Any, str]:
    command = [
        sys.executable,
        str(ROOT / "bench" / "endpoint.py"),
        "--answers",
        str(answers),
        "--latency-ms",
        str(args.latency_ms),
        "--latency-dist",
        "exp",
        "--serve-concurrency",
        str(args.judge_concurrency),
    ]
    if faults:
        command += ["--rate-5xx", "0.1", "--timeout-rate", "0.1", "--slow-ms", str(args.slow_ms)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"the judge endpoint did not start: {line!r}")
    return proc, line.split()[2]


def base_of(port: int) -> str:
    """The URL of a port on this machine."""
    return f"http://127.0.0.1:{port}"


def _start_server(
    args: argparse.Namespace, bench: Path, reward: Path, judge_url: str
) -> tuple[Any, str, str]:
    """The server process, its URL and the URL its ``/health`` is probed at."""
    port = _free_port()
    command = [
        str(Path(sys.executable).with_name("verifleet")),
        "serve",
        str(bench),
        "--parsing",
        f"{judge_url}#judge",
        "--reward-config",
        str(reward),
        "--port",
        str(port),
        "--request-timeout",
        str(args.request_timeout),
        "--workers",
        str(args.workers),
    ]
    if args.max_inflight is not None:
        command += ["--max-inflight", str(args.max_inflight)]
    probe = base_of(port)
    if args.health_port:
        health_port = _free_port()
        command += ["--health-port", str(health_port)]
        probe = base_of(health_port)
    if args.redis:
        command += ["--redis", args.redis]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True)
    base = base_of(port)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"verifleet serve exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\nhost: localhost\r\n\r\n")
                if b"200 OK" in sock.recv(1024):
                    return proc, base, probe
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("verifleet serve did not answer /health within 120 s")


def _start_profiler(args: argparse.Namespace, pids: list[int], name: str) -> Any:
    """``py-spy record`` of the (first) server process during the measured load,
    when ``--profile DIR`` is given (its CPU then counts in the figures: profile
    and measure in separate runs)."""
    if not args.profile:
        return None
    out = Path(args.profile) / f"{name}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    pid = pids[-1]  # the worker process with --workers, else the server itself
    command = [args.py_spy, "record", "--pid", str(pid), "--rate", "250", "--gil"]
    command += ["--format", "raw", "--output", str(out), "--nonblocking"]
    spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the load starts
    return spy


def _stop_profiler(spy: Any) -> None:
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)


def _server_pids(root: int) -> list[int]:
    """The server process and its uvicorn worker processes (not the executors)."""
    pids = [root]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == root and "spawn_main" in cmdline:
            pids.append(int(entry.name))
    return pids


def _cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def _descendants_cpu_seconds(root: int, skip: list[int]) -> float:
    """CPU of every live process under ``root`` but ``skip`` (the server processes),
    with their reaped children: the sandbox executors and their template processes."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = fields
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        if pid not in skip:
            total += sum(int(x) for x in stats[pid][11:15])
    return total / TICKS


def _runqueue_seconds(pids: list[int]) -> float:
    """Seconds the processes were ready to run but waited for a CPU (``schedstat``):
    what the machine's other load took from them."""
    total = 0.0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return total


def _own_cpu_seconds() -> float:
    """This process's CPU and its reaped children's: the clients and the prober."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[0]


def _peak_rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def _load(
    base: str,
    bodies: list[dict[str, Any]],
    limit_s: float,
    expected: list[float] | None = None,
    began: float | None = None,
) -> dict[str, Any]:
    """One client: every body at once on its own connection. ``began`` (a
    ``time.perf_counter()``, system-wide on Linux) is the common start of all
    clients."""
    statuses: Counter[str] = Counter()
    wrong = 0
    latencies: list[float] = []
    refused: list[float] = []
    within = 0
    waited_before = _runqueue_seconds([os.getpid()])

    timeout = aiohttp.ClientTimeout(total=limit_s * 3)
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        began = time.perf_counter() if began is None else began

        async def one(index: int, body: dict[str, Any]) -> None:
            nonlocal within, wrong
            start = time.perf_counter()
            try:
                async with session.post(f"{base}/verify", json=body) as reply:
                    raw = await reply.read()
                    status = str(reply.status)
                    if expected is not None and reply.status == 200:
                        wrong += json.loads(raw)["reward"] != expected[index]
            except (aiohttp.ClientError, TimeoutError) as exc:
                status = type(exc).__name__
            elapsed = time.perf_counter() - start
            statuses[status] += 1
            if status in ("200", "503"):
                latencies.append(elapsed * 1000)
                if status == "503":
                    refused.append(elapsed * 1000)
                within += time.perf_counter() - began <= limit_s

        await asyncio.gather(*(one(i, body) for i, body in enumerate(bodies)))
        wall = time.perf_counter() - began
    return {
        "statuses": statuses,
        "latencies": latencies,
        "refused": refused,
        "within": within,
        "wall": wall,
        "wrong": wrong,
        "waited": _runqueue_seconds([os.getpid()]) - waited_before,
    }


def _client(job: tuple[str, list[dict[str, Any]], float, list[float] | None, float]) -> Any:
    base, bodies, limit_s, expected, began = job
    return asyncio.run(_load(base, bodies, limit_s, expected, began))


def _load_all(
    base: str,
    bodies: list[dict[str, Any]],
    limit_s: float,
    expected: list[float] | None,
    clients: int,
    probe: str | None = None,
) -> dict[str, Any]:
    """``bodies`` sent at once by ``clients`` client processes (round robin), while
    a prober process probes ``/health``; the merged figures."""
    # In its own process: a prober on a client's loop would wait behind thousands
    # of coroutines and report the client's lag, not the server's.
    prober = subprocess.Popen(
        [sys.executable, "-c", PROBER, probe or base],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    began = time.perf_counter()
    jobs = [
        (base, bodies[k::clients], limit_s, expected[k::clients] if expected else None, began)
        for k in range(clients)
    ]
    if clients == 1:
        parts = [_client(jobs[0])]
    else:
        # Forked after any event loop of this process has closed.
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(clients, mp_context=context) as pool:
            parts = list(pool.map(_client, jobs))
    out, _ = prober.communicate(b"stop\n", timeout=30)
    lines = out.decode().split()
    statuses: Counter[str] = Counter()
    for part in parts:
        statuses.update(part["statuses"])
    return {
        "statuses": statuses,
        "latencies": sorted(x for part in parts for x in part["latencies"]),
        "refused": sorted(x for part in parts for x in part["refused"]),
        "health": sorted(float(x) for x in lines if x != "failed"),
        "health_failed": lines.count("failed"),
        "within": sum(part["within"] for part in parts),
        "wall": max(part["wall"] for part in parts),
        "wrong": sum(part["wrong"] for part in parts),
        "client_waited": sum(part["waited"] for part in parts),
    }


def _run(
    args: argparse.Namespace, scenario: str, level: int, judge: tuple[int, str], tmp: Path
) -> None:
    judge_pid, judge_url = judge
    reward = tmp / f"reward-{scenario}.json"
    reward.write_text(json.dumps(_reward_config(scenario, args.judge_timeout)))
    server, base, probe = _start_server(args, tmp / "bench.yaml", reward, judge_url)
    try:
        pids = _server_pids(server.pid)
        tag = f"{scenario}-{level}-{time.time_ns()}"
        if scenario != "cold":
            # One rollout per question first: templates described, executors up.
            warm = [
                {"question_id": f"q{q}", "response": f"Warm {tag}-{q}: the capital is Capital{q}."}
                for q in range(args.questions)
            ]
            _load_all(base, warm, args.limit, None, 1)
        cpu_before, waited_before = _cpu_seconds(pids), _runqueue_seconds(pids)
        client_before, judge_before = _own_cpu_seconds(), _cpu_seconds([judge_pid])
        sandbox_before = _descendants_cpu_seconds(server.pid, pids)
        load_before = _loadavg()
        spy = _start_profiler(args, pids, f"{scenario}-{level}")
        bodies, expected = [], []
        for i in range(level):
            q = i % args.questions
            said = f"Capital{q}" if i % 4 else "Wrong"
            text = f"Rollout {tag}-{i}: the capital is {said}."
            bodies.append({"question_id": f"q{q}", "response": text})
            expected.append(1.0 if i % 4 else 0.0)
        if scenario == "nojudge":
            expected = [1.0] * level  # every response is short: the regex trait holds
        clients = args.clients or max(1, math.ceil(level / 4000))
        result = _load_all(base, bodies, args.limit, expected, clients, probe)
        _stop_profiler(spy)
        cpu = _cpu_seconds(pids) - cpu_before
        waited = _runqueue_seconds(pids) - waited_before
        client_cpu = _own_cpu_seconds() - client_before
        judge_cpu = _cpu_seconds([judge_pid]) - judge_before
        sandbox_cpu = _descendants_cpu_seconds(server.pid, pids) - sandbox_before
        load_after = _loadavg()
        memory = _peak_rss_mb(pids)
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    statuses, lat, health = result["statuses"], result["latencies"], result["health"]
    ok = statuses.get("200", 0)
    rate = ok / result["wall"]
    answered = statuses.get("200", 0) + statuses.get("503", 0)
    ideal = args.judge_concurrency / (args.latency_ms / 1000)
    ratio = f"{rate / ideal:.0%} of the judge-bound {ideal:.0f}/s" if scenario != "nojudge" else "-"
    print(
        f"\n== {scenario} c={level} workers={args.workers} latency={args.latency_ms:g}ms "
        f"judge_concurrency={args.judge_concurrency} "
        f"max_inflight={args.max_inflight or 'server default'}"
    )
    print(
        f"replies: {dict(sorted(statuses.items()))}  answered (200/503) {answered}/{level}; "
        f"200s with a wrong reward: {result['wrong']}"
    )
    print(
        f"answered within {args.limit:g}s: {result['within']}/{level}; wall {result['wall']:.1f}s"
    )
    print(f"throughput: {rate:.0f} verified/s ({ratio})")
    print(
        "latency ms: "
        f"p50={_percentile(lat, 0.5):.0f} p90={_percentile(lat, 0.9):.0f} "
        f"p99={_percentile(lat, 0.99):.0f} max={lat[-1] if lat else float('nan'):.0f}"
    )
    refused = result["refused"]
    if refused:
        print(
            f"503 latency ms: p50={_percentile(refused, 0.5):.0f} "
            f"p99={_percentile(refused, 0.99):.0f} max={refused[-1]:.0f}"
        )
    where = " (on --health-port)" if args.health_port else ""
    print(
        f"/health ms while loaded{where}: p50={_percentile(health, 0.5):.1f} "
        f"p99={_percentile(health, 0.99):.1f} max={health[-1] if health else float('nan'):.1f} "
        f"({len(health)} probes, {result['health_failed']} failed)"
    )
    per = cpu / max(answered, 1) * 1000
    per_ok = cpu / max(ok, 1) * 1000
    print(
        f"server CPU: {cpu:.2f}s = {per:.2f} ms per answered request, {per_ok:.2f} ms per "
        f"200; peak memory {memory:.0f} MB; waited {waited:.1f}s for a CPU"
    )
    print(
        f"sandbox CPU {sandbox_cpu:.1f}s = {sandbox_cpu / max(ok, 1) * 1000:.1f} ms per 200; "
        f"client CPU {client_cpu:.1f}s in {clients} processes "
        f"(waited {result['client_waited']:.1f}s for a CPU), "
        f"judge CPU {judge_cpu:.1f}s; "
        f"load average {load_before} -> {load_after}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="256,1024,4096,16000", help="concurrent connections")
    parser.add_argument(
        "--scenarios",
        default="judge",
        help="comma list of judge, nojudge, faults, cold (default judge)",
    )
    parser.add_argument("--latency-ms", type=float, default=50.0, help="judge latency per call")
    parser.add_argument(
        "--judge-concurrency", type=int, default=64, help="judge calls served at once (64)"
    )
    parser.add_argument("--questions", type=int, default=100, help="benchmark size")
    parser.add_argument(
        "--max-inflight", type=int, default=None, help="server --max-inflight (its default)"
    )
    parser.add_argument("--request-timeout", type=float, default=60.0, help="server deadline")
    parser.add_argument("--judge-timeout", type=float, default=5.0, help="judge call timeout")
    parser.add_argument("--slow-ms", type=float, default=30_000.0, help="a hanging judge call")
    parser.add_argument("--limit", type=float, default=60.0, help="answered-within bound (s)")
    parser.add_argument(
        "--clients",
        type=int,
        default=0,
        help="client processes (default one per 4,000 connections)",
    )
    parser.add_argument("--workers", type=int, default=1, help="server processes")
    parser.add_argument("--redis", default=None, help="shared judge cache (with --workers)")
    parser.add_argument(
        "--health-port",
        action="store_true",
        help="start the server with --health-port and probe /health there",
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="directory for py-spy profiles (raw folded stacks) of the server under load",
    )
    parser.add_argument("--py-spy", default="py-spy", help="the py-spy command (with --profile)")
    args = parser.parse_args(argv)

    levels = [int(x) for x in args.levels.split(",")]
    # The client and the server (a child, which inherits the limit) each hold one
    # descriptor per connection, plus the judge's and the executors'.
    need = max(levels) + 2048
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, max(hard, need)))
        except (ValueError, OSError):  # no CAP_SYS_RESOURCE: as far as the hard limit
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"open files limit: {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}")

    with tempfile.TemporaryDirectory(prefix="bench-reward-") as name:
        tmp = Path(name)
        dump_benchmark(_benchmark(args.questions), tmp / "bench.yaml")
        answers = {f"the capital is Capital{q}.": {"city": f"Capital{q}"} for q in range(100)}
        answers["the capital is Wrong."] = {"city": "Wrong"}
        (tmp / "answers.json").write_text(json.dumps(answers))
        for scenario in args.scenarios.split(","):
            judge, judge_url = _start_judge(args, scenario == "faults", tmp / "answers.json")
            try:
                for level in levels:
                    _run(args, scenario, level, (judge.pid, judge_url), tmp)
            finally:
                judge.terminate()
                judge.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
