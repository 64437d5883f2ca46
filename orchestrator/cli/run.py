"""``verifleet run``: a whole job in this process (local mode).

Runs every (question × answering model × replicate) unit concurrently, generates
each answer once for all parsing models, then every (scenario × answering model ×
replicate) unit turn by turn; shows live progress, prints pass rates per model
pair and scenario runs by status, and writes the result set (scenario runs too,
in .parquet and .json). Re-running with the same ``--out`` resumes: units already
in the file (or its journals) are not run again; ``--retry-errors`` runs the
errored ones again. Before any unit runs, the output's format and folder are
checked and the output is locked against a second run; every model answers one
test call beside the start-up and the first units, before any result is recorded:
a model that fails it stops the run at once with nothing recorded
(``--no-preflight`` skips it; with ``cache: true`` a model is asked only when the
run first needs a real call of it, so a re-run answered wholly from the cache calls
no model). The exit status is 1 when more results have errors than
``--max-error-rate`` allows (none by default), 2 on bad input, 130/143 when
interrupted (the journal keeps the finished units).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ._jobflags import add_job_arguments, select
from ._sandbox import add_sandbox_argument
from .config import add_config_arguments

if TYPE_CHECKING:
    from rich.console import Console

    from verifleet.pipeline import ScenarioRun
    from verifleet.schemas import Benchmark, CostSummary, VerificationConfig, VerificationResult

    from .._local.runner import LocalRunner
    from .._preflight import PreflightGate

__all__ = ["execute_run", "print_costs", "register"]

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
  verifleet run bench.jsonld ... --limit 5 --out try.parquet         # a quick look first
  verifleet run bench.jsonld ... --questions 'geo-*,q17' --out geo.parquet
  verifleet run bench.jsonld ... --out results.parquet --retry-errors  # re-run errored units

exit status: 0 all results fine (or errors within --max-error-rate), 1 too many
errored results, 2 bad input or a model failing its preflight call, 130/143 interrupted
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``run`` sub-command."""
    parser = commands.add_parser(
        "run",
        description=__doc__,
        epilog=_EPILOG,
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
    parser.add_argument(
        "--retry-errors",
        action="store_true",
        help="with an existing --out: run again the units whose results have errors; "
        "each result stays in the file once (the new one replaces the errored one)",
    )
    parser.add_argument(
        "--max-error-rate",
        type=_rate,
        default=0.0,
        metavar="R",
        help="exit 0 as long as at most this fraction (0-1) of the results have errors "
        "(default 0: any errored result makes the exit status 1)",
    )
    add_job_arguments(parser)
    add_sandbox_argument(parser)
    parser.set_defaults(handler=_run)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text}")
    return value


def _run(args: argparse.Namespace) -> int:
    from ._sandbox import start_sandbox_soon

    # The executor starts first, while this process imports what it needs,
    # loads the benchmark and builds the pipeline; the units' model calls need
    # none, the first unit to finish waits for it, and a failed start stops the
    # run before anything is recorded (it exits with its executors if the
    # output check below fails).
    sandbox_ready = start_sandbox_soon(args)
    from verifleet.schemas import load_benchmark

    from .._local.lock import OutputLock, check_output
    from ._console import make_console
    from .config import build_config, local_model_needed

    console = make_console(stderr=True)
    # Everything that can be wrong with the output is found before any work.
    check_output(args.out)
    with contextlib.ExitStack() as stack:
        stack.enter_context(OutputLock(args.out))
        try:
            # A broken template fails its question, not the run: load everything, warn,
            # and let the pipeline record the problem in that question's results.
            benchmark = load_benchmark(
                args.benchmark, trust_callables=args.trust_callables, validate_templates=False
            )
            benchmark = select(benchmark, args)
            # Each question's template is checked as its first unit starts, in the
            # run's own template processes (LocalRunner): one compile per template,
            # spread over the executors, none before the first unit.
            for problem in benchmark.validate(question_templates=False):
                _warn(console, problem)
            local_spec = None
            if local_model_needed(args):
                from verifleet.orchestrator import LocalLLMServer

                console.print(
                    "starting the local model (llama.cpp server + SmolLM2-135M-Instruct) ..."
                )
                # die_with_parent: a SIGKILLed run must not leave the server holding its port.
                server = stack.enter_context(LocalLLMServer(die_with_parent=True))
                local_spec = server.spec
            config = build_config(args, local_spec=local_spec)
        except Exception:
            # A machine that lacks the isolation is told so first, as when the
            # executor started before anything else.
            sandbox_ready()
            raise
        gate = None
        if args.preflight:
            from .._preflight import PreflightGate

            # Beside the units' start-up, not before it; a cached run asks a
            # model only once it first needs a real call of it.
            gate = PreflightGate(config, lazy=config.cache)
            stack.callback(gate.close)
        return _execute(
            benchmark,
            config,
            args.out,
            console,
            retry_errors=args.retry_errors,
            max_error_rate=args.max_error_rate,
            preflight=gate,
            sandbox_ready=sandbox_ready,
        )


def _warn(console: Console, problem: str) -> None:
    console.print(f"[yellow]warning:[/yellow] {problem} (its results will record the error)")


def print_costs(console: Console, costs: CostSummary, config: VerificationConfig) -> None:
    """The cost lines of a run summary (``costs``: a :class:`CostSummary`): per
    model and in total when the run had prices, the cache hits when it used the
    cache (nothing otherwise)."""
    pricing = config.pricing
    if pricing is not None:
        dated = f" (prices as of {pricing.as_of})" if pricing.as_of else ""
        console.print(f"cost of the calls made by this run{dated}:")
        for line in costs.lines():
            console.print(line)
        missing = costs.unpriced_models()
        if missing:
            console.print(
                f"[yellow]warning:[/yellow] no price for {', '.join(missing)}: "
                "their calls are not in the cost"
            )
    if config.cache:
        console.print(f"call cache: {costs.cache_hits} calls answered from the cache")


def _execute(
    benchmark: Benchmark,
    config: VerificationConfig,
    out: Path,
    console: Console,
    *,
    retry_errors: bool = False,
    max_error_rate: float = 0.0,
    runner: LocalRunner | None = None,
    carried: Iterable[VerificationResult] = (),
    preflight: PreflightGate | None = None,
    sandbox_ready: Callable[[], None] | None = None,
) -> int:
    from verifleet.schemas import ConfigError, CostSummary

    from .._local.driver import LocalDriver
    from .._local.progress import RunProgress
    from .._local.runner import LocalRunner
    from .._local.tally import PassRateTally, ScenarioTally, TraitTally

    if not (benchmark.questions or benchmark.scenarios or benchmark.broken_scenarios):
        raise ConfigError(f"{out}: the benchmark has no questions and no scenarios")
    if benchmark.scenarios and out.suffix.lower() not in (".parquet", ".pq", ".json"):
        console.print(
            f"[yellow]warning:[/yellow] {out.suffix} files hold result rows only: the "
            "scenario runs (scenario_results) are not kept, and a resumed run repeats "
            "them; use .parquet or .json"
        )
    runner = runner or LocalRunner(benchmark, config)
    runner.on_template_problem = functools.partial(_warn, console)
    # The units start while the executor does (their model calls need none);
    # the driver waits for it (and the preflight) before recording anything.
    driver = LocalDriver(
        runner,
        out,
        retry_errors=retry_errors,
        carried=carried,
        preflight=preflight,
        sandbox_ready=sandbox_ready,
    )
    if retry_errors and driver.errored:
        console.print(f"retrying the units of {len(driver.errored)} errored results in {out}")
    tally = PassRateTally()
    traits = TraitTally()
    costs = CostSummary()
    scenarios = ScenarioTally()
    for result in driver.carried:
        tally.add(result)
        traits.add(result)
    total = driver.total
    started = time.monotonic()
    with RunProgress(total, console=console) as progress:

        def on_results(results: list[VerificationResult]) -> None:
            for result in results:
                tally.add(result)
                traits.add(result)
                costs.add(result)
            progress.advance(failed=any(not r.metadata.completed_without_errors for r in results))

        def on_scenario(run: ScenarioRun) -> None:
            for result in run.results:
                tally.add(result)
                traits.add(result)
                costs.add(result)
            assert run.scenario_result is not None
            scenarios.add(run.scenario_result)
            progress.advance(failed=run.scenario_result.status == "error")

        try:
            driver.run(on_results, on_scenario, lambda: progress.advance(skipped=True))
        except KeyboardInterrupt:
            assert driver.output is not None
            console.print(
                f"interrupted: finished units are kept in {driver.output.journal.path}; "
                f"run the same command again to resume"
            )
            raise
    elapsed = time.monotonic() - started
    from verifleet.results import build_manifest

    written = driver.finalize(build_manifest(benchmark, config))
    if preflight is not None:
        answered = preflight.answered()
        console.print(
            f"preflight: {answered} model(s) answered a test call"
            if answered
            else "preflight: no model needed a test call (every call came from the cache)"
        )
    skipped = driver.skipped
    if skipped:
        console.print(f"resumed: {skipped} of {total} units were already in {out}")
    console.print(tally.table())
    trait_table = traits.table()
    if trait_table is not None:
        console.print(trait_table)
    if scenarios.runs:
        console.print(scenarios.table())
        for line in scenarios.errors:
            console.print(f"[yellow]scenario failed:[/yellow] {line}")
    print_costs(console, costs, config)
    ran = total - skipped
    console.print(
        f"{ran} units in {elapsed:.1f}s ({ran / elapsed if elapsed else 0:.2f} units/s); "
        f"{written} results written to {out}"
    )
    if runner.budget_stopped:
        console.print(
            f"[yellow]budget reached[/yellow]: ${config.max_cost_usd} (spent "
            f"${runner.spent_before + costs.total_usd:.6f}); units not started are left "
            "out: run the same command with a larger --max-cost to finish"
        )
    # Errored results already in the output count too unless they were re-run.
    errors = tally.total_errors + (0 if retry_errors else len(driver.errored))
    sys.stdout.flush()
    if not errors:
        return 0
    rate = errors / written if written else 1.0
    console.print(
        f"[yellow]{errors} of {written} results have errors[/yellow] ({rate:.1%}): see the "
        f"`error` column (metadata.error) in {out}; re-run them with the same command "
        "and --retry-errors"
    )
    if rate > max_error_rate:
        console.print(f"exit status 1: more errors than --max-error-rate {max_error_rate:g} allows")
        return 1
    return 0


execute_run = _execute
"""Run ``runner`` (default: every unit of ``benchmark``) into ``out`` with the
progress bar and summary of ``verifleet run``; ``reverify`` shares it."""
