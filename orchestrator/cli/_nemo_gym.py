"""``verifleet serve`` for NeMo Gym: its flags (``--allow-net``, ``--max-queued``)
and ``--nemo-gym-dir DIR``, which writes a NeMo Gym server directory that makes
``gym env start`` (``ng_run``) launch ``verifleet serve`` for the benchmark on the
host and port NeMo Gym assigns.

The directory (``DIR/resources_servers/verifleet``) holds what NeMo Gym's launcher
looks for: ``requirements.txt`` (its marker of a server directory), the entrypoint
``app.py`` and ``configs/verifleet.yaml``. NeMo Gym runs ``app.py`` with the
interpreter of that server's venv and its merged config in
``NEMO_GYM_CONFIG_DICT``; ``app.py`` (standard library and PyYAML, both in any
NeMo Gym venv) reads its own server's ``host`` and ``port`` there and replaces
itself with ``verifleet serve BENCHMARK --host HOST --port PORT`` plus the flags
given when the directory was written, so NeMo Gym's signals reach the server.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

__all__ = ["SERVER_NAME", "add_nemo_gym_arguments", "write_nemo_gym_dir"]

#: The resources server's name in NeMo Gym's config (its directory's too).
SERVER_NAME = "verifleet"

#: Flags ``--nemo-gym-dir`` does not hand on: NeMo Gym assigns the address, and
#: the directory is written once.
_NOT_HANDED_ON = {"--host", "--port", "--nemo-gym-dir", "--workers"}

_APP = '''\
"""NeMo Gym entrypoint written by `verifleet serve --nemo-gym-dir`: runs
`verifleet serve` for this server's host and port (do not edit: write it again)."""

import os
import signal
import sys

import yaml

COMMAND = {command}
BENCHMARK = {benchmark}
FLAGS = {flags}


def main() -> None:
    config = yaml.safe_load(os.environ["NEMO_GYM_CONFIG_DICT"])
    name = os.environ["NEMO_GYM_CONFIG_PATH"]
    server = next(iter(config[name]["resources_servers"].values()))
    host, port = str(server["host"]), str(server["port"])
    argv = [*COMMAND, "serve", BENCHMARK, "--host", host, "--port", port, *FLAGS]
    print("starting:", " ".join(argv), file=sys.stderr, flush=True)
    # NeMo Gym stops its servers with SIGINT, but a server it started in the
    # background of a shell inherits SIGINT ignored, and exec keeps that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
'''

_CONFIG = """\
# Written by `verifleet serve --nemo-gym-dir` for {benchmark}.
# Start it from the directory that holds resources_servers/ (NeMo Gym looks for
# server directories under the current directory):
#   gym env start --config resources_servers/{name}/configs/{name}.yaml --config <your model config>
{name}:
  resources_servers:
    {name}:
      entrypoint: app.py
      domain: {domain}
      verified: false
      description: verifleet serve for {benchmark_name}
{name}_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: {name}
      model_server:
        type: responses_api_models
        name: policy_model
{name}_environment_server:
  environment_servers:
    legacy_agent:
      entrypoint: app.py
      agent_server:
        type: responses_api_agents
        name: {name}_simple_agent
"""


def add_nemo_gym_arguments(parser: argparse.ArgumentParser) -> None:
    """``serve``'s NeMo Gym flags."""
    parser.add_argument(
        "--allow-net",
        action="append",
        default=[],
        metavar="CIDR",
        help="client network whose requests need no bearer token (repeatable; e.g. "
        "10.0.0.0/8 for NeMo Gym agents, which send none); with no token, other clients "
        "get 403; lets a non-loopback --host start without a token",
    )
    parser.add_argument(
        "--max-queued",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="requests beyond --max-inflight that wait (first come, first served, up to "
        "--request-timeout) for a place instead of getting 503 at once, for clients that do "
        "not retry 503 (NeMo Gym); beyond N they get 503 (default 0)",
    )
    parser.add_argument(
        "--inline-executors",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="sandbox executors of their own for inline questions (a request's own "
        "answer_template), so that slow inline templates never hold the executors the "
        "benchmark's questions need (default: as many as the benchmark's, "
        "VERIFLEET_SANDBOX_POOL or 2; 0: share them)",
    )
    parser.add_argument(
        "--fair-share",
        choices=["address", "connection", "forwarded-for", "off"],
        default="address",
        help="how /verify tells callers apart to share the in-flight places (--max-inflight) "
        "and the sandbox executors fairly: each active caller holds at most "
        "max(1, places / active callers), a caller alone all of them, and a freed place goes "
        "to the waiting callers in turn. 'address': the client's IP address; 'connection': "
        "its address and port; 'forwarded-for': the last X-Forwarded-For address (only "
        "behind a reverse proxy that sets it); 'off': first come, first served "
        "(default address)",
    )
    parser.add_argument(
        "--nemo-gym-dir",
        type=Path,
        metavar="DIR",
        help="write a NeMo Gym server directory for this benchmark and these flags under "
        "DIR/resources_servers/verifleet and exit: `gym env start` run from DIR then launches "
        "this server on the host and port NeMo Gym assigns (docs/reward.md)",
    )
    parser.add_argument(
        "--nemo-gym-domain",
        default="knowledge",
        metavar="DOMAIN",
        help="the server's NeMo Gym domain in the written config (default knowledge)",
    )


def _non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{raw}: must be 0 or more")
    return value


def _handed_on(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The flags of ``args`` that differ from ``parser``'s defaults, as a command
    line, without those NeMo Gym decides or that only make sense here. Paths
    are made absolute: the server starts in another directory."""
    out: list[str] = []
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "token"):
            continue  # the token travels in the environment, never in a file
        flag = action.option_strings[-1]
        value = getattr(args, action.dest, action.default)
        if flag in _NOT_HANDED_ON or flag == "--nemo-gym-domain" or value == action.default:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            out.append(flag)
            continue
        values = value if isinstance(value, list) else [value]
        values = [str(v.resolve()) if isinstance(v, Path) else str(v) for v in values]
        if isinstance(action, argparse._AppendAction):
            for item in values:
                out += [flag, item]
        else:
            out += [flag, *values]
    return out


def write_nemo_gym_dir(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path:
    """Write the NeMo Gym server directory for ``args`` (``serve``'s flags).

    Args:
        parser: ``serve``'s parser: the flags that differ from its defaults are
            handed on to the launched server (but ``--host``, ``--port``,
            ``--workers``, the token, which it reads from
            ``VERIFLEET_SERVE_TOKEN``, and the NeMo Gym directory flags).
        args: The parsed ``serve`` flags (``nemo_gym_dir``, ``benchmark``).

    Returns:
        The server directory written.

    Raises:
        ConfigError: the benchmark file does not exist.
        OSError: the directory cannot be written.
    """
    from verifleet.errors import ConfigError

    benchmark = Path(args.benchmark).resolve()
    if not benchmark.is_file():
        raise ConfigError(f"--nemo-gym-dir: benchmark file {args.benchmark} does not exist")
    flags = _handed_on(parser, args)
    command = [sys.executable, "-m", "verifleet"]
    server = Path(args.nemo_gym_dir) / "resources_servers" / SERVER_NAME
    (server / "configs").mkdir(parents=True, exist_ok=True)
    (server / "app.py").write_text(
        _APP.format(
            command=json.dumps(command),
            benchmark=json.dumps(str(benchmark)),
            flags=json.dumps(flags),
        )
    )
    (server / "requirements.txt").write_text(
        "# verifleet's entrypoint needs only the standard library and PyYAML (NeMo Gym has both);\n"
        "# verifleet itself runs from " + shlex.quote(sys.executable) + "\n"
    )
    config: dict[str, object] = {
        "name": SERVER_NAME,
        "benchmark": benchmark,
        "benchmark_name": benchmark.stem,
        "domain": args.nemo_gym_domain,
    }
    (server / "configs" / f"{SERVER_NAME}.yaml").write_text(_CONFIG.format(**config))
    return server
