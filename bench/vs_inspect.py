"""verifleet against inspect_ai on one workload and one endpoint, alternating.

Usage::

    python3 -m venv .bench-venv && .bench-venv/bin/pip install inspect-ai openai
    .venv/bin/python bench/vs_inspect.py --n 600 --latency-ms 500 --cap 64 --rounds 2

inspect_ai is not a verifleet dependency: it runs from its own venv
(``--inspect-venv``, default ``.bench-venv`` at the repository root; the
command above makes it). Both systems get the same N capitals questions (each
its own template for verifleet; ``bench/_inspect_task.py`` for inspect_ai: an
answer, then a JSON-schema extraction by the same model, scored against the
city) against one endpoint double (``bench/endpoint.py``: latency L, C calls in
flight, 429 beyond), each as a user starts it, in a process of its own:
``verifleet run`` at its defaults, ``inspect eval`` with ``--max-connections C``
(``--inspect-defaults``: its own default). Per run: the whole command's wall
time and units/s as a share of the limit C / L / 2, its CPU (with every process
it started; the endpoint's is not counted) per unit; verifleet's job phase
beside it. The order alternates (verifleet, inspect, inspect, verifleet, ...);
at the end, each figure's median per system and verifleet's ratio to inspect_ai.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import EndpointProc, capitals, machine_line
from bench.startup import run_command
from verifleet.schemas import dump_benchmark

ROOT = Path(__file__).resolve().parent.parent


def run_inspect(
    venv: Path, questions: Path, url: str, work: Path, connections: int | None
) -> dict[str, float]:
    """One ``inspect eval`` of the capitals task against ``url``; wall and CPU.

    Raises:
        SystemExit: the command failed (its output's tail printed).
    """
    # inspect finds tasks by a path relative to its working folder.
    task = work / "inspect_task.py"
    shutil.copyfile(ROOT / "bench" / "_inspect_task.py", task)
    argv = [str(venv / "bin" / "inspect"), "eval", task.name]
    argv += ["--model", "openai-api/bench/m", "--display", "none"]
    argv += ["--log-dir", str(work / "inspect-logs")]
    if connections is not None:
        argv += ["--max-connections", str(connections)]
    env = {
        **os.environ,
        "BENCH_API_KEY": "not-needed",
        "BENCH_BASE_URL": url,
        "VF_INSPECT_QUESTIONS": str(questions),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.stderr.write((done.stdout + done.stderr)[-3000:])
        raise SystemExit(f"inspect eval failed (exit {done.returncode})")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "job": float("nan")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--cap", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2, help="each system runs this often")
    parser.add_argument("--inspect-venv", type=Path, default=ROOT / ".bench-venv")
    parser.add_argument(
        "--inspect-defaults", action="store_true", help="no --max-connections for inspect_ai"
    )
    args = parser.parse_args(argv)
    if not (args.inspect_venv / "bin" / "inspect").exists():
        parser.error(
            f"no inspect in {args.inspect_venv}: python3 -m venv {args.inspect_venv} && "
            f"{args.inspect_venv}/bin/pip install inspect-ai openai"
        )
    limit = args.cap / (args.latency_ms / 1000.0) / 2.0
    rows: dict[str, list[dict[str, float]]] = {"verifleet": [], "inspect_ai": []}
    with tempfile.TemporaryDirectory(prefix="vf-vs-inspect-") as tmp:
        work = Path(tmp)
        benchmark, answers = capitals(args.n)
        path = work / "bench.json"
        dump_benchmark(benchmark, path)
        questions = work / "questions.json"
        pairs = [[q.text, q.raw_answer] for q in benchmark.questions]
        questions.write_text(json.dumps(pairs), encoding="utf-8")
        print(machine_line(), flush=True)
        print(f"N={args.n} L={args.latency_ms:g} ms C={args.cap}: limit {limit:.1f} units/s")
        options = ["--latency-ms", str(args.latency_ms), "--max-concurrency", str(args.cap)]
        connections = None if args.inspect_defaults else args.cap
        python = ROOT / ".venv" / "bin" / "python"
        with EndpointProc(answers, options) as endpoint:
            for round_ in range(args.rounds):
                order = ["verifleet", "inspect_ai"]
                for system in order if round_ % 2 == 0 else reversed(order):
                    load = os.getloadavg()[0]
                    endpoint.reset()
                    if system == "verifleet":
                        got = run_command(
                            python, path, endpoint.base_url, work, "verifleet", own_cache=False
                        )
                    else:
                        got = run_inspect(
                            args.inspect_venv, questions, endpoint.base_url, work, connections
                        )
                    stats = endpoint.stats()
                    calls = f"{stats['calls']} calls ({stats['sent_429']} answered 429)"
                    rows[system].append(got)
                    rate = args.n / got["wall"]
                    job = "" if got["job"] != got["job"] else f", job phase {got['job']:5.1f} s"
                    print(
                        f"load {load:4.1f} {system:>10}: whole {got['wall']:6.1f} s "
                        f"({rate:5.1f} units/s = {rate / limit:.2f} of the limit), CPU "
                        f"{1000 * got['cpu'] / args.n:5.1f} ms/unit, {calls}{job}",
                        flush=True,
                    )
    medians = {
        system: {
            "rate": statistics.median(args.n / r["wall"] for r in runs),
            "cpu": statistics.median(1000 * r["cpu"] / args.n for r in runs),
        }
        for system, runs in rows.items()
    }
    for system, m in medians.items():
        print(f"median {system:>10}: {m['rate']:5.1f} units/s whole, {m['cpu']:5.1f} ms CPU/unit")
    vf, ins = medians["verifleet"], medians["inspect_ai"]
    print(
        f"verifleet / inspect_ai: whole-command rate x{vf['rate'] / ins['rate']:.2f}, "
        f"CPU per unit x{vf['cpu'] / ins['cpu']:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
