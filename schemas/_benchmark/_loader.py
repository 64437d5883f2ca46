"""``load_benchmark`` and ``dump_benchmark``: files in, :class:`Benchmark` out.

Loading is all-or-nothing and reports everything at once: every malformed
question, every template that fails validation (when templates are validated),
every rubric clash ends up in one :class:`BenchmarkLoadError` that names the file
and each question, in the words of :func:`check_benchmark`, the check every path
shares. A scenario that fails validation does not stop the load: it is kept in
``Benchmark.broken_scenarios`` and fails alone when the job runs. Pickled
callable traits are refused unless the caller trusts them, because unpickling
runs whatever code the file's author put there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from .._checkers import CodeChecker
from .._errors import (
    BenchmarkLoadError,
    ExportError,
    UntrustedCodeError,
)
from ._benchmark import Benchmark
from ._checkpoint import Problem, benchmark_from_checkpoint
from ._own_format import benchmark_from_document, render_document
from ._validation import check_benchmark

__all__ = ["dump_benchmark", "load_benchmark"]

_YAML_SUFFIXES = (".yaml", ".yml")


def _fail(path: str, problems: list[Problem]) -> BenchmarkLoadError:
    """One error for all problems; it carries the question id when only one
    question is at fault."""
    question_ids = {qid for qid, _ in problems}
    if len(problems) == 1:
        qid, problem = problems[0]
        return BenchmarkLoadError(problem, path=path, question_id=qid)
    lines = [f"question {qid}: {p}" if qid else p for qid, p in problems]
    single = next(iter(question_ids)) if len(question_ids) == 1 else None
    summary = f"{len(problems)} problems:\n  " + "\n  ".join(lines)
    return BenchmarkLoadError(summary, path=path, question_id=single)


def _parse_json(text: str, path: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkLoadError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}", path=path
        ) from None


def _parse_yaml(text: str, path: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise BenchmarkLoadError(f"not valid YAML{where}: {problem}", path=path) from None


def _read(path: Path) -> tuple[object, bool]:
    """Parsed content and whether it is a JSON-LD checkpoint."""
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BenchmarkLoadError("file not found", path=shown) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchmarkLoadError(f"cannot read the file: {exc}", path=shown) from None
    suffix = path.suffix.lower()
    if suffix in _YAML_SUFFIXES:
        return _parse_yaml(text, shown), False
    if suffix in (".json", ".jsonld"):
        data = _parse_json(text, shown)
        return data, suffix == ".jsonld" or (isinstance(data, dict) and "@context" in data)
    raise BenchmarkLoadError(
        f"unknown benchmark file type {suffix or '(none)'!r}: use .yaml, .yml, .json or .jsonld",
        path=shown,
    )


def _grant_trust(benchmark: Benchmark, path: str, trust: bool) -> None:
    """Grant or refuse trust to pickled callables (checking them is
    :func:`check_benchmark`'s, with every other check)."""
    refused: list[str] = []
    for qid, rubric in benchmark.all_rubrics():
        for trait in rubric.callable_traits:
            if not trait.has_code:
                continue  # loads like the original's empty code; fails when evaluated
            # Trust comes from the caller only, never from the file.
            trait.trusted = trust and trait.is_pickled
            if trait.is_pickled and not trust:
                refused.append(f"trait {trait.name!r} ({f'question {qid}' if qid else 'global'})")
    if refused:
        raise UntrustedCodeError(
            f"{path}: callable rubric traits stored as pickled code: {', '.join(refused)}. "
            "Unpickling them runs arbitrary code. If you trust this file's author, load it "
            "with trust_callables=True (CLI: --trust-callables)."
        )


def _load_problems(
    benchmark: Benchmark, *, templates: bool, checker: CodeChecker | None
) -> list[Problem]:
    """What stops the file from loading, in :func:`check_benchmark`'s words: every
    problem but a scenario that failed validation (it fails alone when the job
    runs) and an empty benchmark (a file may hold no questions)."""
    problems: list[Problem] = []
    for found in check_benchmark(benchmark, templates=templates, checker=checker).problems:
        if found.kind in ("scenario", "empty"):
            continue
        qid = found.question_id
        prefix = f"question {qid}: "
        # _fail names the question itself: keep the message without its prefix.
        message = found.message.removeprefix(prefix) if qid else found.message
        problems.append((qid, message))
    return problems


def load_benchmark(
    path: str | os.PathLike[str],
    *,
    trust_callables: bool = False,
    validate_templates: bool = True,
    checker: CodeChecker | None = None,
) -> Benchmark:
    """Load a benchmark from our YAML/JSON format or a JSON-LD checkpoint.

    ``.yaml``/``.yml`` and ``.json`` files are our format, except that a JSON file
    whose top level has ``@context`` is a checkpoint, like any ``.jsonld`` file.

    Args:
        path: The file.
        trust_callables: Allow callable traits stored as pickled code (unpickling
            runs arbitrary code: only for files from authors you trust).
        validate_templates: Compile and check every answer template (the default).
        checker: Where template and trait code runs for the checks; the
            sandbox's executors when None (never this process).

    Returns:
        The benchmark, every template valid and every question's rubrics mergeable.

    Raises:
        BenchmarkLoadError: the file is missing, unreadable or malformed, or
            templates, callable traits or rubrics are invalid. All problems are
            listed, each with its question id.
        UntrustedCodeError: pickled callable traits without ``trust_callables``;
            the message names each trait and its question.
    """
    file = Path(path)
    shown = str(file)
    data, is_checkpoint = _read(file)
    build = benchmark_from_checkpoint if is_checkpoint else benchmark_from_document
    benchmark, problems = build(data, default_name=file.stem)
    if benchmark is None:
        raise _fail(shown, problems)
    _grant_trust(benchmark, shown, trust_callables)
    problems = _load_problems(benchmark, templates=validate_templates, checker=checker)
    if problems:
        raise _fail(shown, problems)
    return benchmark


def dump_benchmark(benchmark: Benchmark, path: str | os.PathLike[str]) -> None:
    """Write ``benchmark`` in our format: YAML for ``.yaml``/``.yml``, JSON for
    ``.json``. The file is written whole or not at all.

    Raises:
        ExportError: another extension (``.jsonld`` is read-only here), or the file
            cannot be written; the message starts with the path.
    """
    file = Path(path)
    if file.suffix.lower() not in (*_YAML_SUFFIXES, ".json"):
        raise ExportError(f"{file}: benchmarks are written as .yaml, .yml or .json")
    text = render_document(benchmark, file)
    partial = file.with_name(f".{file.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(file)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ExportError(f"{file}: cannot write the file: {exc}") from None
