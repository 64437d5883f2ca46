"""Flags ``run`` and ``submit`` share beyond the config: which questions run
(``--limit``, ``--questions``) and the model preflight (``--no-preflight``).

Kept apart from :mod:`.config` so that building the parser imports nothing heavy.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from verifleet.schemas import Benchmark, VerificationConfig

__all__ = ["add_job_arguments", "preflight", "select"]


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--limit``, ``--questions`` and ``--no-preflight``."""
    group = parser.add_argument_group("selection and checks")
    group.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="run only the first N questions (and first N scenarios), after --questions",
    )
    group.add_argument(
        "--questions",
        metavar="ID,...",
        help="run only these question or scenario ids; shell globs work ('geo-*,q1?'); "
        "a pattern matching nothing is an error",
    )
    group.add_argument(
        "--no-preflight",
        dest="preflight",
        action="store_false",
        help="skip the one test call per model made before any unit runs or is queued",
    )


def select(benchmark: Benchmark, args: argparse.Namespace) -> Benchmark:
    """The benchmark narrowed by ``--questions`` and ``--limit``.

    Raises:
        ConfigError: a pattern matches nothing, or ``--limit`` is below 1.
    """
    from .._selection import parse_question_patterns, select_benchmark

    return select_benchmark(
        benchmark,
        questions=parse_question_patterns(args.questions),
        limit=args.limit,
    )


def preflight(config: VerificationConfig, args: argparse.Namespace, console: Console) -> None:
    """One real call per model unless ``--no-preflight``.

    Raises:
        PreflightError: naming every model that did not answer.
    """
    if not args.preflight:
        return
    from .._preflight import preflight_models

    checked = preflight_models(config)
    if checked:
        console.print(f"preflight: {len(checked)} model(s) answered a test call")
