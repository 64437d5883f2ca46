"""Export benchmark: write and read N realistic results as Parquet and as JSON.

Usage::

    .venv/bin/python bench/export.py            # 100,000 results
    .venv/bin/python bench/export.py --n 20000
    .venv/bin/python bench/export.py --from-redis   # a job's Parquet export from Redis

Each phase runs in a fresh child process, so its peak memory is the child's
``ru_maxrss`` (the OS high-water mark of resident memory, which also counts Arrow's
native buffers that tracemalloc cannot see). ``growth`` is that peak minus the
child's resident memory after its imports, i.e. what the phase itself needed.
Results are generated lazily and deterministically inside the writing child (never
held all at once); the ``build`` phase measures that generation alone, so the write
phases' cost net of generation is their time minus the build time.

With ``--from-redis``, the same results are instead written into a private
redis-server with the store API (as workers store them) and exported as a job
would be: ``redis-fast`` is ``Job.export`` (stored JSON straight to Arrow),
``redis-slow`` the validating reference path (see ``bench/_stored.py``;
``bench/scale.py --export-only`` does the same with smaller, capitals-shaped results).

Nothing here is asserted: the script prints figures and is not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

if __package__ in (None, ""):  # run as a script: python bench/export.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import RedisProc
from bench._stored import export_in_child, fill_store, run_export
from verifleet.orchestrator import iter_results, write_results
from verifleet.schemas import (
    ModelIdentity,
    VerificationResult,
    VerificationResultMetadata,
    VerificationResultRubric,
    VerificationResultTemplate,
)

_CORPUS = (
    "kinase inhibitor binds receptor pathway apoptosis BCL2 venetoclax tumour cell "
    "protein expression mutation KRAS pancreas gene target clinical trial dose "
    "response patient cohort signalling mitochondria membrane the a of in and with "
    "which is are was by for to from that this evidence suggests strongly"
)
WORDS = _CORPUS.split()
POOL_SIZE = 1000

PHASES = ("build", "write-parquet", "read-parquet", "scan-parquet", "write-json", "read-json")
REDIS_JOB = "export-bench"


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(WORDS, k=words))


def _usage(rng: random.Random, model: str) -> dict[str, int | str]:
    prompt, completion = rng.randint(100, 2000), rng.randint(20, 600)
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
        "model": model,
    }


def build_results(n: int) -> Iterator[VerificationResult]:
    """Yield ``n`` realistic results (template + rubric, ~3 KB of JSON each).

    The first ``POOL_SIZE`` are built and validated in full; the rest are shallow
    copies of them with their own question id, replicate, timestamp and result id,
    so that generating the input costs little next to the export being measured.
    Every row group (1,000 rows) still holds 1,000 distinct bodies.
    """
    pool = [_make_result(index) for index in range(min(n, POOL_SIZE))]
    for index in range(n):
        base = pool[index % len(pool)]
        metadata = base.metadata.model_copy(
            update={
                "question_id": f"{index // 6:032x}",
                "replicate": index % 3 + 1,
                "timestamp": f"2026-01-01T{index // 3600 % 24:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z",
                "result_id": f"{index:016x}",
            }
        )
        yield base.model_copy(update={"metadata": metadata})


def _make_result(index: int) -> VerificationResult:
    """One fully validated result, varied by ``index``."""
    answerers = [
        ModelIdentity(model_name="qwen2.5-7b-instruct"),
        ModelIdentity(model_name="gpt-4.1-mini", tools=["brave_search"]),
    ]
    judge = ModelIdentity(model_name="gpt-4.1-nano")
    rng = random.Random(index)
    question = index // 6
    answering = answerers[index % 2]
    response = _text(rng, rng.randint(120, 260))
    stages = {
        stage: _usage(rng, answering.model_name if stage == "answer_generation" else "judge")
        for stage in ("answer_generation", "parsing", "rubric_evaluation", "abstention_check")
    }
    stages["total"] = {
        key: sum(int(stage[key]) for stage in stages.values())
        for key in ("input_tokens", "output_tokens", "total_tokens")
    }
    passed = rng.random() < 0.7
    metadata = VerificationResultMetadata(
        question_id=f"{question:032x}",
        template_id=f"{question * 7919:032x}",
        question_text=_text(rng, 30) + "?",
        raw_answer=_text(rng, 8),
        keywords=rng.sample(WORDS, 3),
        run_name="bench",
        replicate=index % 3 + 1,
        answering=answering,
        parsing=judge,
        completed_without_errors=True,
        execution_time=rng.uniform(0.5, 30.0),
        timestamp=f"2026-01-01T00:{index // 60 % 60:02d}:{index % 60:02d}Z",
        evaluation_mode="template_and_rubric",
    )
    template = VerificationResultTemplate(
        raw_llm_response=response,
        trace_messages=[
            {"role": "user", "content": metadata.question_text},
            {"role": "assistant", "content": response},
        ],
        parsed_llm_response={"target": rng.choice(WORDS), "tissue": rng.choice(WORDS)},
        parsed_gt_response={"target": "BCL2", "tissue": "pancreas"},
        template_verification_performed=True,
        verify_result=passed,
        verify_granular_result=round(rng.random(), 3),
        field_results={"target": passed, "tissue": rng.random() < 0.8},
        abstention_check_performed=True,
        abstention_detected=False,
        abstention_reasoning=_text(rng, 25),
        usage_metadata=stages,
    )
    rubric = VerificationResultRubric(
        rubric_evaluation_performed=True,
        rubric_evaluation_strategy="batch",
        llm_trait_scores={"clarity": rng.randint(1, 5), "safety": rng.random() < 0.95},
        regex_trait_scores={"cites_source": rng.random() < 0.5},
        callable_trait_scores={"under_300_words": True},
        metric_trait_scores={
            "coverage": {"precision": rng.random(), "recall": rng.random()},
        },
        metric_trait_confusion_lists={
            "coverage": {"tp": rng.sample(WORDS, 2), "fp": [], "fn": rng.sample(WORDS, 1)},
        },
    )
    return VerificationResult(
        metadata=metadata,
        template=template,
        rubric=rubric,
        evaluation_input=response,
    )


def _rss_kib() -> int:
    # ru_maxrss is KiB on Linux; the current RSS comes from /proc for the baseline.
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def run_phase(phase: str, n: int, folder: Path) -> dict[str, float]:
    """Run one phase in this process and return its figures."""
    parquet, json_path = folder / "results.parquet", folder / "results.json"
    baseline = _rss_kib()
    start = time.perf_counter()
    rows = 0
    size = 0
    if phase == "build":
        rows = sum(1 for _ in build_results(n))
    elif phase == "write-parquet":
        rows = write_results(build_results(n), parquet)
        size = parquet.stat().st_size
    elif phase == "write-json":
        rows = write_results(build_results(n), json_path)
        size = json_path.stat().st_size
    elif phase == "read-parquet":
        rows = sum(1 for _ in iter_results(parquet))
    elif phase == "read-json":
        rows = sum(1 for _ in iter_results(json_path))
    elif phase == "scan-parquet":
        # What an analyst does first: the pass rate per model from flat columns only.
        table = pq.read_table(parquet, columns=["answering_model", "verify_result"])
        grouped = table.group_by("answering_model").aggregate([("verify_result", "mean")])
        rows = table.num_rows
        assert grouped.num_rows > 0
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "rows": rows,
        "seconds": seconds,
        "peak_mib": peak / 1024,
        "growth_mib": (peak - baseline) / 1024,
        "size_mib": size / 2**20,
    }


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _print_figures(phase: str, fig: dict[str, float]) -> None:
    rate = fig["rows"] / fig["seconds"] if fig["seconds"] else float("inf")
    size = f"{fig['size_mib']:.1f}" if fig["size_mib"] else "-"
    print(
        f"{phase:<14}{fig['rows']:>9}{fig['seconds']:>8.1f}{rate:>10.0f}"
        f"{fig['peak_mib']:>10.0f}{fig['growth_mib']:>8.0f}{size:>10}"
    )


def _redis_phases(n: int) -> None:
    """Store the results in a private redis-server, then export them both ways."""
    with RedisProc() as redis_proc, tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        fill_store(redis_proc.url, REDIS_JOB, build_results(n), n)
        print(
            f"{'(store)':<14}{n:>9}{time.perf_counter() - start:>8.1f}   written with the store API"
        )
        for path in ("fast", "slow"):
            out = Path(folder) / f"{path}.parquet"
            fig = export_in_child(__file__, redis_proc.url, REDIS_JOB, out, path)
            growth = fig["peak_mb"] - fig["imported_mb"]
            _print_figures(
                f"redis-{path}",
                {
                    "rows": fig["rows"],
                    "seconds": fig["seconds"],
                    "peak_mib": fig["peak_mb"],
                    "growth_mib": growth,
                    "size_mib": fig["bytes"] / 2**20,
                },
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="results to generate")
    parser.add_argument(
        "--from-redis", action="store_true", help="export a job's results from Redis instead"
    )
    parser.add_argument("--phase", choices=[*PHASES, "export"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--export-path", choices=["fast", "slow"], help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "export":  # child of --from-redis
        print(json.dumps(run_export(args.redis, args.job, args.out, args.export_path)))
        return
    if args.phase:  # child mode: one phase, figures as JSON on stdout
        print(json.dumps(run_phase(args.phase, args.n, args.folder)))
        return

    source = "from Redis" if args.from_redis else "in files"
    print(f"export benchmark: {args.n} results {source}, each phase in a fresh child process")
    print("memory = child's ru_maxrss (peak RSS); growth = peak - RSS after imports")
    print(f"machine: {os.cpu_count()} CPUs, load average {_load()} at start\n")
    header = f"{'phase':<14}{'rows':>9}{'s':>8}{'rows/s':>10}{'peak MiB':>10}{'growth':>8}{'file MiB':>10}"
    print(header)
    if args.from_redis:
        _redis_phases(args.n)
    else:
        with tempfile.TemporaryDirectory(prefix="verifleet-bench-") as folder:
            for phase in PHASES:
                command = [sys.executable, __file__, "--phase", phase, "--n", str(args.n)]
                command += ["--folder", folder]
                out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                _print_figures(phase, json.loads(out.strip().splitlines()[-1]))
    print(f"\nload average {_load()} at the end (other processes share the CPUs)")


if __name__ == "__main__":
    main()
