"""verifleet.reward.serve — the reward service: ``POST /verify``, ``POST /verify/batch``,
OpenRLHF's ``POST /get_reward``, NeMo Gym's routes, ``GET /health`` and ``GET /ready``.

:func:`create_app` builds the service for a benchmark and its judges,
:func:`service_for` for a scorer already built (:func:`~verifleet.reward.build_scorer`).
The CLI (``verifleet serve``) parses the flags and runs uvicorn.

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
    )
    from ._health import HealthListener
    from ._heap import settle_heap
    from ._protocol import CoalescingHttpToolsProtocol
    from ._routes import FAILURE_STATUS, HEALTH_PATH, READY_PATH, InfraErrors

# The submodules a name of __all__ is looked for in, cheapest first.
_LAZY = (
    "._defaults",
    "._access",
    "._heap",
    "._health",
    "._protocol",
    "._routes",
    "._app",
)

__all__ = [
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_INFLIGHT",
    "DEFAULT_REQUEST_TIMEOUT",
    "FAILURE_STATUS",
    "HEALTH_PATH",
    "READY_PATH",
    "CoalescingHttpToolsProtocol",
    "HealthListener",
    "HealthResponse",
    "InfraErrors",
    "RewardService",
    "VerifyResponse",
    "create_app",
    "parse_networks",
    "service_for",
    "settle_heap",
]


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
