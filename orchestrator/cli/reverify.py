"""``verifleet reverify``: judge stored answers again, without calling any
answering model (docs/iterating.md).

RESULTS is a results file (.parquet, .json, .jsonl, .csv) or, with ``--redis``,
a fleet job id. The answers come from it; the benchmark (templates, rubrics)
from ``--benchmark`` (a job's own by default), the configuration from the job's
(a results file's own, from its run manifest; the defaults when it has none)
with ``--config`` fields and the flags over it; the settings that differ from
the run's are printed. ``--stale`` re-judges only the units whose results'
fingerprints differ from what the benchmark and configuration give now
(docs/results.md). A judge that
judged a result before keeps its parse when the template, its system prompt and
the evaluation input are unchanged, and keeps the scores of the LLM rubric
traits it scored: only changed stages ask a model. Each new result names the
stored one it derives from (``metadata.derived_from``). Scenario runs are not
re-verified. Re-running the same command resumes, as ``verifleet run`` does.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._sandbox import add_sandbox_argument
from .config import add_cost_arguments

if TYPE_CHECKING:
    from rich.console import Console

    from verifleet.schemas import Benchmark, VerificationConfig, VerificationResult

__all__ = ["register"]

_EPILOG = """\
examples:
  verifleet reverify results.parquet --benchmark bench.yaml --parsing openai:gpt-4.1 --out judged.parquet
  verifleet reverify results.parquet --benchmark bench-with-new-trait.yaml --config cfg.yaml --out v2.parquet
  verifleet reverify results.parquet --benchmark edited-bench.yaml --stale --out v2.parquet
  verifleet reverify JOB_ID --redis redis://host:6379/0 --benchmark edited.yaml --stale --submit
  verifleet reverify JOB_ID --redis redis://host:6379/0 --parsing http://host:8000/v1#judge --out v2.parquet
  verifleet reverify JOB_ID --redis redis://host:6379/0 --parsing http://host:8000/v1#judge --submit
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``reverify`` sub-command."""
    parser = commands.add_parser(
        "reverify",
        description=__doc__,
        epilog=_EPILOG,
    )
    parser.add_argument("results", help="a results file, or a fleet job id with --redis")
    parser.add_argument("--out", type=Path, help="the new results file (required unless --submit)")
    parser.add_argument(
        "--submit",
        action="store_true",
        help="with a fleet job: re-judge on the fleet's workers, as a new job (its id is "
        "printed; collect it with `verifleet results`)",
    )
    parser.add_argument("--benchmark", type=Path, help="the benchmark (default: the job's)")
    parser.add_argument("--config", type=Path, help="YAML or JSON VerificationConfig fields")
    parser.add_argument("--parsing", nargs="+", metavar="MODEL", help="the judge(s)")
    parser.add_argument(
        "--mode",
        choices=["template_only", "template_and_rubric", "rubric_only"],
        help="evaluation mode",
    )
    parser.add_argument(
        "--stale",
        action="store_true",
        help="re-judge only the units whose fingerprint (question, template, rubric, judge, "
        "settings) differs from the benchmark and configuration given; the others are "
        "copied to --out as they are (with --submit: a fleet job of the questions with a "
        "stale unit; the fresh results stay in the source job)",
    )
    parser.add_argument("--redis", metavar="URL", help="read the job RESULTS from this Redis")
    parser.add_argument("--trust-callables", action="store_true", help="allow pickled callables")
    add_cost_arguments(parser, budget=False)
    add_sandbox_argument(parser)
    parser.set_defaults(handler=_reverify)


def _source(
    args: argparse.Namespace,
) -> tuple[str, list[VerificationResult], Benchmark | None, VerificationConfig | None]:
    """(name, stored results, the job's benchmark or None, the job's config or None).

    Raises:
        ConfigError: RESULTS is neither a file nor (with --redis) a job.
    """
    from verifleet.schemas import Benchmark, ConfigError, VerificationConfig

    path = Path(args.results)
    if path.exists():
        from verifleet.orchestrator import read_manifest, read_results

        manifest = read_manifest(path)
        config = None
        if manifest is not None and isinstance(manifest.get("config"), dict):
            # The run's own settings: re-judging with the defaults instead would
            # silently change what is judged (e.g. drop the rubric).
            config = VerificationConfig.model_validate(manifest["config"])
        return str(path), list(read_results(path)), None, config
    url = args.redis or os.environ.get("VERIFLEET_REDIS_URL")
    if not url:
        raise ConfigError(
            f"{args.results}: no such results file (for a fleet job pass --redis URL)"
        )
    from verifleet.store import RedisTarget, ResultStore

    from .._fleet.job import Job

    RedisTarget.parse(url).check()
    store = ResultStore.from_url(url)
    try:
        benchmark_json, config_json = store.load_spec(args.results)
    except KeyError:
        raise ConfigError(f"{args.results}: no such results file or fleet job") from None
    return (
        f"job:{args.results}",
        # Those drained to Parquet shards too, not only those still in Redis.
        list(Job(args.results, url).iter_results()),
        Benchmark.model_validate_json(benchmark_json),
        VerificationConfig.model_validate_json(config_json),
    )


def _config(args: argparse.Namespace, base: VerificationConfig | None) -> VerificationConfig:
    from verifleet.schemas import ConfigError, ModelConfig, VerificationConfig

    from .config import apply_cost_arguments, read_config_file

    data: dict[str, Any] = base.model_dump() if base is not None else {}
    if args.config:
        data.update(read_config_file(args.config))
    if args.parsing:
        data["parsing_models"] = [ModelConfig.parse(spec) for spec in args.parsing]
    if args.mode:
        data["evaluation_mode"] = args.mode
    if not data.get("parsing_models"):
        raise ConfigError(
            "no parsing model: pass --parsing MODEL or --config with parsing_models "
            "(a results file does not hold the judges' endpoints)"
        )
    if not data.get("answering_models"):
        # A stand-in, never called: each stored unit's answering model is named
        # by its results (ReverifyRunner), whose endpoints a result does not keep.
        data["answering_models"] = [ModelConfig(model_name="stored-answers")]
    apply_cost_arguments(data, args, args.config.parent if args.config else None)
    return VerificationConfig.build(**data)


def changed_settings(base: VerificationConfig | None, config: VerificationConfig) -> list[str]:
    """The top-level configuration fields ``config`` sets differently from
    ``base`` (the run's own), as ``name: old -> new`` lines (models by name)."""
    from verifleet.schemas import VerificationConfig

    # Without the run's settings, compare with the defaults (no models).
    before = (base or VerificationConfig.model_construct(parsing_models=[])).model_dump(mode="json")
    after = config.model_dump(mode="json")
    lines = []
    for name in sorted(after):
        if before.get(name) == after[name]:
            continue
        if name.endswith("_models"):
            shown = [
                ", ".join(m.get("model_name", "?") for m in side or [])
                for side in (before.get(name), after[name])
            ]
            lines.append(f"{name}: [{shown[0]}] -> [{shown[1]}]")
        else:
            lines.append(f"{name}: {before.get(name)!r} -> {after[name]!r}")
    return lines


def _stale_questions(
    benchmark: Benchmark,
    stored: list[VerificationResult],
    config: VerificationConfig,
    console: Console,
) -> Benchmark | None:
    """The benchmark cut to the questions with a stale unit, for a fleet
    re-judging job (its workers take whole questions: every answering model and
    replicate of one); None when nothing is stale. Fresh units of those
    questions are re-judged too and counted in what is printed.
    """
    from .._local.stale import find_stale

    report = find_stale(stored, benchmark, config)
    console.print(f"--stale: {report.summary()}", markup=False)
    stale = {r.metadata.question_id for r in report.stale}
    if not stale:
        console.print("nothing is stale: no job submitted")
        return None
    along = {
        (r.metadata.question_id, r.metadata.answering.canonical_key, r.metadata.replicate)
        for r in report.fresh
        if r.metadata.question_id in stale
    }
    if along:
        console.print(
            f"{len(along)} fresh units share a question with stale ones and are "
            "re-judged with them (the fleet re-judges whole questions)"
        )
    console.print(
        f"the fresh results of the other {len({r.metadata.question_id for r in report.fresh} - stale)}"
        " questions stay in the source job, untouched"
    )
    questions = [q for q in benchmark.questions if q.id in stale]
    return benchmark.model_copy(update={"questions": questions, "scenarios": []})


def _submit(
    args: argparse.Namespace, benchmark: Benchmark, config: VerificationConfig, name: str
) -> int:
    """A new fleet job whose workers re-judge the source job's stored answers.

    Raises:
        ConfigError: RESULTS is not a fleet job.
    """
    from verifleet.schemas import ConfigError
    from verifleet.store import Broker, ResultStore, mask_password

    from .._fleet.submit import submit_job

    if not name.startswith("job:"):
        raise ConfigError("--submit re-judges a fleet job: pass its id and --redis URL")
    url = args.redis or os.environ.get("VERIFLEET_REDIS_URL", "")
    source = name.removeprefix("job:")
    # A broken scenario has no stored run to judge: it is left out.
    benchmark = benchmark.model_copy(update={"broken_scenarios": []})
    config = config.model_copy(update={"reverify_of": source})
    broker = Broker(url)
    try:
        report = submit_job(benchmark, config, store=ResultStore.from_url(url), broker=broker)
    finally:
        broker.close()
    shown = mask_password(url)
    print(f"job {report.job_id}: re-judges {source} on the fleet ({report.units} units)")
    print(f"collect it:  verifleet results {report.job_id} --redis {shown} --out results.parquet")
    return 0


def _reverify(args: argparse.Namespace) -> int:
    from verifleet.schemas import ConfigError, load_benchmark

    from .._local.reverify import ReverifyRunner
    from ._console import make_console
    from ._sandbox import start_sandbox
    from .run import execute_run

    console = make_console(stderr=True)
    name, stored, job_benchmark, job_config = _source(args)
    benchmark: Benchmark | None
    if args.benchmark is not None:
        benchmark = load_benchmark(
            args.benchmark, trust_callables=args.trust_callables, validate_templates=False
        )
    elif job_benchmark is not None:
        benchmark = job_benchmark
    else:
        raise ConfigError(
            f"{name}: a results file does not hold its benchmark: pass --benchmark FILE"
        )
    config = _config(args, job_config)
    if job_config is None:
        console.print(
            f"{name} has no run manifest: judging with the default settings and those given"
        )
    for line in changed_settings(job_config, config):
        console.print(f"setting changed from the run's: {line}", markup=False)
    if args.submit:
        if args.stale:
            benchmark = _stale_questions(benchmark, stored, config, console)
            if benchmark is None:
                return 0
        return _submit(args, benchmark, config, name)
    if args.out is None:
        raise ConfigError("--out FILE is required (or --submit, for a fleet job)")
    start_sandbox(args)
    if Path(args.results).exists():
        from verifleet.results.stats import carry_labels

        # Labels are about the answers, which re-judging keeps: the new file has
        # them too (and its Parquet/CSV label columns are filled from them).
        carried_labels = carry_labels(args.results, args.out)
        if carried_labels:
            console.print(f"{len(carried_labels)} human labels carried over to {args.out}")
    carried: list[VerificationResult] = []
    if args.stale:
        from .._local.stale import find_stale

        report = find_stale(stored, benchmark, config)
        console.print(f"--stale: {report.summary()}", markup=False)
        stored, carried = report.stale, report.fresh
    runner = ReverifyRunner(benchmark, config, stored, source=name)
    if runner.missing_questions:
        console.print(
            f"[yellow]warning:[/yellow] {len(runner.missing_questions)} stored questions are "
            f"not in the benchmark and are left out: {', '.join(sorted(runner.missing_questions)[:10])}"
        )
    if runner.missing_scenarios:
        console.print(
            f"[yellow]warning:[/yellow] {len(runner.missing_scenarios)} stored scenarios are "
            f"not in the benchmark and are left out: {', '.join(sorted(runner.missing_scenarios)[:10])}"
        )
    console.print(
        f"re-verifying {runner.count_units()} stored units and "
        f"{runner.count_scenario_units()} scenario runs of {name} "
        f"({len(stored)} results); no answering model is called"
    )
    return execute_run(benchmark, config, args.out, console, runner=runner, carried=carried)
