"""Result limits (issue 20, item 4): a few-KB benchmark whose templates make
megabytes, run with the default limits and with generous ones, side by side.

Each template is a few hundred bytes of source; its ground truth is ``--mb`` MB
and its ``verify()`` fails with a ``--mb`` MB message, and both are copied into
every result of the question (one per parsing model). Each mode runs in its own
process (the local runner, real strict-mode executors, the scripted endpoint in
a thread), keeps its results as ``verifleet run`` does, and reports its peak RSS,
the growth of its RSS over the run, and the results' size as JSON.

    python bench/result_limits.py               # 12 questions x 2 judges, 4 MB each
    python bench/result_limits.py --questions 20 --mb 8
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

GENEROUS = 256 * 1024 * 1024

TEMPLATE = """
from verifleet.templates import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "N" + "x" * (MB * 1024 * 1024)}

    def verify(self) -> bool:
        raise ValueError("y" * (MB * 1024 * 1024))
"""


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _child(questions: int, mb: int) -> dict[str, float]:
    from bench.endpoint import EndpointConfig, run_endpoint_in_thread
    from verifleet.orchestrator._local.runner import LocalRunner
    from verifleet.pipeline import PipelineResources
    from verifleet.sandbox import SandboxPool, SandboxSettings
    from verifleet.schemas import Benchmark, ModelConfig, Question, VerificationConfig

    items, answers = [], {}
    for i in range(questions):
        text = f"Question {i}?"
        source = TEMPLATE.replace("MB", str(mb)).replace('"N"', f'"{i}"')
        items.append(Question(id=f"q{i}", text=text, answer_template=source))
        answers[text] = {"text": "an answer", "fields": {"value": "v"}}
    bench = Benchmark(name="result-limits", questions=items)
    source_bytes = sum(len(q.answer_template or "") for q in items)
    pool = SandboxPool(SandboxSettings.from_env())
    pool.start()
    try:
        with run_endpoint_in_thread(EndpointConfig(answers=answers)) as ep:
            config = VerificationConfig.build(
                answering_models=[ModelConfig.parse(f"{ep.base_url}#answerer")],
                parsing_models=[
                    ModelConfig.parse(f"{ep.base_url}#judge1"),
                    ModelConfig.parse(f"{ep.base_url}#judge2"),
                ],
                max_concurrency=2,
            )
            before = _rss_mb()
            start = time.perf_counter()
            runner = LocalRunner(bench, config, resources=PipelineResources(sandbox=pool))
            results = [r for _unit, rs in runner.run() for r in rs]
            seconds = time.perf_counter() - start
            after = _rss_mb()
    finally:
        pool.close()
    result_bytes = sum(len(r.model_dump_json()) for r in results)
    errors = [r.metadata.error or "" for r in results]
    return {
        "source_kb": source_bytes / 1024,
        "results": len(results),
        "result_mb": result_bytes / 1024 / 1024,
        "largest_kb": max(len(r.model_dump_json()) for r in results) / 1024,
        "limit_errors": sum("VERIFLEET_RESULT_MAX_" in e for e in errors),
        "rss_growth_mb": after - before,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--mb", type=int, default=4, help="MB of ground truth and of verify output")
    parser.add_argument("--child", choices=["limits", "generous"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.questions, args.mb)))
        return 0
    root = Path(__file__).resolve().parent.parent
    figures: dict[str, dict[str, float]] = {}
    for mode in ("limits", "generous"):
        env = dict(os.environ, VERIFLEET_SANDBOX_TIMEOUT="60", PYTHONPATH=str(root))
        env = {k: v for k, v in env.items() if not k.startswith("VERIFLEET_RESULT_MAX_")}
        if mode == "generous":
            for name in ("GROUND_TRUTH", "PARSED", "VERIFY_OUTPUT", "JUDGE_SCHEMA", "RESPONSE"):
                env[f"VERIFLEET_RESULT_MAX_{name}"] = str(GENEROUS)
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                mode,
                "--questions",
                str(args.questions),
                "--mb",
                str(args.mb),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
        )
        figures[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(
        f"{args.questions} questions x 2 judges; templates make {args.mb} MB of ground truth "
        f"and {args.mb} MB of verify() output each"
    )
    print(f"{'':<22} {'default limits':>15} {'256 MB limits':>15}")
    rows = [
        ("benchmark source KB", "source_kb", "{:.1f}"),
        ("results", "results", "{:.0f}"),
        ("results as JSON, MB", "result_mb", "{:.2f}"),
        ("largest result, KB", "largest_kb", "{:.1f}"),
        ("limit errors", "limit_errors", "{:.0f}"),
        ("RSS growth, MB", "rss_growth_mb", "{:.0f}"),
        ("peak RSS, MB", "peak_rss_mb", "{:.0f}"),
        ("run seconds", "seconds", "{:.1f}"),
    ]
    for label, key, fmt in rows:
        values = [fmt.format(figures[mode][key]) for mode in ("limits", "generous")]
        print(f"{label:<22} {values[0]:>15} {values[1]:>15}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
