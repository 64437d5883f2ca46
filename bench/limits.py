"""Fleet-wide endpoint limits: two workers against an endpoint with cap C, an RPM
budget and a TPM budget.

Usage::

    .venv/bin/python bench/limits.py                   # C=8, 400 units, RPM 600, TPM 10000
    .venv/bin/python bench/limits.py --cap 4 --n 1000 --rpm 1200
    .venv/bin/python bench/limits.py --runs tpm --tpm 10000 --tpm-n 120

Four runs, each with two ``verifleet worker`` processes of ``--threads`` threads
(far more than C, so only the limiter keeps calls below the cap):

1. ``cap``: the model's ``max_concurrency`` is C, the endpoint's real limit.
   The endpoint's peak in-flight must never exceed C; 429s should be zero.
2. ``adapt``: the model claims ``2 C`` but the endpoint admits only C and answers
   429 (``Retry-After: 1``) beyond that. The fleet-wide cap shrinks on each 429
   and grows back slowly on success; the bench prints the 429s in each tenth of
   the run, which should fall towards zero after adaptation.
3. ``rpm``: the model has ``requests_per_minute`` R (and the cap C); the bench samples the
   endpoint's call count every 0.25 s and prints the most calls seen in any
   60-second window (must not exceed R) and the achieved calls/min.
4. ``tpm``: the model has ``tokens_per_minute`` T (and the cap C). A sampler reads
   the fleet's token window from Redis every second (each call's start by Redis's
   clock and, once it ended, the tokens the endpoint reported for it) and the bench
   prints the most tokens started in any 60-second window (must not exceed T), the
   tokens/min over the run, the tokens started in each minute from the first
   call (the first minute may take T at once; each later one should come close
   to T, or the gate throttles more than it must) and the endpoint's call count
   as a cross-check.

Nothing is asserted; the script prints figures.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from pathlib import Path
from typing import Any

import redis

if __package__ in (None, ""):  # run as a script: python bench/limits.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    EndpointProc,
    RedisProc,
    WorkerProcs,
    capitals,
    fleet_config,
    machine_line,
)
from verifleet.limits import RedisCallGate, Spend
from verifleet.orchestrator._fleet.job import Job
from verifleet.schemas import Benchmark, ModelConfig, VerificationConfig


class _Sampler:
    """Reads the endpoint's counters every ``period`` seconds in a thread."""

    def __init__(self, endpoint: EndpointProc, period: float = 0.25) -> None:
        self.samples: list[tuple[float, dict[str, Any]]] = []
        self._endpoint = endpoint
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self._endpoint.stats()))
            self._stop.wait(self._period)

    def stop(self) -> list[tuple[float, dict[str, Any]]]:
        self._stop.set()
        self._thread.join()
        self.samples.append((time.monotonic(), self._endpoint.stats()))
        return self.samples


class _SpendSampler:
    """Collects the fleet's token window of ``model`` every ``period`` seconds.

    A call stays in Redis's window for 60 s, far longer than a period, so every
    call is seen; the last sighting of a call has its reported usage.
    """

    def __init__(self, redis_url: str, model: ModelConfig, period: float = 1.0) -> None:
        client = redis.Redis.from_url(redis_url)
        self._gate = RedisCallGate(client, lease_seconds=1, max_wait=0)
        self._model = model
        self._period = period
        self.calls: dict[str, Spend] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        for spend in self._gate.spends(self._model):
            self.calls[spend.call] = spend

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self._sample()

    def stop(self) -> list[Spend]:
        self._stop.set()
        self._thread.join()
        self._sample()
        return sorted(self.calls.values(), key=lambda spend: spend.start_ms)


def _max_tokens_in_window(spends: list[Spend], window_ms: int = 60_000) -> int:
    """The most tokens of calls started within any ``window_ms`` (the worst window
    ends at a call's start, so only those need checking)."""
    best, total, first = 0, 0, 0
    for spend in spends:
        total += spend.tokens
        while spends[first].start_ms <= spend.start_ms - window_ms:
            total -= spends[first].tokens
            first += 1
        best = max(best, total)
    return best


def _per_minute(spends: list[Spend]) -> list[int]:
    """Tokens of the calls started in each minute from the first call's start."""
    if not spends:
        return []
    first = spends[0].start_ms
    minutes = [0] * ((spends[-1].start_ms - first) // 60_000 + 1)
    for spend in spends:
        minutes[(spend.start_ms - first) // 60_000] += spend.tokens
    return minutes


def _tpm_config(base_url: str, cap: int, tpm: int, retry: dict[str, Any]) -> VerificationConfig:
    model = ModelConfig.parse(f"{base_url}#m", max_concurrency=cap, tokens_per_minute=tpm)
    return VerificationConfig.build(
        answering_models=[model], parsing_models=[model], retry_policy=retry
    )


def _run_job(
    bench: Benchmark, config: VerificationConfig, endpoint: EndpointProc, redis_url: str
) -> tuple[float, list[tuple[float, dict[str, Any]]], int]:
    endpoint.reset()
    sampler = _Sampler(endpoint)
    start = time.monotonic()
    progress = Job.submit(bench, config, redis_url).wait(poll=0.1)
    wall = time.monotonic() - start
    return wall, sampler.stop(), progress.failed_units


def _tenths(samples: list[tuple[float, dict[str, Any]]], key: str) -> list[int]:
    """How much counter ``key`` grew in each tenth of the run."""
    t0, t1 = samples[0][0], samples[-1][0]
    marks = [t0 + (t1 - t0) * i / 10 for i in range(11)]
    values = []
    for mark in marks:
        before = [s for t, s in samples if t <= mark]
        values.append(before[-1][key] if before else 0)
    return [b - a for a, b in itertools.pairwise(values)]


def _max_in_window(samples: list[tuple[float, dict[str, Any]]], window: float) -> int:
    best, first = 0, 0
    for t, stats in samples:
        while samples[first][0] < t - window:
            first += 1
        best = max(best, stats["calls"] - samples[first][1]["calls"])
    return best


def main(argv: list[str] | None = None) -> int:
    """Run the three scenarios and print their figures."""
    parser = argparse.ArgumentParser(prog="bench/limits.py", description=__doc__)
    parser.add_argument("--cap", type=int, default=8, help="endpoint cap C")
    parser.add_argument("--n", type=int, default=400, help="units of the cap and adapt runs")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="endpoint latency")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker")
    parser.add_argument("--rpm", type=int, default=600, help="requests/min budget R")
    parser.add_argument("--rpm-n", type=int, default=400, help="units of the rpm run")
    parser.add_argument("--tpm", type=int, default=10_000, help="tokens/min budget T")
    parser.add_argument("--tpm-n", type=int, default=120, help="units of the tpm run")
    parser.add_argument("--runs", default="cap,adapt,rpm,tpm", help="comma-separated")
    args = parser.parse_args(argv)
    runs = {r.strip() for r in args.runs.split(",")}
    print(machine_line())
    print(f"2 workers x {args.threads} threads, C={args.cap}, L={args.latency_ms:g} ms", flush=True)
    bench, answers = capitals(max(args.n, args.rpm_n, args.tpm_n))
    options = ["--latency-ms", str(args.latency_ms), "--max-concurrency", str(args.cap)]
    with (
        EndpointProc(answers, options) as endpoint,
        RedisProc() as redis_proc,
        WorkerProcs(redis_proc.url, 2, concurrency=args.threads),
    ):
        jobs = bench.model_copy(update={"questions": bench.questions[: args.n]})
        # Long retries: a 429 must end in a retry, not in an errored unit.
        retry = {"max_attempts": 20, "initial_delay": 0.2, "max_delay": 2.0}
        if "cap" in runs:
            config = fleet_config(endpoint.base_url, cap=args.cap, retry_policy=retry)
            wall, samples, failed = _run_job(jobs, config, endpoint, redis_proc.url)
            stats = samples[-1][1]
            print(
                f"cap    max_concurrency={args.cap}: peak in-flight {stats['peak_in_flight']} "
                f"(cap {args.cap}: {'held' if stats['peak_in_flight'] <= args.cap else 'EXCEEDED'}), "
                f"{stats['sent_429']} x 429, {stats['calls']} calls in {wall:.1f}s "
                f"({stats['calls'] / wall:.0f} calls/s, limit {args.cap / args.latency_ms * 1000:.0f}), "
                f"{failed} failed units",
                flush=True,
            )
        if "adapt" in runs:
            claimed = 2 * args.cap
            config = fleet_config(endpoint.base_url, cap=claimed, retry_policy=retry)
            wall, samples, failed = _run_job(jobs, config, endpoint, redis_proc.url)
            stats = samples[-1][1]
            print(
                f"adapt  max_concurrency={claimed} vs endpoint {args.cap}: "
                f"{stats['sent_429']} x 429 of {stats['calls']} calls in {wall:.1f}s, "
                f"{failed} failed units; 429s per tenth of the run: "
                f"{_tenths(samples, 'sent_429')}",
                flush=True,
            )
        if "rpm" in runs:
            jobs = bench.model_copy(update={"questions": bench.questions[: args.rpm_n]})
            # The cap too: the endpoint refuses calls beyond C whatever the budget.
            config = fleet_config(endpoint.base_url, cap=args.cap, rpm=args.rpm, retry_policy=retry)
            wall, samples, failed = _run_job(jobs, config, endpoint, redis_proc.url)
            stats = samples[-1][1]
            worst = _max_in_window(samples, 60.0)
            print(
                f"rpm    requests_per_minute={args.rpm}: most calls in any 60 s window {worst} "
                f"({'held' if worst <= args.rpm else 'EXCEEDED'}), {stats['calls']} calls in "
                f"{wall:.1f}s = {stats['calls'] / wall * 60:.0f} calls/min, "
                f"{stats['sent_429']} x 429, {failed} failed units",
                flush=True,
            )
        if "tpm" in runs:
            jobs = bench.model_copy(update={"questions": bench.questions[: args.tpm_n]})
            config = _tpm_config(endpoint.base_url, args.cap, args.tpm, retry)
            model = config.answering_models[0]
            spender = _SpendSampler(redis_proc.url, model)
            wall, samples, failed = _run_job(jobs, config, endpoint, redis_proc.url)
            spends = spender.stop()
            stats = samples[-1][1]
            worst = _max_tokens_in_window(spends)
            total = sum(spend.tokens for spend in spends)
            print(
                f"tpm    tokens_per_minute={args.tpm}: most tokens started in any 60 s window "
                f"{worst} ({'held' if worst <= args.tpm else 'EXCEEDED'}), {total} tokens in "
                f"{len(spends)} calls (endpoint: {stats['calls']} calls) in {wall:.1f}s = "
                f"{total / wall * 60:.0f} tokens/min; per minute from the first call: "
                f"{_per_minute(spends)}; {stats['sent_429']} x 429, {failed} failed units",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
