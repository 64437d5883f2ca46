"""The host's warm pool of executors, and the typed calls the pipeline makes.

Executors start lazily (at most ``pool_size``), are handed to one caller at a
time, and are replaced when they die (``_warm``): a call whose executor crashed,
overran its wall-clock limit or answered nonsense fails with a clear error
naming the template or trait, and the next call gets a fresh executor.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel

from verifleet.schemas import (
    RubricError,
    TemplateValidationError,
    UntrustedCodeError,
    compute_template_id,
)
from verifleet.templates import RegexOutcome, source_digest

from ._bounds import bounded_error, description_problem, evaluation_problem
from ._cooperative import ExecutorBusy, current_wait
from ._errors import ExecutorCrashed, SandboxUnavailable
from ._handle import TemplateEvaluation, TemplateHandle, TemplateVerification
from ._protocol import (
    CheckTraitRequest,
    DescribeRequest,
    DescribeResult,
    EvaluateRequest,
    EvaluateResult,
    PingRequest,
    PingResult,
    RegexTraitRequest,
    Reply,
    StaticCheckRequest,
    StaticCheckResult,
    TraitRequest,
    TraitResult,
)
from ._settings import SandboxMode, SandboxSettings
from ._warm import WarmExecutors

__all__ = ["SandboxPool", "SandboxStats", "default_pool", "reset_default_pool"]

_MAX_HANDLES = 4096

#: The scope (a job id) whose primed descriptions :meth:`SandboxPool.load_template`
#: may use in this thread: see :meth:`SandboxPool.scoped`.
_SCOPE: ContextVar[str | None] = ContextVar("verifleet_sandbox_scope", default=None)


class SandboxStats(BaseModel):
    """Counters of one :class:`SandboxPool`.

    Attributes:
        executors: Executors running or starting now.
        replacements: Executors that died (crash, kill on timeout) and were dropped.
        described: Template descriptions asked of executors (one per
            template the host had not seen).
        handles: Template descriptions (and refusals) the host holds.
        compiled: Templates compiled in template processes by the executors
            that are idle now (each counts what its router handed a template
            process to compile; an executor that died takes its count along).
            Only :meth:`SandboxPool.compiled_stats` fills it (it asks every
            idle executor); :meth:`SandboxPool.stats` leaves it 0.
    """

    executors: int
    replacements: int
    described: int
    handles: int
    compiled: int = 0


_POOLS: weakref.WeakSet[SandboxPool] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()


class SandboxPool:
    """Executors of one host process, and the calls that run template/trait code.

    Thread-safe. Create one per process (:func:`default_pool`) and share it.
    """

    def __init__(self, settings: SandboxSettings | None = None) -> None:
        self.settings = settings or SandboxSettings.from_env()
        self._executors = WarmExecutors(self.settings)
        # Descriptions by (scope, source digest) that this process's executors
        # made: scope "" for those made in a process of that source alone (kept
        # for everyone), a job's scope for those made in its template process,
        # beside its other templates' code (kept for that job alone) ...
        self._handles: OrderedDict[tuple[str, str], TemplateHandle | TemplateValidationError] = (
            OrderedDict()
        )
        # ... and those primed by (scope, source digest): another process's word.
        self._primed: OrderedDict[tuple[str, str], TemplateHandle | TemplateValidationError] = (
            OrderedDict()
        )
        self._handles_lock = threading.Lock()
        # Describes in flight by (scope, digest): a second caller of the same
        # source waits for the first instead of compiling it again (the units of
        # one question start together, and a run checks each template once).
        self._describing: dict[tuple[str, str], threading.Event] = {}
        self._described = 0
        _POOLS.add(self)

    # --- calls -----------------------------------------------------------------------

    def _call(
        self,
        make: Callable[[int, str | None], Any],
        template: tuple[str, str] | None = None,
    ) -> Reply:
        """One request on some executor. ``make(id, source)`` builds it; for a
        template call (``template`` is its digest and source) the source is sent
        only to an executor that lacks it, and again if it forgot it.

        Raises:
            ExecutorCrashed: The executor died or stopped answering (it is replaced).
            SandboxUnavailable: No executor can be started.
        """
        digest = template[0] if template is not None else None
        proc = self._executors.acquire(digest)
        try:
            send = template is not None and template[0] not in proc.known_templates
            source = template[1] if template is not None and send else None
            wait = current_wait()
            reply = proc.call(make(proc.next_id(), source), wait=wait)
            error = reply.error
            if template is not None and error is not None and error.kind == "need_source":
                send = True
                reply = proc.call(make(proc.next_id(), template[1]), wait=wait)
            if template is not None and send:
                if len(proc.known_templates) >= self.settings.max_templates:
                    proc.known_templates.clear()
                proc.known_templates.add(template[0])
            return reply
        finally:
            self._executors.release(proc)

    def executor_cpu_seconds(self) -> float:
        """CPU seconds used so far by one idle executor's router (the only
        executor when ``pool_size`` is 1) and by the children it reaped. Its
        spawner and template processes count only once they exit: to see a
        call's whole cost, read the process tree (``bench/_harness.py``).

        Raises:
            ExecutorCrashed: The executor died.
        """
        reply = self._call(lambda i, _: PingRequest(id=i))
        return PingResult.model_validate(reply.result).cpu_seconds

    def start(self) -> None:
        """Start one executor now (and keep it warm), to fail early; return at
        once when one has started already, and wait for the one starting when
        a start is under way (not start a second behind it).

        Raises:
            SandboxUnavailable: The configured isolation cannot be set up; the
                message names what is missing and the downgrade flag.
        """
        try:
            self._executors.started()
        except SandboxUnavailable as exc:
            raise SandboxUnavailable(
                f"{exc}. Sandbox mode {self.settings.mode.value!r} needs "
                f"{_needs(self.settings.mode)}; an operator who accepts less isolation can "
                "pass --sandbox=seccomp or --sandbox=rlimits-only "
                "(or set VERIFLEET_SANDBOX); see docs/security.md"
            ) from None

    def stats(self) -> SandboxStats:
        """Current counters."""
        running, replacements = self._executors.counts()
        with self._handles_lock:
            return SandboxStats(
                executors=running,
                replacements=replacements,
                described=self._described,
                handles=len(self._handles),
            )

    def compiled_stats(self) -> SandboxStats:
        """:meth:`stats` with ``compiled`` filled: each idle executor is asked
        (one ping each) how many templates it compiled. Meant for a pool at
        rest (end of a run, tests, benches): a busy executor is not counted.

        Raises:
            ExecutorCrashed: An executor died while asked.
        """
        counts = self._executors.on_each_idle(
            lambda proc: (
                PingResult.model_validate(proc.call(PingRequest(id=proc.next_id())).result).compiled
            )
        )
        return self.stats().model_copy(update={"compiled": sum(counts)})

    def close(self) -> None:
        """Kill every executor; later calls raise :class:`SandboxError`."""
        self._executors.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._executors.closed

    # --- templates -----------------------------------------------------------------

    def load_template(self, source: str, question_id: str) -> TemplateHandle:
        """Validate ``source`` in an executor and describe it for ``question_id``.

        Descriptions (and refusals) are cached per exact source (its SHA-256, not
        the MD5 template id): nothing in them depends on the question (answers
        get their question id when they are built), so a question new to this
        process whose template is known costs no executor call. One made inside
        :meth:`scoped` comes from the job's template process, where the job's
        other templates' code ran first and could have changed it: it is used
        for that scope alone; one made outside (in a process of that source
        alone) serves every scope. Inside :meth:`scoped`, a description
        :meth:`prime`-d for that scope is used too; one primed for another scope
        never is.

        Raises:
            TemplateValidationError: The template is invalid, its code crashed
                or hung its process, or its ground truth or judge schema is over
                its :class:`~verifleet.schemas.ResultLimits` (the message says which).
            ExecutorCrashed: The executor itself failed (not the template's
                code, which runs in processes of its own): nothing is cached,
                the next call gets a new executor.
            SandboxUnavailable: No executor can be started.
        """
        if source is None or not source.strip():
            raise TemplateValidationError("template source is empty", question_id=question_id)
        digest = source_digest(source)
        scope = _SCOPE.get()
        cached = self._held(digest, scope)
        while cached is None:
            key = (scope or "", digest)
            with self._handles_lock:
                running = self._describing.get(key)
                if running is None:
                    self._describing[key] = threading.Event()
            if running is not None:
                if current_wait() is not None:
                    # A greenlet never blocks its loop's thread (the describer
                    # may be a greenlet of it): it asks again later.
                    raise ExecutorBusy
                # Another thread describes this very source for this scope:
                # its answer (or its failure, then this thread tries itself).
                running.wait()
                cached = self._held(digest, scope)
                continue
            try:
                described = self._describe(source, digest, question_id)
                cached = self._remember(key, described)
            finally:
                with self._handles_lock:
                    self._describing.pop(key).set()
        if isinstance(cached, TemplateValidationError):
            raise TemplateValidationError(cached.problem, question_id=question_id)
        if cached.question_id != question_id:
            cached = dataclasses.replace(cached, question_id=question_id)
        return cached

    def _held(
        self, digest: str, scope: str | None
    ) -> TemplateHandle | TemplateValidationError | None:
        """What this process's executors said of a source for ``scope`` or for
        everyone, else what was primed for ``scope``; None when none is held."""
        with self._handles_lock:
            cached = self._own(digest, scope)
            if cached is not None or scope is None:
                return cached
            primed = self._primed.get((scope, digest))
            if primed is not None:
                self._primed.move_to_end((scope, digest))
            return primed

    def _own(
        self, digest: str, scope: str | None
    ) -> TemplateHandle | TemplateValidationError | None:
        """What this process's executors said of a source in ``scope``'s
        template process, else in a process of its own; the caller holds
        ``_handles_lock``."""
        for key in ((scope, digest), ("", digest)) if scope else (("", digest),):
            cached = self._handles.get(key)
            if cached is not None:
                self._handles.move_to_end(key)
                return cached
        return None

    def _describe(
        self, source: str, digest: str, question_id: str
    ) -> TemplateHandle | TemplateValidationError:
        with self._handles_lock:
            self._described += 1
        template_id = compute_template_id(source)
        scope_name = _SCOPE.get() or ""

        def make(request_id: int, sent: str | None) -> DescribeRequest:
            return DescribeRequest(
                id=request_id,
                template_id=template_id,
                digest=digest,
                scope=scope_name,
                question_id=question_id,
                source=sent,
            )

        # An executor that fails (its router, not the template's processes: those
        # answer ``timeout`` or ``crash``) is the infrastructure's failure:
        # ExecutorCrashed goes to the caller and nothing is cached.
        try:
            reply = self._call(make, template=(digest, source))
        except ExecutorBusy:
            with self._handles_lock:
                self._described -= 1  # nothing was asked: the caller asks again
            raise
        if not reply.ok:
            return TemplateValidationError(_error_text(reply))
        too_large = description_problem(reply.result or {}, self.settings.result_limits)
        if too_large is not None:
            return TemplateValidationError(too_large)
        described = DescribeResult.model_validate(reply.result)
        return TemplateHandle.from_description(
            described.model_dump(), template_id=template_id, question_id=question_id, source=source
        )

    def knows(self, source: str, *, scope: str | None = None) -> bool:
        """Whether :meth:`load_template` of ``source`` (inside :meth:`scoped`
        with ``scope``; outside any when None) would ask no executor: a
        description or refusal of it is held for that scope."""
        return self._held(source_digest(source), scope) is not None

    def description(self, source: str) -> dict[str, Any] | None:
        """What this process's executors said of ``source`` as JSON-safe data
        (:meth:`TemplateHandle.description`, or ``{"problem": ...}`` for a
        refused template), None when they have not described it for the
        current scope (:meth:`scoped`) or for everyone. Primed descriptions are
        never returned: they are someone else's word."""
        with self._handles_lock:
            cached = self._own(source_digest(source), _SCOPE.get())
        if cached is None:
            return None
        if isinstance(cached, TemplateValidationError):
            return {"problem": cached.problem}
        return cached.description()

    def prime(self, source: str, description: dict[str, Any], *, scope: str) -> None:
        """Hold a description another process made (:meth:`description`) for
        ``scope`` (the job whose submitter stored it), so that
        :meth:`load_template` of ``source`` inside :meth:`scoped` with the same
        scope asks no executor: a fleet describes each template once, at
        submission. The description is the submitter's word: it is used for
        that scope alone, so a job that stores a false description of someone
        else's template misleads only itself. The template is still compiled
        where it is evaluated. A malformed description is ignored (the template
        is then described here, as without one)."""
        entry: TemplateHandle | TemplateValidationError
        try:
            too_large = description_problem(description, self.settings.result_limits)
            if "problem" in description:
                entry = TemplateValidationError(bounded_error(str(description["problem"])))
            elif too_large is not None:
                entry = TemplateValidationError(too_large)
            else:
                entry = TemplateHandle.from_description(
                    description,
                    template_id=compute_template_id(source),
                    question_id="",
                    source=source,
                )
        except (KeyError, TypeError, ValueError):
            return
        key = (scope, source_digest(source))
        with self._handles_lock:
            self._primed[key] = entry
            self._primed.move_to_end(key)
            while len(self._primed) > _MAX_HANDLES:
                self._primed.popitem(last=False)

    @contextlib.contextmanager
    def scoped(self, scope: str) -> Iterator[None]:
        """Within the block, :meth:`load_template` in this thread (this context)
        also uses descriptions primed for ``scope``, and template and trait code
        runs in the executors' processes of that scope alone: no other job's
        requests reach them (docs/security.md). Threads started inside do not
        inherit it: they describe templates in an executor instead, and their
        calls run in the unscoped processes."""
        token = _SCOPE.set(scope)
        try:
            yield
        finally:
            _SCOPE.reset(token)

    def _remember(
        self, key: tuple[str, str], entry: TemplateHandle | TemplateValidationError
    ) -> TemplateHandle | TemplateValidationError:
        """Hold ``entry`` for ``key`` (scope, source digest) unless one is held
        already (a concurrent describe); returns the one held. The table is LRU-bounded."""
        with self._handles_lock:
            held = self._handles.setdefault(key, entry)
            self._handles.move_to_end(key)
            while len(self._handles) > _MAX_HANDLES:
                self._handles.popitem(last=False)
            return held

    def evaluate(
        self, handle: TemplateHandle, judge_output: dict[str, Any], raw_trace: str
    ) -> TemplateEvaluation:
        """Validate the judge's output into the template and run its verification,
        in one round trip (in a fresh process forked for this call).

        Raises:
            TemplateValidationError: The template's code crashed or hung its
                process, its regex checks raised, or the parsed values or the
                verification output are over their
                :class:`~verifleet.schemas.ResultLimits` (the message names the
                limit).
            ExecutorCrashed: The executor itself failed (an infrastructure
                failure, not the template's).
        """
        scope_name = _SCOPE.get() or ""

        def make(request_id: int, sent: str | None) -> EvaluateRequest:
            return EvaluateRequest(
                id=request_id,
                template_id=handle.template_id,
                digest=handle.digest,
                scope=scope_name,
                question_id=handle.question_id,
                source=sent,
                data=judge_output,
                raw_trace=raw_trace,
            )

        reply = self._call(make, template=(handle.digest, handle.source))
        if not reply.ok:
            raise TemplateValidationError(_error_text(reply), question_id=handle.question_id)
        too_large = evaluation_problem(reply.result or {}, self.settings.result_limits)
        if too_large is not None:
            raise TemplateValidationError(too_large, question_id=handle.question_id)
        result = EvaluateResult.model_validate(reply.result)
        if result.invalid is not None or result.verification is None:
            return TemplateEvaluation(invalid=str(result.invalid))
        v = result.verification
        return TemplateEvaluation(
            parsed=result.parsed,
            verification=TemplateVerification(
                field_ok=v.field_ok,
                error=v.error,
                field_results=v.field_results,
                field_results_error=v.field_results_error,
                regex=RegexOutcome.model_validate(v.regex) if v.regex is not None else None,
                regex_error=v.regex_error,
                granular=v.granular,
                granular_error=v.granular_error,
                composition_strategy=v.composition_strategy,
            ),
        )

    def validate_template(self, source: str, *, question_id: str | None = None) -> None:
        """Check a template as submission does (compile and validate, in an executor).

        Raises:
            TemplateValidationError: As :meth:`load_template`.
        """
        self.load_template(source, question_id or "")

    def static_problems(self, sources: Sequence[str]) -> list[str | None]:
        """The static checks of every source (parse and the guard; none of
        their code runs), all in one round trip to an executor: per source,
        in order, the words :meth:`validate_template` would use for what they
        found, or None. A template that passes can still fail to compile.

        A source that crashes or hangs the shared process the checks run in
        fails the batch; each of its sources is then checked alone, so only
        that one is reported (as exhausting the sandbox or running too long).

        Raises:
            ExecutorCrashed: The executor itself failed, or a check failed for
                a reason that is not the source's (a protocol or outside error).
            SandboxUnavailable: No executor can be started.
        """
        if not sources:
            return []
        reply = self._call(lambda i, _: StaticCheckRequest(id=i, sources=list(sources)))
        if reply.ok:
            problems = StaticCheckResult.model_validate(reply.result).problems
            if len(problems) != len(sources):
                raise ExecutorCrashed("a static check answered for other sources than it was sent")
            return problems
        kind = reply.error.kind if reply.error is not None else "internal"
        if kind not in ("timeout", "crash", "template"):
            raise ExecutorCrashed(_error_text(reply))
        if len(sources) == 1:
            return [_error_text(reply)]
        return [problem for source in sources for problem in self.static_problems([source])]

    # --- callable traits ---------------------------------------------------------------

    def check_trait(self, trait: dict[str, Any]) -> None:
        """Load a callable trait (its JSON form) once in an executor.

        Raises:
            UntrustedCodeError: Pickled code on a trait that is not trusted.
            RubricError: The trait does not load, or crashed / hung the executor.
        """
        scope_name = _SCOPE.get() or ""
        self._trait_call(
            lambda i, _: CheckTraitRequest(id=i, trait=trait, scope=scope_name), trait.get("name")
        )

    def run_trait(self, trait: dict[str, Any], text: str) -> Any:
        """Run a callable trait (its JSON form, ``trusted`` included) on ``text``.

        Returns:
            The checked value (bool, int or class index).

        Raises:
            UntrustedCodeError: Pickled code on a trait that is not trusted.
            RubricError: The trait is refused, raises, returns a bad value, or
                crashed / hung the executor.
        """
        scope_name = _SCOPE.get() or ""
        return self._trait_call(
            lambda i, _: TraitRequest(id=i, trait=trait, text=text, scope=scope_name),
            trait.get("name"),
        ).value

    def run_regex_trait(self, trait: dict[str, Any], text: str) -> bool:
        """Search ``text`` with a regex trait (its JSON form) in an executor.

        Raises:
            RubricError: The trait is malformed, or its pattern hung the executor.
        """
        result = self._trait_call(
            lambda i, _: RegexTraitRequest(id=i, trait=trait, text=text),
            trait.get("name"),
            kind="regex",
        )
        return bool(result.value)

    def _trait_call(
        self, make: Callable[[int, str | None], Any], name: Any, *, kind: str = "callable"
    ) -> TraitResult:
        try:
            reply = self._call(make)
        except ExecutorCrashed as exc:
            raise RubricError(f"{kind} trait {name!r} crashed the sandbox: {exc}") from None
        if reply.ok:
            return TraitResult.model_validate(reply.result)
        if reply.error is not None and reply.error.kind == "untrusted":
            raise UntrustedCodeError(reply.error.message)
        if reply.error is not None and reply.error.kind in ("timeout", "crash"):
            raise RubricError(f"{kind} trait {name!r} crashed the sandbox: {_error_text(reply)}")
        raise RubricError(_error_text(reply))


def _error_text(reply: Reply) -> str:
    error = reply.error
    kind = error.kind if error is not None else "internal"
    message = bounded_error(error.message if error is not None else "unknown error")
    if kind in ("template", "trait"):
        return message
    if kind == "crash":
        return f"template code exhausted the sandbox: {message}"
    if kind == "timeout":
        return f"template code ran too long: {message}"
    return f"sandbox {kind} error: {message}"


def _needs(mode: SandboxMode) -> str:
    if mode is SandboxMode.STRICT:
        return "bubblewrap (apt-get install bubblewrap) with user namespaces, and libseccomp2"
    if mode is SandboxMode.SECCOMP:
        return "libseccomp2 and a kernel that accepts seccomp filters"
    return "a Python interpreter that can start"


_default: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool, created from the environment on first use (and
    again after someone closed it: a closed default would fail every later
    caller of this process)."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = SandboxPool()
        return _default


def reset_default_pool(settings: SandboxSettings | None = None) -> SandboxPool:
    """Replace the process-wide pool (closing the old one), e.g. after the CLI's
    ``--sandbox`` flag changed the mode."""
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
        _default = SandboxPool(settings)
        return _default
