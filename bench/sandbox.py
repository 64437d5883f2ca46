"""What the sandbox adds per unit on warm executors: CPU and latency.

One unit's template work is: describe the template (cached on the host after the
first unit of a (template, question)), then one round trip that validates the
judge's output into the template and runs verify(), per-field results, the regex
checks and the granular score. The in-process baseline does the same work with
the compiled class in this process (what verifleet did before the sandbox).

Both run N units over T templates, sequentially (latency) and then from C threads
(throughput); CPU is this process's plus the executor's own (it reports its CPU
seconds), so nothing the sandbox costs is hidden in another process.

    python bench/sandbox.py                  # strict mode, 2,000 units over 20 templates
    python bench/sandbox.py --mode seccomp --units 5000
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

from verifleet.sandbox import SandboxMode, SandboxPool, SandboxSettings
from verifleet.templates import (
    build_answer,
    judge_json_schema,
    load_answer_class,
    parsed_ground_truth,
    parsed_llm_fields,
)

TEMPLATE = """
from verifleet.templates import BaseAnswer, VerifiedField, ExactMatch, NumericTolerance


class Answer(BaseAnswer):
    city: str = VerifiedField(description="capital", ground_truth="CITY", verify_with=ExactMatch())
    population: float = VerifiedField(
        description="millions", ground_truth=2.1, verify_with=NumericTolerance(tolerance=0.2)
    )

    def model_post_init(self, context):
        super().model_post_init(context)
        self.regex = {"cites": {"pattern": r"\\[\\d+\\]", "expected": 1, "match_type": "count"}}
"""

TRACE = "The capital is CITY with 2.1 million people [1]."


def _in_process(templates: list[str], units: int) -> None:
    for i in range(units):
        source = templates[i % len(templates)]
        cls = load_answer_class(source, f"q{i % len(templates)}")
        raw = cls.raw_answer_class or cls
        judge_json_schema(raw)
        parsed_ground_truth(cls)
        answer = build_answer(cls, {"city": f"City{i % len(templates)}", "population": 2.2})
        answer.set_raw_trace(TRACE)
        parsed_llm_fields(answer)
        answer.verify()
        answer.field_results()
        answer.verify_regex(TRACE)


def _sandboxed(pool: SandboxPool, templates: list[str], units: int) -> None:
    for i in range(units):
        source = templates[i % len(templates)]
        handle = pool.load_template(source, f"q{i % len(templates)}")
        handle.judge_schema()
        handle.ground_truth()
        pool.evaluate(handle, {"city": f"City{i % len(templates)}", "population": 2.2}, TRACE)


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=[m.value for m in SandboxMode], default="strict")
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--templates", type=int, default=20)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    templates = [TEMPLATE.replace("CITY", f"City{t}") for t in range(args.templates)]
    n = args.units
    print(f"load average: {os.getloadavg()}; {n} units over {args.templates} templates")

    _in_process(templates, len(templates))  # compile once: warm, as the sandbox is
    cpu, wall = _cpu(), time.perf_counter()
    _in_process(templates, n)
    base_cpu, base_wall = (_cpu() - cpu) / n, (time.perf_counter() - wall) / n

    pool = SandboxPool(SandboxSettings(mode=SandboxMode(args.mode), pool_size=1))
    started = time.perf_counter()
    pool.start()
    print(f"executor start ({args.mode}): {time.perf_counter() - started:.2f} s")
    _sandboxed(pool, templates, len(templates))  # warm: compiled in the executor
    executor_before = pool.executor_cpu_seconds()
    cpu, wall = _cpu(), time.perf_counter()
    _sandboxed(pool, templates, n)
    host_cpu, sb_wall = (_cpu() - cpu) / n, (time.perf_counter() - wall) / n
    executor_cpu = (pool.executor_cpu_seconds() - executor_before) / n
    pool.close()

    total = host_cpu + executor_cpu
    print(f"in-process : {base_cpu * 1e3:.3f} ms CPU, {base_wall * 1e3:.3f} ms wall per unit")
    print(
        f"sandboxed  : {total * 1e3:.3f} ms CPU (host {host_cpu * 1e3:.3f} + executor "
        f"{executor_cpu * 1e3:.3f}), {sb_wall * 1e3:.3f} ms wall per unit"
    )
    print(
        f"added      : {(total - base_cpu) * 1e3:.3f} ms CPU, "
        f"{(sb_wall - base_wall) * 1e3:.3f} ms latency per unit (sequential, warm)"
    )

    pool = SandboxPool(SandboxSettings(mode=SandboxMode(args.mode), pool_size=2))
    chunks = [templates] * args.threads
    with ThreadPoolExecutor(args.threads) as threads:
        list(threads.map(lambda t: _sandboxed(pool, t, len(t)), chunks))  # warm both
        wall = time.perf_counter()
        list(threads.map(lambda t: _sandboxed(pool, t, n // args.threads), chunks))
        rate = (n // args.threads) * args.threads / (time.perf_counter() - wall)
    pool.close()
    print(f"throughput : {rate:.0f} units/s from {args.threads} threads over 2 executors")


if __name__ == "__main__":
    main()
