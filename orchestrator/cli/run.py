"""``verifleet run``: a whole job in this process (local mode).

Runs every (question × answering model × replicate) unit concurrently, generates
each answer once for all parsing models, then every (scenario × answering model ×
replicate) unit turn by turn; shows live progress, prints pass rates per model
pair and scenario runs by status, and writes the result set (scenario runs too,
in .parquet and .json). Re-running with the same ``--out`` resumes: units already
in the file (or its journals) are not run again.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from verifleet.schemas import ConfigError, load_benchmark

from .._local.output import RunOutput
from .._local.progress import RunProgress
from .._local.runner import LocalRunner
from .._local.tally import PassRateTally, ScenarioTally
from ._console import make_console
from ._sandbox import add_sandbox_argument, start_sandbox
from .config import add_config_arguments, build_config, local_model_needed

__all__ = ["register"]

_EPILOG = """\
models:
  provider:model            a langchain provider, e.g. openai:gpt-4.1-mini (key from OPENAI_API_KEY)
  http://host:port/v1#name  any OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama, ...)
  manual:answers.json       pre-recorded answers keyed by question id (answering only)
  local                     the bundled SmolLM2-135M on a llama-server this command starts

examples:
  verifleet run examples/demo/benchmark.yaml --answering local --parsing local --out demo.parquet
  verifleet run bench.jsonld --answering openai:gpt-4.1-mini --parsing openai:gpt-4.1 \\
      --replicates 3 --mode template_and_rubric --out results.parquet
"""


def register(commands: Any) -> None:
    """Add the ``run`` sub-command."""
    parser = commands.add_parser(
        "run",
        help="run a verification job in this process (no servers needed)",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("benchmark", type=Path, help="benchmark file (.yaml, .json or .jsonld)")
    add_config_arguments(parser)
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="result file: .parquet (recommended), .json, .jsonl or .csv; re-using it resumes",
    )
    parser.add_argument(
        "--trust-callables",
        action="store_true",
        help="allow pickled callable rubric traits (unpickled only inside the sandbox)",
    )
    add_sandbox_argument(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    console = make_console(stderr=True)
    start_sandbox(args)
    # A broken template fails its question, not the run: load everything, warn,
    # and let the pipeline record the problem in that question's results.
    benchmark = load_benchmark(
        args.benchmark, trust_callables=args.trust_callables, validate_templates=False
    )
    for problem in benchmark.validate():
        console.print(f"[yellow]warning:[/yellow] {problem} (its results will record the error)")
    with contextlib.ExitStack() as stack:
        local_spec = None
        if local_model_needed(args):
            from verifleet.orchestrator import LocalLLMServer

            console.print("starting the local model (llama-server + SmolLM2-135M-Instruct) ...")
            server = stack.enter_context(LocalLLMServer())
            local_spec = server.spec
        config = build_config(args, local_spec=local_spec)
        return _execute(benchmark, config, args.out, console)


def _execute(benchmark: Any, config: Any, out: Path, console: Console) -> int:
    if not benchmark.questions and not benchmark.scenarios:
        raise ConfigError(f"{out}: the benchmark has no questions and no scenarios")
    if benchmark.scenarios and out.suffix.lower() not in (".parquet", ".pq", ".json"):
        console.print(
            f"[yellow]warning:[/yellow] {out.suffix} files hold result rows only: the "
            "scenario runs (scenario_results) are not kept, and a resumed run repeats "
            "them; use .parquet or .json"
        )
    output = RunOutput(out)
    done = output.done_keys()
    done_scenarios = output.done_scenarios()
    runner = LocalRunner(benchmark, config)
    total = runner.count_units() + runner.count_scenario_units()
    tally = PassRateTally()
    scenarios = ScenarioTally()
    skipped = 0
    started = time.monotonic()
    with RunProgress(total, console=console) as progress:

        def on_skip(_unit: Any) -> None:
            nonlocal skipped
            skipped += 1
            progress.advance(skipped=True)

        try:
            for _unit, results in runner.run(done_keys=done, on_skip=on_skip):
                output.record(results)
                for result in results:
                    tally.add(result)
                progress.advance(
                    failed=any(not r.metadata.completed_without_errors for r in results)
                )
            for _scenario, run in runner.run_scenarios(done=done_scenarios, on_skip=on_skip):
                output.record_scenario(run)
                for result in run.results:
                    tally.add(result)
                assert run.scenario_result is not None
                scenarios.add(run.scenario_result)
                progress.advance(failed=run.scenario_result.status == "error")
        except KeyboardInterrupt:
            runner.stop()
            output.journal.close()
            output.scenario_journal.close()
            console.print(
                f"interrupted: finished units are kept in {output.journal.path}; "
                f"run the same command again to resume"
            )
            raise
    elapsed = time.monotonic() - started
    written = output.finalize()
    if skipped:
        console.print(f"resumed: {skipped} of {total} units were already in {out}")
    console.print(tally.table())
    if scenarios.runs:
        console.print(scenarios.table())
        for line in scenarios.errors:
            console.print(f"[yellow]scenario failed:[/yellow] {line}")
    ran = total - skipped
    console.print(
        f"{ran} units in {elapsed:.1f}s ({ran / elapsed if elapsed else 0:.2f} units/s); "
        f"{written} results written to {out}"
    )
    if tally.total_errors:
        console.print(
            f"[yellow]{tally.total_errors} results have errors[/yellow]: see the `error` "
            f"column (metadata.error) in {out}"
        )
    sys.stdout.flush()
    return 0
