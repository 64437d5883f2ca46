"""The ``verifleet`` command line.

Every sub-command lives in its own module and registers itself on the parser;
``main`` turns every deliberate verifleet error into one clear line on stderr and
an exit code, never a traceback.

Only the module of the command being run is imported: the others appear in
``verifleet --help`` through :data:`COMMANDS` (their one-line help), so no command
pays for another's imports (Celery, langchain, the viewer) and every ``--help``
answers at once. A termination signal (SIGTERM, SIGHUP) unwinds like Ctrl-C, so
the commands' cleanup runs: the local model server stops, journals are kept.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
from typing import Any
from types import FrameType

from verifleet._version import __version__

__all__ = ["COMMANDS", "Terminated", "build_parser", "main"]

#: command -> (the module under this package that registers it, its one-line help:
#: the one place it is written, see :class:`_Commands`).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run a verification job in this process (no servers needed)"),
    "submit": ("fleet", "validate a job and enqueue it for the workers"),
    "jobs": ("fleet", "list jobs, newest first"),
    "status": ("fleet", "print a job's progress once, with its rate and ETA"),
    "watch": ("fleet", "show a job's live progress until it ends"),
    "cancel": ("fleet", "stop new work on a job"),
    "resume": ("fleet", "re-enqueue the units without results (--retry-errors: errored ones too)"),
    "delete": ("fleet", "remove a job and all its results from Redis"),
    "results": ("fleet", "stream a job's results into a file"),
    "worker": ("worker", "start a worker on this machine"),
    "flower": ("worker", "start Flower for the fleet (needs --basic-auth or --no-auth)"),
    "llm": ("llm", "set up or serve the bundled local model"),
    "serve": ("serve", "serve POST /verify: rewards for RL rollouts"),
    "reward": ("reward", "score a JSONL file of RL rollouts (locally or on the fleet)"),
    "view": ("view", "look at results in the browser (a local web page)"),
    "report": ("view", "write a self-contained HTML report of results"),
    "reverify": (
        "reverify",
        "judge stored answers again (new judge, template, rubric or config) without "
        "calling the answering models",
    ),
    "cache": ("cache", "the model-call cache: stats or clear"),
    "compare": (
        "compare",
        "paired comparison of two runs (or two models of one run), flips explained",
    ),
    "judges": (
        "compare",
        "agreement between judges and each judge's accuracy against human labels",
    ),
    "export": ("export", "write a results file again (any format) with its human labels"),
}

_EPILOG = """\
examples:
  verifleet run examples/demo/benchmark.yaml --answering local --parsing local --out demo.parquet
  verifleet view demo.parquet
  verifleet submit bench.yaml --answering openai:gpt-4.1-mini --parsing openai:gpt-4.1
  verifleet COMMAND --help       # every command's options, with examples
"""


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM or SIGHUP; unwinds like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    # Once is enough: a second signal during cleanup must not cut the cleanup short.
    signal.signal(signum, signal.SIG_IGN)
    raise Terminated(signum)


def _modules(only: str | None) -> list[str]:
    if only is None or only not in COMMANDS:
        return list(dict.fromkeys(module for module, _help in COMMANDS.values()))
    return [COMMANDS[only][0]]


class _Parser(argparse.ArgumentParser):
    """A parser whose description and epilog keep their line breaks (the help
    texts are laid out by hand); ``add_subparsers`` makes every sub-command's
    parser of the same class, and the commands' action :class:`_Commands`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)


class _Commands(argparse._SubParsersAction):
    """Sub-commands whose one-line help is :data:`COMMANDS`' (the one place it is
    written) unless the registering module gives one."""

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if name in COMMANDS:
            kwargs.setdefault("help", COMMANDS[name][1])
        return super().add_parser(name, **kwargs)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with one sub-command per action.

    Args:
        only: Fully register this command alone (the others are listed with
            their help and no options); None registers every command.
    """
    parser = _Parser(
        prog="verifleet",
        description="Verify LLM answers with templates and rubrics, locally or on a fleet.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"verifleet {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only is not None and only not in COMMANDS:
        only = ""  # an unknown command: list them all, import none
    modules = [] if only == "" else _modules(only)
    for name in modules:
        importlib.import_module(f".{name}", __name__).register(commands)
    registered = set(commands.choices)
    for command in COMMANDS:
        if command not in registered:
            commands.add_parser(command)
    return parser


def _command_of(argv: list[str]) -> str:
    """The sub-command named in ``argv`` ('' for none), without parsing options."""
    for arg in argv:
        if arg == "--":
            return ""
        if not arg.startswith("-"):
            return arg
    return ""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``verifleet`` console script; returns the exit code.

    From the command line, a ``run`` that is done leaves through :func:`_leave`
    instead of returning (see there).
    """
    from_command_line = argv is None
    code = _main(argv)
    if from_command_line and _command_of(sys.argv[1:]) in _LEAVE_AT_ONCE:
        _leave(code)
    return code


#: Commands whose process has nothing left to do once their handler returned.
_LEAVE_AT_ONCE = frozenset({"run"})


def _leave(code: int) -> None:
    """End the process now: run what ``atexit`` holds (the sandbox's executors
    are stopped there, logging flushed, temporary folders removed), flush the
    streams, then ``os._exit`` without the interpreter's teardown, which frees
    every module and object one by one after the summary is printed, while
    the user waits for the prompt. Returns, leaving the interpreter
    to end the process as usual, while a thread that is not a daemon still runs.
    """
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        return
    import atexit
    import contextlib

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe: nothing more can be said there.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _main(argv: list[str] | None) -> int:
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if from_command_line:
        # Before the command's modules are imported: they are what it caches.
        _bytecode_cache()
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _on_signal)
    from verifleet.schemas import VerifleetError

    try:
        code: int = args.handler(args)
    except VerifleetError as exc:
        print(f"verifleet {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        number = exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT)
        print(f"verifleet {args.command}: interrupted", file=sys.stderr)
        return _exit_interrupted(128 + number)
    except Exception as exc:
        import redis

        if not isinstance(exc, redis.RedisError):
            raise
        # Redis lost mid-command (the commands check it once up front): one line, the
        # error names the host, never the URL with its password.
        print(f"verifleet {args.command}: error: Redis: {exc}", file=sys.stderr)
        return 2
    return code


def _bytecode_cache() -> None:
    """Let this process read and write the bytecode of what it imports in the
    executors' bytecode folder when ``PYTHONDONTWRITEBYTECODE`` (or ``-B``)
    keeps Python from caching it beside the sources.

    Without it every command compiles the modules of its path (pydantic,
    pyarrow, httpx, verifleet itself) from source each time: most of a run's
    start-up where the variable is set. The folder is verifleet's own
    (the one the sandbox executors start from; nothing is written beside
    any source) and ``VERIFLEET_SANDBOX_BYTECODE=0`` turns both off. Only the
    console command does this (``main()`` without arguments), never a process
    that calls :func:`main` as a library. A folder that cannot be made leaves
    Python as it was.
    """
    if not sys.dont_write_bytecode or sys.pycache_prefix is not None:
        return  # Python caches bytecode already, where it was told to
    from verifleet.sandbox._bytecode import default_bytecode_dir

    prefix = default_bytecode_dir()
    if prefix is None:
        return
    try:
        os.makedirs(prefix, exist_ok=True)
    except OSError:
        return
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


def _exit_interrupted(code: int) -> int:
    """Leave now when threads are still busy (units in flight, a model call that
    may take minutes): the command's cleanup already ran, and the journal keeps
    every finished unit. Returns ``code`` when nothing else runs."""
    busy = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if not any(not t.daemon for t in busy):
        return code
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)
