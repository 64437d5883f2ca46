"""``verifleet serve``: the reward service (``POST /verify``) for one benchmark.

Reinforcement-learning rollout collectors send each finished rollout to
``POST /verify`` and get back the rollout with its ``reward`` (0.0-1.0) and the
full verification result. The response is verified as given: no answer is
generated. ``--reward-config`` chooses binary, continuous or hybrid rewards (see
docs/reward.md); ``--redis`` shares the judge-call cache between service
replicas so every replica gives a response the same reward, and the judges'
endpoint limits (the fleet's call gate).

Beyond this machine, set ``VERIFLEET_SERVE_TOKEN`` (every route but ``GET /health``
and ``GET /ready`` then needs ``Authorization: Bearer <token>``) and put a TLS
reverse proxy in front: the server refuses a non-loopback ``--host`` without a
token unless ``--insecure-no-auth`` is given, and answers only requests addressed
to localhost, an IP address or an ``--allowed-host`` name (DNS rebinding). Bodies
over ``--max-body-bytes`` get 413, requests still scoring after
``--request-timeout`` seconds get 504, requests beyond ``--max-inflight`` get 503
with ``Retry-After``. A request that could not be verified for an infrastructure
reason gets no reward (``--infra-errors``). ``--workers N`` runs N server
processes on one port (share their judge cache and limits with ``--redis``);
``--health-port`` answers ``/health`` and ``/ready`` on a port of their own.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from verifleet.errors import ConfigError

# The service's package loads its names on first use: the defaults, not FastAPI.
from verifleet.reward.serve import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_REQUEST_TIMEOUT,
)
from verifleet.web import is_loopback

from ._nemo_gym import add_nemo_gym_arguments, write_nemo_gym_dir
from ._reward_args import add_reward_arguments, checked_scorer, reward_recipe
from ._sandbox import start_sandbox

if TYPE_CHECKING:
    from verifleet.reward import ScorerRecipe
    from verifleet.reward.serve import ServerPlan

# The reward stack, the schemas and the app are imported by the functions that use
# them: `verifleet serve --help` must not pay for them.

__all__ = ["TOKEN_ENV", "check_exposure", "register", "server_plan"]

#: The environment variable holding the bearer token of ``verifleet serve``.
TOKEN_ENV = "VERIFLEET_SERVE_TOKEN"

_EPILOG = """\
examples:
  verifleet serve bench.yaml                      # the bundled local judge
  verifleet serve bench.yaml --parsing openai:gpt-4.1-mini --port 8080
  verifleet serve bench.yaml --parsing http://127.0.0.1:8000/v1#judge \\
      --reward-config reward.yaml --redis redis://:PASSWORD@127.0.0.1:6379/0

  curl -s localhost:8080/verify -H 'content-type: application/json' \\
      -d '{"question_id": "q1", "response": "The capital is Paris."}'

  # beyond this machine: a bearer token, and TLS from a reverse proxy (docs/reward.md)
  export VERIFLEET_SERVE_TOKEN=$(openssl rand -hex 32)
  verifleet serve bench.yaml --host 127.0.0.1 --port 8080   # the proxy terminates TLS
  curl -s https://reward.example.org/verify -H "authorization: Bearer $VERIFLEET_SERVE_TOKEN" ...
"""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` sub-command."""
    parser = commands.add_parser(
        "serve",
        description=__doc__,
        epilog=_EPILOG,
    )
    parser.add_argument("benchmark", type=Path, help="benchmark file (.yaml, .json or .jsonld)")
    add_reward_arguments(parser)
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); any other than a loopback address "
        "needs --token (or --insecure-no-auth)",
    )
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="share the judge-call cache and the judges' endpoint limits through Redis "
        "(redis://:PASSWORD@host:port/db, or rediss:// for TLS)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV) or None,
        help=f"bearer token every request but GET /health must send (default: ${TOKEN_ENV}; "
        "prefer the variable: command lines are visible to other local users)",
    )
    parser.add_argument(
        "--tokens-file",
        type=Path,
        metavar="FILE",
        help="bearer tokens, one per line, one per tenant: any of them is accepted (with "
        "--token's), and each is a caller of its own for --fair-share",
    )
    parser.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow binding a non-loopback address without a token (anyone who reaches the "
        "port can run verifications)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_BODY_BYTES,
        help=f"larger requests get 413 (default {DEFAULT_MAX_BODY_BYTES})",
    )
    parser.add_argument(
        "--request-timeout",
        type=_positive_float,
        default=DEFAULT_REQUEST_TIMEOUT,
        metavar="SECONDS",
        help="a /verify still scoring after this long gets 504 and is cancelled "
        f"(default {DEFAULT_REQUEST_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-inflight",
        type=_positive_int,
        default=DEFAULT_MAX_INFLIGHT,
        metavar="N",
        help="rollouts scored at once per process; more get 503 with Retry-After at once "
        f"(default {DEFAULT_MAX_INFLIGHT})",
    )
    parser.add_argument(
        "--health-port",
        type=_positive_int,
        default=None,
        metavar="PORT",
        help="also answer GET /health and /ready on this port, from a thread of their own: "
        "within milliseconds even while thousands of connections wait on the main port",
    )
    parser.add_argument(
        "--max-batch",
        type=_positive_int,
        default=DEFAULT_MAX_BATCH,
        metavar="N",
        help=f"rollouts one POST /verify/batch may carry (default {DEFAULT_MAX_BATCH})",
    )
    parser.add_argument(
        "--infra-errors",
        choices=["status", "null", "failsafe"],
        default="status",
        help="how /verify answers a request that could not be verified for an "
        "infrastructure reason (judge unreachable, executor failure, deadline): 'status' "
        "(502/503/504) or 'null' (200), both with reward: null and the failure; or "
        "'failsafe' (200, NeMo Gym's judge-failure shape: reward 0.0, mask_sample: true, "
        "failure_kind, failure_reason) (default status)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients address the server by (e.g. a reverse proxy's public "
        "name), besides localhost and IP addresses; repeatable; '*' accepts any "
        "(requests for other names get 403: DNS rebinding)",
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="server processes sharing the port (default 1); give them --redis so they "
        "share the judge-call cache and the judges' endpoint limits",
    )
    add_nemo_gym_arguments(parser)
    global _PARSER
    _PARSER = parser
    parser.set_defaults(handler=_serve)


#: ``serve``'s parser (``--nemo-gym-dir`` hands on the flags that differ from it).
_PARSER: argparse.ArgumentParser | None = None


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{raw}: must be a positive integer")
    return value


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{raw}: must be a positive number")
    return value


def check_exposure(
    host: str, token: str | None, *, insecure_no_auth: bool, allow_net: bool = False
) -> None:
    """Refuse to serve an open service beyond this machine.

    Raises:
        ConfigError: ``host`` is not a loopback address, neither a token nor an
            allow-list of client networks (``allow_net``) is set and
            ``insecure_no_auth`` is False; or the token is empty.
    """
    if token is not None and not token.strip():
        raise ConfigError(f"--token / {TOKEN_ENV} is empty")
    if token is None and not allow_net and not insecure_no_auth and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve on {host} without authentication: anyone who reaches it "
            f"could run verifications. Set {TOKEN_ENV} (or --token) to require a bearer "
            "token, --allow-net CIDR to admit only the clients' networks, bind 127.0.0.1 "
            "behind a TLS reverse proxy, or pass --insecure-no-auth"
        )


def _tokens(args: argparse.Namespace) -> list[str]:
    """``--token`` and the lines of ``--tokens-file`` (blank lines and ``#``
    comments skipped).

    Raises:
        ConfigError: the file cannot be read or holds no token.
    """
    tokens = [args.token] if args.token is not None else []
    path = getattr(args, "tokens_file", None)
    if path is not None:
        try:
            lines = Path(path).read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--tokens-file {path}: cannot read it ({exc})") from None
        found = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        if not found:
            raise ConfigError(f"--tokens-file {path}: no token in it")
        tokens += found
    return tokens


def server_plan(args: argparse.Namespace, recipe: ScorerRecipe, tokens: list[str]) -> ServerPlan:
    """The flags as the plan the server processes run (``tokens``: :func:`_tokens`)."""
    from verifleet.reward.serve import ServerPlan

    service = {
        "max_body_bytes": args.max_body_bytes,
        "token": tokens,
        "request_timeout": args.request_timeout,
        "max_inflight": args.max_inflight,
        "max_batch": args.max_batch,
        "infra_errors": args.infra_errors,
        "allowed_hosts": args.allowed_host,
        "allow_net": args.allow_net,
        "max_queued": args.max_queued,
        "fair_share": getattr(args, "fair_share", "address"),
    }
    return ServerPlan(
        scorer=recipe,
        service=service,
        host=args.host,
        port=args.port,
        health_port=getattr(args, "health_port", None),
        sandbox=getattr(args, "sandbox", None),
        workers=args.workers,
    )


def _serve(args: argparse.Namespace) -> int:
    from verifleet.reward.serve import SERVED_FRESH_STATE, parse_networks, run_server

    if args.nemo_gym_dir is not None:
        assert _PARSER is not None
        server = write_nemo_gym_dir(_PARSER, args)
        print(f"wrote the NeMo Gym server directory {server} (docs/reward.md, NeMo Gym)")
        return 0
    networks = parse_networks(args.allow_net)  # a bad CIDR fails here, not in the app
    tokens = _tokens(args)  # an unreadable or empty --tokens-file fails here
    check_exposure(
        args.host,
        tokens[0] if tokens else None,
        insecure_no_auth=args.insecure_no_auth,
        allow_net=bool(networks),
    )
    start_sandbox(args, fresh_default=SERVED_FRESH_STATE)
    with contextlib.ExitStack() as stack:
        recipe, benchmark = reward_recipe(
            args, stack, redis_url=args.redis, shared_limits=args.request_timeout
        )
        scorer = checked_scorer(recipe, benchmark)
        reward = scorer.reward_config
        auth = "bearer token required" if tokens else "NO authentication"
        if args.allow_net:
            auth += ", none from " + ", ".join(args.allow_net)
        processes = f", {args.workers} processes" if args.workers > 1 else ""
        print(
            f"verifleet serve: {benchmark.name} ({len(benchmark.questions)} questions, "
            f"{reward.mode} reward) on http://{args.host}:{args.port}/verify ({auth}{processes})",
            flush=True,
        )
        run_server(server_plan(args, recipe, tokens), scorer)
    return 0
