"""verifleet.reward.serve — the reward service: ``POST /verify``, ``POST /verify/batch``,
OpenRLHF's ``POST /get_reward``, NeMo Gym's routes, ``GET /health`` and ``GET /ready``.

:func:`create_app` builds the service for a benchmark and its judges,
:func:`service_for` for a scorer already built (:func:`~verifleet.reward.build_scorer`);
:func:`run_server` runs it, in one process or ``--workers N`` (:func:`worker_app`).
The CLI (``verifleet serve``) parses the flags into a :class:`ServerPlan` and prints.

The names below are loaded on first use: ``verifleet serve --help`` reads the
defaults without importing FastAPI or the scoring core.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._access import parse_networks
    from ._app import HealthResponse, RewardService, VerifyResponse, create_app, service_for
    from ._defaults import (
        DEFAULT_MAX_BATCH,
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_INFLIGHT,
        DEFAULT_REQUEST_TIMEOUT,
        SERVED_FRESH_STATE,
    )
    from ._health import HealthListener
    from ._heap import settle_heap
    from ._protocol import CoalescingHttpToolsProtocol
    from ._routes import FAILURE_STATUS, HEALTH_PATH, READY_PATH, InfraErrors
    from ._server import (
        SERVE_STATE_ENV,
        WORKER_APP,
        ServerPlan,
        build_app,
        run_server,
        worker_app,
    )

__all__ = [
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_REQUEST_TIMEOUT",
    "FAILURE_STATUS",
    "HEALTH_PATH",
    "READY_PATH",
    "SERVED_FRESH_STATE",
    "SERVE_STATE_ENV",
    "WORKER_APP",
    "CoalescingHttpToolsProtocol",
    "HealthListener",
    "HealthResponse",
    "InfraErrors",
    "RewardService",
    "ServerPlan",
    "VerifyResponse",
    "build_app",
    "create_app",
    "parse_networks",
    "run_server",
    "service_for",
    "settle_heap",
    "worker_app",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: `verifleet serve --help` reads the defaults without FastAPI.
__getattr__, __dir__ = _lazy.exports(__name__)
