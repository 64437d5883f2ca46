"""The router: which child of the spawner answers which request.

Template requests go to the template process of their scope (one per job; one
per digest for unscoped callers), started on first use (and replaced by a fresh
one once it has compiled ``max_classes`` templates, since it keeps each class) (the spawner forks it into a free slot; the least recently
used one is stopped when none is free). Trait requests go to a one-shot child.
The router enforces every child's wall clock: a template process that does not
answer in time (its own per-call limit failed, or its class body hung the
compile) is killed with everything it started, and the slot is emptied before
another child gets it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections import OrderedDict
from dataclasses import dataclass, field

from ._children import MAX_ANSWER_BYTES, Limits, Slot
from ._errors import SandboxError
from ._pipes import Deadline, drain, kill_group, process_gone, read_line, write_all
from ._protocol import (
    CheckTraitRequest,
    CompiledAnswer,
    DescribeRequest,
    EvaluateRequest,
    RegexTraitRequest,
    Reply,
    Request,
    TraitRequest,
    encode,
    source_digest,
)

__all__ = ["Router"]

#: Seconds a new child may take to say it is there (a fork of a warm process).
_SPAWN_TIMEOUT = 10.0

#: Seconds granted beyond a child's own limits for forwarding.
_MARGIN = 2.0


@dataclass
class _Child:
    slot: Slot
    pid: int
    #: Template digests whose source this child was sent.
    digests: set[str] = field(default_factory=set)

    def alive(self) -> bool:
        return not process_gone(self.pid)


class SpawnerDied(SandboxError):
    """The spawner is gone: the executor cannot start children any more."""


class Router:
    """Routes requests to children (single-threaded, inside the executor)."""

    def __init__(
        self,
        slots: list[Slot],
        control_w: int,
        spawner: int,
        limits: Limits,
        max_sources: int,
        max_classes: int = 512,
    ) -> None:
        for slot in slots:
            for fd in (slot.request_w, slot.request_r, slot.answer_r):
                os.set_blocking(fd, False)
        self._free = list(reversed(slots))
        self._control_w = control_w
        self._spawner = spawner
        self._limits = limits
        self._templates: OrderedDict[tuple[str, str], _Child] = OrderedDict()
        self._sources: OrderedDict[str, str] = OrderedDict()
        self._max_sources = max_sources
        # A template process keeps every class it compiled: past this many it
        # is replaced, so a job of many templates cannot grow it without bound.
        self._max_classes = max_classes
        # One slot is always left for one-shot trait children.
        self._max_templates = max(1, len(slots) - 1)
        #: Templates handed to a template process to compile, ever.
        self.compiled = 0

    def handle(self, request: Request, line: bytes) -> bytes:
        """The reply line to one request (never raises but :class:`SpawnerDied`)."""
        if isinstance(request, DescribeRequest | EvaluateRequest):
            return self._template_call(request, line)
        key = self._trait_key(request)
        if key is not None:
            return self._keyed_call(key, request.id, line)
        child = self._spawn()
        try:
            return self._exchange(child, request.id, line, self._limits.timeout + _MARGIN)
        finally:
            self._recycle(child)

    def _trait_key(self, request: Request) -> tuple[str, str] | None:
        """The long-lived child a trait request goes to, or None for a one-shot:
        regex traits share one process (a pattern runs no one's code); callable
        traits keep one per (scope, trait) unless every call is to be fresh."""
        if isinstance(request, RegexTraitRequest):
            return ("", "regex")
        if isinstance(request, TraitRequest | CheckTraitRequest) and not self._limits.fork_per_call:
            trait = json.dumps(request.trait, sort_keys=True)
            return (request.scope, "trait:" + hashlib.sha256(trait.encode()).hexdigest())
        return None

    def _call_budget(self) -> float:
        """Seconds to wait for a template process's answer to a call: its own
        limit plus forwarding when it forks the call (it enforces the limit
        itself); the limit itself when the call runs in it."""
        if self._limits.fork_per_call:
            return self._limits.timeout + _MARGIN
        return self._limits.timeout

    def _keyed_call(self, key: tuple[str, str], request_id: int, line: bytes) -> bytes:
        child = self._templates.get(key)
        if child is None:
            child = self._new_keyed(key)
        else:
            self._templates.move_to_end(key)
        return self._exchange(child, request_id, line, self._limits.timeout + _MARGIN, key)

    def _new_keyed(self, key: tuple[str, str]) -> _Child:
        while len(self._templates) >= self._max_templates:
            _, oldest = self._templates.popitem(last=False)
            self._recycle(oldest)
        child = self._spawn()
        self._templates[key] = child
        return child

    def _template_call(self, request: DescribeRequest | EvaluateRequest, line: bytes) -> bytes:
        """A template request goes to the template process of its scope: one per
        job (its templates compiled side by side, each call in a fresh child), or,
        for unscoped callers (``/verify``), one per template."""
        if request.source is not None:
            if source_digest(request.source) != request.digest:
                return encode(Reply.failure(request.id, "protocol", "source and digest differ"))
            self._sources[request.digest] = request.source
            self._sources.move_to_end(request.digest)
            while len(self._sources) > self._max_sources:
                self._sources.popitem(last=False)
        key = (request.scope, "*") if request.scope else ("", request.digest)
        child = self._templates.get(key)
        if child is not None and request.digest in child.digests:
            self._templates.move_to_end(key)
            return self._exchange(child, request.id, line, self._call_budget(), key)
        source = self._sources.get(request.digest)
        if source is None:
            return encode(Reply.failure(request.id, "need_source", "template source unknown here"))
        if request.source is None:
            line = encode(request.model_copy(update={"source": source}))
        if child is not None and len(child.digests) >= self._max_classes:
            self._drop(child, key)
            child = None
        if child is None:
            child = self._new_keyed(key)
        else:
            self._templates.move_to_end(key)
        child.digests.add(request.digest)
        self.compiled += 1  # the host's stats count compiles (SandboxPool.compiled_stats)
        # The class body runs first, under the same limits as a call.
        return self._exchange(child, request.id, line, 2 * self._call_budget(), key)

    def _exchange(
        self,
        child: _Child,
        request_id: int,
        line: bytes,
        budget: float,
        key: tuple[str, str] | None = None,
    ) -> bytes:
        slot = child.slot
        try:
            write_all(slot.request_w, line if line.endswith(b"\n") else line + b"\n", budget)
            answer = read_line(slot.answer_r, budget, limit=MAX_ANSWER_BYTES, alive=child.alive)
        except Deadline:
            self._drop(child, key)
            message = f"no answer within {budget:g} s (wall-clock limit); its process was killed"
            return encode(Reply.failure(request_id, "timeout", message))
        except OverflowError:
            self._drop(child, key)
            return encode(Reply.failure(request_id, "crash", "answer too large"))
        except (EOFError, OSError):
            self._drop(child, key)
            message = "the template's process died (its code killed or exhausted it)"
            return encode(Reply.failure(request_id, "crash", message))
        return answer + b"\n"

    def _drop(self, child: _Child, key: tuple[str, str] | None) -> None:
        if key is not None and self._templates.get(key) is child:
            del self._templates[key]
        self._recycle(child)

    def _spawn(self) -> _Child:
        """A new child of the spawner in a free slot (stopping the least recently
        used template process when none is free)."""
        if not self._free:
            _, oldest = self._templates.popitem(last=False)
            self._recycle(oldest)
        slot = self._free.pop()
        try:
            write_all(self._control_w, f"{slot.index}\n".encode())
            hello = read_line(slot.answer_r, _SPAWN_TIMEOUT, limit=4096, alive=self._spawner_alive)
            pid = CompiledAnswer.model_validate_json(hello).pid
        except Exception as exc:
            self._free.append(slot)
            raise SpawnerDied(f"the executor's spawner failed: {exc}") from None
        return _Child(slot, pid)

    def _spawner_alive(self) -> bool:
        return not process_gone(self._spawner)

    def _recycle(self, child: _Child) -> None:
        """Kill the child's process group, throw away what it left in its
        pipes, and free its slot."""
        kill_group(child.pid)
        with contextlib.suppress(OSError):
            drain(child.slot.request_r)
            drain(child.slot.answer_r)
        self._free.append(child.slot)
