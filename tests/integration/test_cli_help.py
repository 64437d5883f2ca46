"""Every ``--help`` is instant and says what the command does, with an example.

Speed is checked by what ``--help`` imports, not by a clock (the figures are in
``bench/cli_help.py``): building the parser for one command must not load the
heavy libraries other commands need.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from verifleet.orchestrator.cli import COMMANDS, build_parser

pytestmark = pytest.mark.integration

# Imported by running a job or a worker, never needed to print help.
_HEAVY = ("langchain_core", "openai", "celery", "kombu", "pyarrow", "fastapi", "torch", "redis")

_PROBE = """
import json, sys
from verifleet.orchestrator.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\n" + json.dumps(sorted(sys.modules)))
"""


def _modules_after_help(*argv: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    modules: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_imports_no_heavy_library(command: str | None) -> None:
    argv = ["--help"] if command is None else [command, "--help"]
    if command == "llm":
        argv = ["llm", "build", "--help"]
    loaded = _modules_after_help(*argv)
    heavy = sorted(loaded.intersection(_HEAVY))
    assert not heavy, f"verifleet {' '.join(argv)} imported {heavy}"


def test_the_top_level_list_matches_what_the_commands_register() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    registered = {choice.dest: choice.help for choice in sub._choices_actions}
    assert registered == {name: text for name, (_module, text) in COMMANDS.items()}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_a_description_and_an_example(command: str) -> None:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command")
    help_text = sub.choices[command].format_help()
    description = sub.choices[command].description
    assert description and len(description) > 40, f"{command}: no description"
    assert "example" in help_text, f"{command}: no example in --help"
    assert f"verifleet {command}" in help_text, f"{command}: the example does not run it"


def _nested(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, Any]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{path} {name}", sub
                yield from _nested(sub, f"{path} {name}")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_sub_action_has_a_description_and_an_example(command: str) -> None:
    # ``verifleet llm build`` / ``llm serve``: actions under a command have
    # their own --help, which must say as much as a command's.
    sub = next(a for a in build_parser(command)._actions if a.dest == "command")
    for path, parser in _nested(sub.choices[command], f"verifleet {command}"):
        help_text = parser.format_help()
        assert parser.description and len(parser.description) > 40, f"{path}: no description"
        assert "example" in help_text, f"{path}: no example in --help"
        assert path in help_text, f"{path}: the example does not run it"


def test_an_unknown_command_lists_the_commands_and_imports_none() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "verifleet", "frobnicate"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "submit" in proc.stderr


def test_the_sandbox_choices_are_the_sandbox_modes() -> None:
    from verifleet.orchestrator.cli._sandbox import SANDBOX_MODES
    from verifleet.sandbox import SandboxMode

    assert tuple(m.value for m in SandboxMode) == SANDBOX_MODES


def test_the_worker_default_queue_is_the_store_s() -> None:
    from verifleet.orchestrator.cli.worker import DEFAULT_QUEUE
    from verifleet.store import DEFAULT_QUEUE as STORE_QUEUE

    assert DEFAULT_QUEUE == STORE_QUEUE
