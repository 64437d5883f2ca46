"""Running the reward service: one process, or ``--workers N`` processes on one port.

A :class:`ServerPlan` is what a server process needs: the scorer's recipe, the
service's options and where to listen. :func:`run_server` runs uvicorn with it;
each ``--workers`` process builds its app in :func:`worker_app` (uvicorn's factory,
:data:`WORKER_APP`) from the plan the parent put in :data:`SERVE_STATE_ENV`, with
sandbox executors of its own and the judge cache and limits shared through Redis
when the recipe names it.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict

from verifleet.reward import RewardScorer, ScorerRecipe
from verifleet.sandbox import start_default_pool

from ._access import parse_networks
from ._app import RewardService, service_for
from ._defaults import SERVED_FRESH_STATE
from ._health import HealthListener
from ._heap import settle_heap
from ._protocol import CoalescingHttpToolsProtocol

__all__ = ["SERVE_STATE_ENV", "WORKER_APP", "ServerPlan", "build_app", "run_server", "worker_app"]

#: How ``--workers`` hands the plan to its processes.
SERVE_STATE_ENV = "VERIFLEET_SERVE_STATE"

#: uvicorn's factory of a ``--workers`` process.
WORKER_APP = "verifleet.reward.serve:worker_app"


class ServerPlan(BaseModel):
    """What a server process builds and runs the service from (JSON, for the
    ``--workers`` processes).

    Attributes:
        scorer: The scorer's recipe.
        service: :func:`~._app.service_for`'s options, ``allow_net`` as the
            networks' text (parsed by :func:`build_app`).
        host: Address to bind.
        port: Port to bind.
        health_port: A port of their own for ``/health`` and ``/ready`` (None: none).
        sandbox: The sandbox mode (None: ``$VERIFLEET_SANDBOX``, else strict).
        workers: Server processes sharing the port.
    """

    model_config = ConfigDict(frozen=True)

    scorer: ScorerRecipe
    service: dict[str, Any]
    host: str
    port: int
    health_port: int | None = None
    sandbox: str | None = None
    workers: int = 1


def build_app(plan: ServerPlan, scorer: RewardScorer) -> RewardService:
    """The service around ``scorer`` with the plan's options, its ``/health``
    listener started (``health_port``). The caller that serves it settles the
    heap first (``settle_heap``; not a process that builds many: tests).

    Raises:
        ConfigError: an invalid option (see ``service_for``) or network.
        OSError: the health port cannot be bound.
    """
    options = {**plan.service, "allow_net": parse_networks(plan.service.get("allow_net", ()))}
    app = service_for(scorer, **options)
    if plan.health_port:
        HealthListener(plan.host, plan.health_port, app.routes_fast.admission).start()
    return app


def worker_app() -> RewardService:
    """The app of one ``--workers`` process (uvicorn's factory): the parent's plan
    from :data:`SERVE_STATE_ENV`, its own sandbox executors, its own scorer.

    Raises:
        KeyError: not started by :func:`run_server` with several workers.
        SandboxUnavailable, BenchmarkLoadError, ConfigError, RedisAccessError: as
            the parent's start-up would have.
    """
    plan = ServerPlan.model_validate_json(os.environ[SERVE_STATE_ENV])
    start_default_pool(plan.sandbox, fresh_default=SERVED_FRESH_STATE)[1]()
    app = build_app(plan, plan.scorer.build())
    settle_heap()
    return app


def run_server(plan: ServerPlan, scorer: RewardScorer) -> None:
    """Serve until interrupted: ``scorer`` in this process, or with
    ``plan.workers`` above 1, that many processes that each build their own.

    Raises:
        OSError: the port cannot be bound.
    """
    import uvicorn

    options: dict[str, Any] = {
        "host": plan.host,
        "port": plan.port,
        "log_level": "warning",
        "access_log": False,
        # httptools, each reply written in one system call (._protocol).
        "http": CoalescingHttpToolsProtocol,
        "loop": "uvloop",
        # Thousands of RL rollouts arrive at once: the kernel's accept queue
        # must hold them until the loop accepts (uvicorn's default is 2048).
        "backlog": 16384,
    }
    if plan.workers > 1:
        os.environ[SERVE_STATE_ENV] = plan.model_dump_json()
        uvicorn.run(WORKER_APP, factory=True, workers=plan.workers, **options)
    else:
        app = build_app(plan, scorer)
        settle_heap()
        uvicorn.run(app, **options)
