"""verifleet's own benchmark file format (YAML or JSON); see
``examples/benchmark-format.md``.

The file is the :class:`Benchmark` model written out, plus an optional ``format``
marker. Each question may give ``question`` or ``text``; ``id`` defaults to the
MD5 of the text. Rubrics may list their traits by type (``llm_traits``, ...) or in
one ``traits`` list whose entries carry ``trait_type``.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import ValidationError

from .._identity import md5_hex
from .._scenario import BrokenScenario, ScenarioDefinition
from ._benchmark import Benchmark
from ._checkpoint import Problem
from ._ratings import error_message, validation_summary

__all__ = ["FORMAT_MARKER", "benchmark_from_document", "render_document"]

FORMAT_MARKER = "verifleet-benchmark/1"


def _question_label(raw_questions: object, index: int) -> str:
    """How an error names question ``index``: its id, the MD5 of its text, or its
    position when neither is readable."""
    if isinstance(raw_questions, list) and 0 <= index < len(raw_questions):
        raw = raw_questions[index]
        if isinstance(raw, dict):
            if isinstance(raw.get("id"), str) and raw["id"]:
                return str(raw["id"])
            text = raw.get("text", raw.get("question"))
            if isinstance(text, str) and text:
                return md5_hex(text)
    return f"#{index + 1}"


def _scenario_label(raw_scenarios: object, index: int) -> str:
    """How an error names scenario ``index``: its id, else its position."""
    if isinstance(raw_scenarios, list) and 0 <= index < len(raw_scenarios):
        raw = raw_scenarios[index]
        if isinstance(raw, dict):
            name = raw.get("id", raw.get("name"))
            if isinstance(name, str) and name:
                return name
    return f"#{index + 1}"


def _problems_from(
    exc: ValidationError, raw_questions: object, raw_scenarios: object
) -> list[Problem]:
    problems: list[Problem] = []
    for error in exc.errors():
        loc = list(error["loc"])
        qid: str | None = None
        prefix = ""
        if len(loc) >= 2 and loc[0] == "questions" and isinstance(loc[1], int):
            qid = _question_label(raw_questions, loc[1])
            loc = loc[2:]
        elif len(loc) >= 2 and loc[0] == "scenarios" and isinstance(loc[1], int):
            prefix = f"scenario {_scenario_label(raw_scenarios, loc[1])}: "
            loc = loc[2:]
        where = ".".join(str(p) for p in loc)
        message = error_message(error)
        problems.append((qid, prefix + (f"{where}: {message}" if where else message)))
    return problems


def benchmark_from_document(
    data: object, *, default_name: str
) -> tuple[Benchmark | None, list[Problem]]:
    """Build a benchmark from a parsed own-format document.

    Returns:
        The benchmark (``None`` when anything is wrong) and every problem found,
        each with the id of the question it concerns (``None`` for file-level ones).
    """
    if not isinstance(data, dict):
        return None, [(None, "the file must hold a mapping with 'name' and 'questions'")]
    data = dict(data)
    marker = data.pop("format", FORMAT_MARKER)
    if marker != FORMAT_MARKER:
        return None, [(None, f"format {marker!r} is not {FORMAT_MARKER!r}")]
    data.setdefault("name", default_name)
    questions = data.get("questions")
    if questions is not None and not isinstance(questions, list):
        return None, [(None, "'questions' must be a list")]
    raw_scenarios = data.get("scenarios")
    if isinstance(raw_scenarios, list):
        data["scenarios"], broken = _split_scenarios(raw_scenarios)
        # Kept beside the others: each fails alone when the job runs.
        data["broken_scenarios"] = [*(data.get("broken_scenarios") or []), *broken]
    try:
        return Benchmark.model_validate(data), []
    except ValidationError as exc:
        return None, _problems_from(exc, questions, data.get("scenarios"))


def _split_scenarios(raw: list[object]) -> tuple[list[object], list[BrokenScenario]]:
    """The scenarios that validate (as given) and those that do not, each kept
    with its problem so that it fails alone when the job runs."""
    valid: list[object] = []
    broken: list[BrokenScenario] = []
    for index, scenario in enumerate(raw):
        try:
            ScenarioDefinition.model_validate(scenario)
        except ValidationError as exc:
            broken.append(
                BrokenScenario.from_error(_scenario_label(raw, index), validation_summary(exc))
            )
            continue
        valid.append(scenario)
    return valid, broken


class _Dumper(yaml.SafeDumper):
    """Writes multi-line text (templates, callable sources) as literal blocks."""


_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    # PyYAML writes NEL and the Unicode line separators raw in plain and block
    # scalars and reads them back as line breaks; only double quotes escape them.
    if any(c in value for c in _UNICODE_BREAKS):
        style: str | None = '"'
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def render_document(benchmark: Benchmark, path: Path) -> str:
    """The own-format text of ``benchmark``: YAML for ``.yaml``/``.yml``, else JSON.

    Fields left at their defaults are omitted; reading the text back gives an
    equal benchmark (callable traits come back untrusted: trust is granted at load).
    """
    document: dict[str, object] = {"format": FORMAT_MARKER}
    document.update(benchmark.model_dump(mode="json", exclude_defaults=True))
    if path.suffix.lower() in (".yaml", ".yml"):
        return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
