"""verifleet.limits — rate limiting of model endpoints, in one place.

- :class:`CallGate` and :class:`Slot`: the protocol the pipeline enters around
  every model call attempt (and the only part of this package it depends on).
- :class:`AdaptivePolicy` and :class:`Window`: the adaptive concurrency window
  (AIMD on the endpoint's pushback: 429s and rising latency), on by default.
- :class:`EndpointLimits`: a model's configured limits (``max_concurrency``,
  ``requests_per_minute``, ``tokens_per_minute``, ``adaptive_concurrency``).
- Backends: :class:`LocalCallGate` (one process: ``verifleet run``) and
  :class:`RedisCallGate` (the fleet: one window and budget per endpoint in
  Redis, shared by every worker). Whoever builds the pipeline's resources
  chooses one. :func:`reclaim_leases` gives back the slots of worker processes
  that are gone (the workers' reaper calls it).

Imports only :mod:`verifleet.schemas` and ``redis``.
"""

from __future__ import annotations

import typing

from verifleet import _lazy

if typing.TYPE_CHECKING:
    from ._protocol import CallGate, NoCapacityError, Slot, no_gate
    from ._policy import (
        DEFAULT_MAX_CONCURRENCY,
        POLICY,
        AdaptivePolicy,
        EndpointLimits,
        Window,
        endpoint_id,
    )
    from ._local import LocalCallGate
    from ._redis import RedisCallGate, Spend, lease_owner
    from ._reclaim import reclaim_leases

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "POLICY",
    "AdaptivePolicy",
    "CallGate",
    "EndpointLimits",
    "LocalCallGate",
    "NoCapacityError",
    "RedisCallGate",
    "Slot",
    "Spend",
    "Window",
    "endpoint_id",
    "lease_owner",
    "no_gate",
    "reclaim_leases",
]


# Each name of __all__ loads on first use, from the module the TYPE_CHECKING block
# imports it from: a local run's gate needs neither redis nor the fleet's lease
# scripts.
__getattr__, __dir__ = _lazy.exports(__name__)
