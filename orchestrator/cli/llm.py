"""``verifleet llm``: build and serve the bundled local model.

``verifleet llm build`` compiles llama.cpp's ``llama-server`` once from the pinned
source distribution into the user's cache directory (about 10–12 minutes on two
cores) and checks once that it answers a completion on this machine (adding
``--no-repack`` if it crashes without); ``verifleet llm serve`` starts it with SmolLM2-135M-Instruct on 127.0.0.1
and prints the model spec to pass to ``--answering`` / ``--parsing``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``llm`` sub-command group."""
    parser = commands.add_parser(
        "llm",
        help="build or serve the bundled local model",
        description=__doc__,
        epilog="examples:\n  verifleet llm build\n  verifleet llm serve --port 8000   "
        "# then --answering http://127.0.0.1:8000/v1#SmolLM2-135M-Instruct",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="llm_action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="build llama-server (cached; a no-op when built)",
        description="Make the bundled model's llama-server ready in the user's cache\n"
        "directory (a no-op when it is there), check once that it answers a\n"
        "completion on this machine, and print its path and the runtime options\n"
        "it needs.",
        epilog="example:\n  verifleet llm build",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.set_defaults(handler=_build)
    serve = actions.add_parser(
        "serve",
        help="serve the local model until interrupted",
        description="Start llama-server with SmolLM2-135M-Instruct on 127.0.0.1, print\n"
        "its OpenAI-compatible address and the model spec for --answering /\n"
        "--parsing, and serve until interrupted (Ctrl-C, SIGTERM): the server\n"
        "stops with it.",
        epilog="example:\n  verifleet llm serve --port 8000   "
        "# then --answering http://127.0.0.1:8000/v1#SmolLM2-135M-Instruct",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: free)")
    serve.set_defaults(handler=_serve)


def _build(_args: argparse.Namespace) -> int:
    from verifleet.orchestrator._localllm import ensure_llama_server, runtime_args

    binary = ensure_llama_server()
    # The smoke check: one completion, retried with safe options if the binary crashes.
    extra = runtime_args(binary)
    print(f"{binary} (runtime options: {' '.join(extra) or 'none'})")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from verifleet.orchestrator import LocalLLMServer

    # die_with_parent: a SIGKILLed `llm serve` must not leave the server holding its port.
    with LocalLLMServer(port=args.port or None, die_with_parent=True) as server:
        # Flushed: whoever reads this through a pipe (`| tee`, `> log`) needs
        # the address now, not when the server stops.
        print(f"serving {server.model_name} at {server.base_url}", flush=True)
        print(f"model spec: {server.spec}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0
