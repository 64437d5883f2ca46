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
import signal
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from ._children import MAX_ANSWER_BYTES, Limits, Slot
from ._errors import SandboxError
from ._pipes import Deadline, drain, kill_group, process_gone, read_line, write_all
from ._protocol import (
    CheckTraitRequest,
    CompiledAnswer,
    DescribeRequest,
    ErrorKind,
    EvaluateRequest,
    RegexTraitRequest,
    Reply,
    Request,
    StaticCheckRequest,
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
    #: Described, and no call evaluated in it yet: its units' calls are to come.
    pending: bool = False

    def alive(self) -> bool:
        return not process_gone(self.pid)


#: Signals a process's own fault raises (its code's crash, not an outside kill).
_CRASH_SIGNALS = frozenset(
    (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT, signal.SIGSYS)
)


def _signal_text(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _stopped_child(pid: int) -> str | None:
    """The signal that stopped ``pid`` (a child of this process), if it is stopped."""
    try:
        found, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
    except ChildProcessError:
        return None
    if found == pid and os.WIFSTOPPED(status):
        return _signal_text(os.WSTOPSIG(status))
    return None


class SpawnerDied(SandboxError):
    """The spawner is gone: the executor cannot start children any more."""


class Router:
    """Routes requests to children (single-threaded, inside the executor)."""

    def __init__(
        self,
        slots: list[Slot],
        control_w: int,
        status_r: int,
        spawner: int,
        limits: Limits,
        max_sources: int,
        max_classes: int = 512,
        max_kept: int | None = None,
    ) -> None:
        for slot in slots:
            for fd in (slot.request_w, slot.request_r, slot.answer_r):
                os.set_blocking(fd, False)
        self._free = list(reversed(slots))
        self._control_w = control_w
        os.set_blocking(status_r, False)
        self._status_r = status_r
        self._status_buffer = b""
        # pid -> last waitpid status the spawner reported (only the newest few).
        self._statuses: OrderedDict[int, int] = OrderedDict()
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
        # Processes whose units evaluated already are kept up to this many; the
        # rest of the slots hold only processes whose units still wait.
        self._max_kept = min(self._max_templates, max_kept or self._max_templates)
        #: Templates handed to a template process to compile, ever.
        self.compiled = 0
        #: The slot of a child forked ahead of need, its hello not read yet.
        self._spare: Slot | None = None

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
        if isinstance(request, StaticCheckRequest):
            # Parsing runs no one's code: one process serves every scope.
            return ("", "static")
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
        while len(self._templates) >= self._max_templates or (
            len(self._templates) >= self._max_kept
            and any(not c.pending for c in self._templates.values())
        ):
            self._evict()
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
        # A process per (job, template): no other question's code ran where
        # this one's runs (unscoped callers: one per template); with
        # ``VERIFLEET_SANDBOX_FRESH=job``, one per job.
        shared = request.scope and not self._limits.per_template
        key = (request.scope, "*" if shared else request.digest)
        child = self._templates.get(key)
        if child is not None and not child.alive():
            # It ended between two calls: by itself after answering (a call
            # that overran in ``call`` mode, a class body that left a process
            # behind: an exit status), which a fresh process makes good; or by
            # a signal from outside, which this call reports (the next one gets
            # a fresh process), so that the loss is seen as what it was.
            kind, cause = self._ended(child.pid)
            self._drop(child, key)
            child = None
            if kind == "internal":
                message = f"the template's process {cause}, between two calls"
                return encode(Reply.failure(request.id, "internal", message))
        if child is not None and request.digest in child.digests:
            self._templates.move_to_end(key)
            child.pending = child.pending and isinstance(request, DescribeRequest)
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
        child.pending = isinstance(request, DescribeRequest)
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
            stopped = self._stopped(child.pid)
            self._drop(child, key)
            message = f"no answer within {budget:g} s (wall-clock limit); its process was killed"
            if stopped is not None:
                message = (
                    f"its process was stopped by {stopped}, which no limit of the sandbox "
                    f"sends (from outside, or by its own code), and gave no answer within "
                    f"{budget:g} s; it was killed"
                )
                # Not the template's doing as far as anyone here can tell.
                return encode(Reply.failure(request_id, "internal", message))
            return encode(Reply.failure(request_id, "timeout", message))
        except OverflowError:
            self._drop(child, key)
            return encode(Reply.failure(request_id, "crash", "answer too large"))
        except (EOFError, OSError):
            kind, cause = self._ended(child.pid)
            self._drop(child, key)
            return encode(Reply.failure(request_id, kind, f"the template's process {cause}"))
        return answer + b"\n"

    def _read_statuses(self) -> None:
        """Take in what the spawner reported about its children so far."""
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self._status_r, 1 << 16):
                self._status_buffer += chunk
        *lines, self._status_buffer = self._status_buffer.split(b"\n")
        for line in lines:
            pid, _, status = line.partition(b" ")
            with contextlib.suppress(ValueError):
                self._statuses[int(pid)] = int(status)
                self._statuses.move_to_end(int(pid))
        while len(self._statuses) > 256:
            self._statuses.popitem(last=False)

    def _stopped(self, pid: int) -> str | None:
        """The signal that stopped ``pid``, if the spawner reported it stopped."""
        self._read_statuses()
        status = self._statuses.get(pid)
        if status is None or not os.WIFSTOPPED(status):
            return None
        return _signal_text(os.WSTOPSIG(status))

    def _ended(self, pid: int) -> tuple[ErrorKind, str]:
        """How ``pid`` ended, in words, and whose doing that looks like:
        ``crash`` (its code's: an exit, a crash signal, its CPU limit) or
        ``internal`` (a signal no limit sends: from outside, as far as the
        sandbox can tell). Waits a moment for the spawner's report."""
        end = time.monotonic() + 1.0
        while True:
            self._read_statuses()
            status = self._statuses.get(pid)
            if status is not None and not os.WIFSTOPPED(status):
                break
            if time.monotonic() >= end:
                return "crash", "died (its code killed or exhausted it)"
            time.sleep(0.01)
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
            return "crash", f"exited with status {code} without answering (its code ended it)"
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return "crash", "ran out of CPU time (SIGXCPU: its CPU limit)"
        if number in _CRASH_SIGNALS:
            return "crash", f"crashed ({_signal_text(number)})"
        return "internal", (
            f"was killed by {_signal_text(number)} from outside (no limit of the sandbox "
            "sends it but as a CPU limit's last resort; its own code could have)"
        )

    def _drop(self, child: _Child, key: tuple[str, str] | None) -> None:
        if key is not None and self._templates.get(key) is child:
            del self._templates[key]
        self._recycle(child)

    def _spawn(self) -> _Child:
        """A new child of the spawner: the spare forked ahead when there is
        one, else one forked now into a free slot (stopping the least recently
        used template process when none is free). Then the next spare is asked
        for while a slot is free: the spawner forks it while this child works,
        so the fork (a copy of the spawner's page tables) is off the next new
        child's critical path. A spare is a clean fork of the spawner, as a
        child forked on demand: it runs no code of anyone's before its first
        request.

        Raises:
            SpawnerDied: The spawner did not fork the child.
        """
        child = self._take_spare()
        if child is None:
            if not self._free:
                self._evict()
            slot = self._free.pop()
            self._fork_into(slot)
            child = self._hello(slot)
        if self._free and self._spare is None:
            slot = self._free.pop()
            try:
                self._fork_into(slot)
            except SpawnerDied:
                self._free.append(slot)  # the next spawn reports it
            else:
                self._spare = slot
        return child

    def _take_spare(self) -> _Child | None:
        """The spare child, once it said it is there; None when there is none
        or it is gone (its slot freed: a fresh fork replaces it).

        Raises:
            SpawnerDied: The spawner did not fork it (it writes its pid as it
                starts, so one that never did was never forked).
        """
        slot, self._spare = self._spare, None
        if slot is None:
            return None
        child = self._hello(slot)
        if not child.alive():
            self._recycle(child)
            return None
        return child

    def _fork_into(self, slot: Slot) -> None:
        """Ask the spawner for a child in ``slot`` (not waiting for it).

        Raises:
            SpawnerDied: The spawner's control pipe is gone or full.
        """
        try:
            write_all(self._control_w, f"{slot.index}\n".encode())
        except Exception as exc:
            raise SpawnerDied(f"the executor's spawner failed: {exc}") from None

    def _hello(self, slot: Slot) -> _Child:
        """The child the spawner forked into ``slot``, once it said its pid.

        Raises:
            SpawnerDied: No child said it is there within the spawn timeout
                (the slot is free again).
        """
        try:
            hello = read_line(slot.answer_r, _SPAWN_TIMEOUT, limit=4096, alive=self._spawner_alive)
            pid = CompiledAnswer.model_validate_json(hello).pid
        except Exception as exc:
            self._free.append(slot)
            stopped = _stopped_child(self._spawner)
            cause = str(exc) if stopped is None else f"it was stopped by {stopped} from outside"
            raise SpawnerDied(f"the executor's spawner failed: {cause}") from None
        self._statuses.pop(pid, None)  # a pid used again
        return _Child(slot, pid)

    def _evict(self) -> None:
        """Stop one kept process to free its slot: the least recently used
        of those that evaluated a call already, else the least recently used.
        A process only described is spared while another can go: a unit
        describes its template as it starts and evaluates its answer once the
        model replied, so under plain LRU a backlog of units larger than the
        slots would evict each process just before its call (and compile every
        template twice)."""
        victim = next((k for k, c in self._templates.items() if not c.pending), None)
        if victim is None:
            victim = next(iter(self._templates))
        self._recycle(self._templates.pop(victim))

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
