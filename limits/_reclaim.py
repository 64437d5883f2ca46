"""Giving back the endpoint slots of worker processes that are gone.

A worker process names its leases after its liveness owner id
(``RedisCallGate(owner=...)``), and records each endpoint it took slots of in
``{prefix}:limit:endpoints``. A process killed outright (SIGKILL, the OOM
killer, a lost machine) leaves its leases in the window: the calls it had in
flight and the slots it kept for its next calls. They would expire with their
lease (``VERIFLEET_LEASE_SECONDS``, 150 s by default), during which the fleet
runs with a smaller window, or none at all when the dead process held all of it.
The workers' reaper calls :func:`reclaim_leases` once per turn, so they come
back as soon as the process's heartbeat expires, like its messages.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import redis

from ._redis import lease_owner

__all__ = ["reclaim_leases"]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def reclaim_leases(
    client: redis.Redis, *, prefix: str, alive: Callable[[list[str]], Collection[str]]
) -> int:
    """Release every lease whose owner is not among ``alive(owners)`` and wake
    one waiter per lease; returns how many were released.

    Leases taken without an owner (the reward server's, tests') are left to
    expire. A lease of a live owner is never touched, so the call it belongs
    to keeps its slot.

    Raises:
        redis.RedisError: Redis is unreachable (nothing or part of it done; the
            next turn finishes it).
    """
    registered: Collection[bytes] = client.smembers(f"{prefix}:limit:endpoints")  # type: ignore[assignment]
    endpoints = sorted(_text(e) for e in registered)
    if not endpoints:
        return 0
    pipe = client.pipeline(transaction=False)
    for key in endpoints:
        pipe.zrange(f"{prefix}:limit:{key}:leases", 0, -1)
    held: dict[str, dict[str, list[str]]] = {}
    for key, members in zip(endpoints, pipe.execute(), strict=True):
        for member in members:
            owner = lease_owner(member)
            if owner is not None:
                held.setdefault(owner, {}).setdefault(key, []).append(_text(member))
    if not held:
        return 0
    living = set(alive(sorted(held)))
    dead: dict[str, list[str]] = {key: [] for key in endpoints}
    for owner, by_endpoint in held.items():
        if owner not in living:
            for key, members in by_endpoint.items():
                dead[key].extend(members)
    released = 0
    pipe = client.pipeline(transaction=False)
    for key, members in dead.items():
        if not members:
            continue
        base = f"{prefix}:limit:{key}"
        pipe.zrem(f"{base}:leases", *members)
        pipe.lpush(f"{base}:free", *(["1"] * len(members)))
        pipe.ltrim(f"{base}:free", 0, 127)
        pipe.pexpire(f"{base}:free", 60000)
        released += len(members)
    if released:
        pipe.execute()
    return released
