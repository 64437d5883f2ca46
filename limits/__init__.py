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

# name -> the submodule that defines it, loaded on first use: a local run's
# gate needs neither redis nor the fleet's lease scripts
_LAZY: dict[str, str] = {
    "CallGate": "._protocol",
    "NoCapacityError": "._protocol",
    "Slot": "._protocol",
    "no_gate": "._protocol",
    "DEFAULT_MAX_CONCURRENCY": "._policy",
    "POLICY": "._policy",
    "AdaptivePolicy": "._policy",
    "EndpointLimits": "._policy",
    "Window": "._policy",
    "endpoint_id": "._policy",
    "LocalCallGate": "._local",
    "RedisCallGate": "._redis",
    "Spend": "._redis",
    "lease_owner": "._redis",
    "reclaim_leases": "._reclaim",
}

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


__getattr__, __dir__ = _lazy.exports(__name__, _LAZY)
