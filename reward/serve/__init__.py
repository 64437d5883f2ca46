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
from typing import Any

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._access import parse_networks
    from ._app import (
        FAILURE_STATUS,
        HEALTH_PATH,
        READY_PATH,
        HealthResponse,
        InfraErrors,
        RewardService,
        VerifyResponse,
        create_app,
        service_for,
    )
    from ._defaults import (
        DEFAULT_MAX_BATCH,
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_INFLIGHT,
        DEFAULT_REQUEST_TIMEOUT,
    )
    from ._health import HealthListener
    from ._heap import settle_heap
    from ._protocol import CoalescingHttpToolsProtocol

# name -> the submodule that defines it
_LAZY: dict[str, str] = {
    "parse_networks": "._access",
    "FAILURE_STATUS": "._app",
    "HEALTH_PATH": "._app",
    "READY_PATH": "._app",
    "HealthResponse": "._app",
    "InfraErrors": "._app",
    "RewardService": "._app",
    "VerifyResponse": "._app",
    "create_app": "._app",
    "service_for": "._app",
    "DEFAULT_MAX_BATCH": "._defaults",
    "DEFAULT_MAX_BODY_BYTES": "._defaults",
    "DEFAULT_MAX_INFLIGHT": "._defaults",
    "DEFAULT_REQUEST_TIMEOUT": "._defaults",
    "HealthListener": "._health",
    "settle_heap": "._heap",
    "CoalescingHttpToolsProtocol": "._protocol",
}

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


def __getattr__(name: str) -> Any:
    return _lazy.load(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return _lazy.names(__name__, _LAZY)
