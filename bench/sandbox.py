"""What the sandbox adds per unit on warm executors: CPU and latency.

One unit's template work is: describe the template (cached on the host after the
first unit of a (template, question)), then one round trip that validates the
judge's output into the template and runs verify(), per-field results, the regex
checks and the granular score. The in-process baseline does the same work with
the compiled class in this process (what verifleet did before the sandbox).

The sandbox runs twice, side by side: ``fresh_state=template`` (the default: a
process per job and template) and ``fresh_state=call`` (a process forked per
call). Each runs N units over T templates, sequentially (latency) and then from
C threads (throughput); CPU is this process's plus every process of the
executor's (the call processes included), so nothing the sandbox costs is
hidden in another process.

    python -m bench.sandbox                  # strict mode, 1,000 units over 12 templates
    python -m bench.sandbox --mode seccomp --units 5000

``--against CHECKOUT`` measures jobs instead (``--job-units``: units per
question, 1 and 4 by default), cold (a new job each time: its questions'
templates described and compiled in it) and warm (the same job again), CPU per
unit of this process and the executor tree, for every ``fresh_state`` each
checkout knows, here and in ``CHECKOUT`` (another checkout with its own
``.venv``, e.g. the base commit's): both run this file, each from its own
checkout with its own verifleet, alternately, so that the comparison is side by
side in one run.

    python -m bench.sandbox --against /tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from bench._harness import machine_line, self_cpu_seconds
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


def _measure(mode: str, fresh: str, templates: list[str], n: int) -> tuple[float, float]:
    """(CPU, wall) seconds per unit on a warm pool of one executor: CPU of this
    process and of every process of the executor, the short-lived call
    processes included (they are counted when their template process reaps them)."""
    settings = SandboxSettings(mode=SandboxMode(mode), pool_size=1, fresh_state=fresh)  # type: ignore[arg-type]
    pool = SandboxPool(settings)
    started = time.perf_counter()
    pool.start()
    print(f"executor start ({mode}, fresh_state={fresh}): {time.perf_counter() - started:.2f} s")
    try:
        _sandboxed(pool, templates, len(templates) * 2)  # warm: compiled, processes up
        cpu, wall = self_cpu_seconds(), time.perf_counter()
        _sandboxed(pool, templates, n)
        return (self_cpu_seconds() - cpu) / n, (time.perf_counter() - wall) / n
    finally:
        pool.close()


def _throughput(mode: str, fresh: str, templates: list[str], n: int, threads: int) -> float:
    settings = SandboxSettings(mode=SandboxMode(mode), pool_size=2, fresh_state=fresh)  # type: ignore[arg-type]
    pool = SandboxPool(settings)
    chunks = [templates] * threads
    try:
        with ThreadPoolExecutor(threads) as pool_threads:
            list(pool_threads.map(lambda t: _sandboxed(pool, t, len(t)), chunks))  # warm
            wall = time.perf_counter()
            list(pool_threads.map(lambda t: _sandboxed(pool, t, n // threads), chunks))
            return (n // threads) * threads / (time.perf_counter() - wall)
    finally:
        pool.close()


def _job_units(pool: SandboxPool, scope: str, templates: list[str], per_question: int) -> int:
    """One job's units, question after question in turn (units of a question
    are spread over the job, as a fleet's are): the units run."""
    with pool.scoped(scope):
        for _ in range(per_question):
            _sandboxed(pool, templates, len(templates))
    return per_question * len(templates)


def _job_figures(
    mode: str, fresh: str, templates: list[str], per_question: int
) -> dict[str, float]:
    """CPU ms per unit of a cold job (new scope) and of the same job warm."""
    settings = SandboxSettings(mode=SandboxMode(mode), pool_size=1, fresh_state=fresh)  # type: ignore[arg-type]
    pool = SandboxPool(settings)
    pool.start()
    try:
        _job_units(pool, "warm-up", templates, 1)
        cpu, units = self_cpu_seconds(), 0
        for job in range(4):
            units += _job_units(pool, f"cold-{job}", templates, per_question)
        cold = (self_cpu_seconds() - cpu) / units
        _job_units(pool, "warm", templates, 1)
        cpu, units = self_cpu_seconds(), 0
        for _ in range(4):
            units += _job_units(pool, "warm", templates, per_question)
        warm = (self_cpu_seconds() - cpu) / units
        return {"cold_ms": cold * 1e3, "warm_ms": warm * 1e3}
    finally:
        pool.close()


def _jobs_child(mode: str, templates: int, per_question: list[int]) -> None:
    """Print this checkout's job figures as JSON (one line)."""
    sources = [TEMPLATE.replace("CITY", f"City{t}") for t in range(templates)]
    known = SandboxSettings.model_fields["fresh_state"].annotation
    # ``call`` (a fork per call) is measured by the default run above.
    modes = [m for m in ("job", "template") if m in getattr(known, "__args__", ())]
    out = {
        f"{fresh}/{n}": _job_figures(mode, fresh, sources, n)
        for fresh in modes
        for n in per_question
    }
    print(json.dumps(out))


def _jobs_side_by_side(args: argparse.Namespace) -> None:
    """Run :func:`_jobs_child` with this interpreter and ``--against``, twice each,
    alternately, and print the figures side by side."""
    this_file = os.path.abspath(__file__)
    here = os.path.dirname(os.path.dirname(this_file))
    # Run from each checkout, so that it imports its own verifleet and bench.
    child = [
        "-c",
        f"import runpy, sys; sys.argv[0] = {this_file!r}; "
        f"runpy.run_path({this_file!r}, run_name='__main__')",
        "--jobs-child",
        "--mode",
        args.mode,
        "--templates",
        str(args.templates),
        "--job-units",
        *(str(n) for n in args.job_units),
    ]
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"this": [], "against": []}
    for _ in range(2):
        for name, python, cwd in (
            ("against", os.path.join(args.against, ".venv", "bin", "python"), args.against),
            ("this", sys.executable, here),
        ):
            done = subprocess.run([python, *child], cwd=cwd, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{name} ({cwd}) failed:\n{done.stderr[-2000:]}")
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"jobs of {args.templates} questions (one template each), {args.mode} mode, CPU ms/unit")
    print(f"  this checkout: {here}; against: {args.against}")
    for name, figures in runs.items():
        for key in figures[0]:
            cold = ", ".join(f"{f[key]['cold_ms']:.3f}" for f in figures)
            warm = ", ".join(f"{f[key]['warm_ms']:.3f}" for f in figures)
            fresh, per_question = key.split("/")
            print(
                f"  {name:<8} fresh_state={fresh:<8} {per_question} unit(s)/question: "
                f"cold {cold}; warm {warm}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=[m.value for m in SandboxMode], default="strict")
    parser.add_argument("--units", type=int, default=1000)
    parser.add_argument("--templates", type=int, default=12)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--against", help="another checkout (with .venv): compare jobs side by side"
    )
    parser.add_argument("--job-units", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--jobs-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.jobs_child:
        _jobs_child(args.mode, args.templates, args.job_units)
        return
    if args.against:
        print(machine_line())
        _jobs_side_by_side(args)
        return
    templates = [TEMPLATE.replace("CITY", f"City{t}") for t in range(args.templates)]
    n = args.units
    print(machine_line())
    print(f"{n} units over {args.templates} templates")

    _in_process(templates, len(templates))  # compile once: warm, as the sandbox is
    cpu, wall = self_cpu_seconds(), time.perf_counter()
    _in_process(templates, n)
    base_cpu, base_wall = (self_cpu_seconds() - cpu) / n, (time.perf_counter() - wall) / n
    print(
        f"in-process           : {base_cpu * 1e3:7.3f} ms CPU, {base_wall * 1e3:7.3f} ms wall per unit"
    )
    for fresh in ("template", "call"):
        unit_cpu, unit_wall = _measure(args.mode, fresh, templates, n)
        print(
            f"sandboxed, {fresh:<9} : {unit_cpu * 1e3:7.3f} ms CPU, {unit_wall * 1e3:7.3f} ms wall "
            f"per unit (+{(unit_cpu - base_cpu) * 1e3:.3f} ms CPU over in-process)"
        )
        rate = _throughput(args.mode, fresh, templates, n, args.threads)
        print(f"  throughput: {rate:.0f} units/s from {args.threads} threads over 2 executors")


if __name__ == "__main__":
    main()
