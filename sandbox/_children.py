"""The executor's forked processes: the spawner, template processes and the
per-call children that run untrusted code.

The tree inside one executor::

    router (reads the host's requests; never runs untrusted code, never forks)
     └─ spawner (forked before the first request: holds no request data)
         ├─ template process, one per scope (a job's templates side by side;
         │   one per template for unscoped callers): compiles its templates
         │   └─ call child, one per request (``call`` mode): runs the template's
         │      code, answers, exits
         ├─ one-shot child per trait call: runs the trait, answers, exits
         └─ a spare: forked ahead of need (the router asks for it as it takes
             the previous one), so the next new child costs no fork on its
             request's path; it runs nothing until its first request makes it
             one of the above (and the leader of a process group of its own)

A call child is a fresh copy of its template process: nothing the template's
``verify()``, validators or a trait change (pydantic's classes, builtins, module
state) outlives the call. A template process holds only its own scope's class
bodies and requests (what it describes can have been changed by the class bodies
compiled there before: the host keeps such a description for that scope alone);
the spawner holds no request at all, so nothing one job sent is in the memory of
a process that runs another job's code.
Every child closes every descriptor but its own pipe ends and stderr, dies with
its parent, and installs its seccomp layer before untrusted code runs.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from verifleet.templates import BaseAnswer

from ._digits import refuse_huge_reply
from ._pipes import (
    Deadline,
    become_subreaper,
    close_all_but,
    die_with_parent,
    read_line,
    signal_name,
    write_all,
)
from ._protocol import (
    CheckTraitRequest,
    DescribeRequest,
    EvaluateRequest,
    Failure,
    RegexTraitRequest,
    Reply,
    Request,
    StaticCheckRequest,
    TraitRequest,
    decode_request,
    encode,
)
from ._runtime import (
    RequestError,
    check_trait,
    compile_template,
    describe,
    evaluate,
    regex_trait,
    static_check,
    trait,
)
from ._scenario_code import ScenarioCodeRequest, run_scenario_code

if TYPE_CHECKING:
    from ._seccomp import PreparedProgram

__all__ = ["Limits", "Slot", "spawner_main"]

#: Largest answer line a child may send; a bigger one fails the call.
MAX_ANSWER_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How calls run: seccomp or not, CPU seconds and wall clock per call, and
    whether each call gets a process of its own (``fork_per_call``) or runs in
    its template's process, and whether that is one per (scope, template)
    (``per_template``) or one per scope (``VERIFLEET_SANDBOX_FRESH=job``)."""

    seccomp: bool
    cpu_seconds: int
    timeout: float
    fork_per_call: bool = True
    per_template: bool = True


@dataclass(frozen=True)
class Slot:
    """Two pipes between the router and one child of the spawner.

    ``request_r``/``answer_w`` are the child's ends; the router writes
    ``request_w`` and reads ``answer_r`` (and keeps the child's ends too, to
    throw away what a killed child left in them).
    """

    index: int
    request_r: int
    request_w: int
    answer_r: int
    answer_w: int

    @classmethod
    def open(cls, index: int) -> Slot:
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        return cls(index, request_r, request_w, answer_r, answer_w)


def spawner_main(control_r: int, slots: list[Slot], limits: Limits, status_w: int) -> None:
    """The spawner's loop: one slot number per line on ``control_r``, one child
    forked into that slot for each; each child that ends or stops is reported
    on ``status_w`` as ``pid status`` (a ``waitpid`` status), so that the router
    can say a process was stopped or killed from outside rather than blame its
    template. Never returns."""
    keep = {control_r, status_w} | {fd for s in slots for fd in (s.request_r, s.answer_w)}
    close_all_but(keep)
    os.set_blocking(status_w, False)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: _report_children(status_w))
    if limits.seccomp:
        global _UNIT_PROGRAM
        from ._seccomp import PreparedProgram, install_filter, unit_program

        # The unit layer, built once here: every child loads it with one
        # system call instead of building a filter with libseccomp (which
        # costs more than a call, most of it in pages the fork must copy).
        _UNIT_PROGRAM = PreparedProgram(unit_program())
        install_filter("spawner")
    parent = os.getpid()
    # Objects that exist now are never collected in a child: its garbage
    # collector does not touch (and so copy) the pages they live on.
    gc.freeze()
    buffer = b""
    while True:
        chunk = os.read(control_r, 4096)
        if not chunk:
            os._exit(0)
        buffer += chunk
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            slot = slots[int(line)]
            if os.fork() == 0:
                try:
                    _slot_main(slot, parent, limits)
                finally:
                    os._exit(70)


def _report_children(status_w: int) -> None:
    """Reap every child that ended and report it, and every one that stopped
    (the router reads the reports; when it does not keep up, reports are
    dropped rather than block the spawner)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return
        if pid == 0:
            return
        with contextlib.suppress(OSError):
            os.write(status_w, f"{pid} {status}\n".encode())


def _slot_main(slot: Slot, parent: int, limits: Limits) -> None:
    """A new child in ``slot``: says its pid, takes its first request, and
    becomes a template process or answers one trait call."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    die_with_parent(parent)
    close_all_but({slot.request_r, slot.answer_w})
    # Written by hand, not by pydantic: a model here would write to (and so
    # copy) pages of the spawner's heap in every new child.
    write_all(slot.answer_w, b'{"pid":%d}\n' % os.getpid())
    line = read_line(slot.request_r, None, limit=MAX_ANSWER_BYTES)
    # A group of its own (the router kills the whole group) once it has work:
    # a spare forked ahead (``Router._spawn``) stays in the spawner's group,
    # so that only the processes that serve requests lead groups; until here
    # it runs no code but this, and the router kills it by its pid.
    os.setpgid(0, 0)
    request = decode_request(line)
    if isinstance(request, DescribeRequest | EvaluateRequest):
        _template_main(slot, request, line, limits)
    elif isinstance(request, RegexTraitRequest | StaticCheckRequest) or not limits.fork_per_call:
        # A regex or a static check runs no code of anyone's; a trait in ``template`` mode keeps
        # its process for its job: both serve call after call here.
        _enter_unit(limits, collect=True)
        _serve(slot, line, request, limits)
    else:
        _enter_unit(limits)
        write_all(slot.answer_w, _answer(line, request))


def _serve(slot: Slot, line: bytes, first: Request, limits: Limits) -> None:
    """Answer this request (``first``, decoded) and every later one in this
    process (never returns)."""
    request: Request | None = first
    while True:
        _arm_cpu(limits.cpu_seconds, keep_hard=True)
        write_all(slot.answer_w, _answer(line, request))
        line = read_line(slot.request_r, None, limit=MAX_ANSWER_BYTES)
        request = None


def _template_main(
    slot: Slot, first: DescribeRequest | EvaluateRequest, line: bytes, limits: Limits
) -> None:
    """Serve the template requests of one scope (a job's templates, or one
    template of the unscoped callers): compile each template once, here (its
    class body runs in this process), and run each call in a fresh child (or
    here, in ``template`` mode), until the router kills this process."""
    global _COMPILED, _SLOT_ANSWER
    _SLOT_ANSWER = slot.answer_w
    become_subreaper()
    if limits.seccomp and limits.fork_per_call:
        from ._seccomp import install_filter

        # Class bodies run here and calls are forked from here: only a plain
        # fork (a CLONE_PARENT clone would leave this process's group and
        # outlive it); each call's child adds the unit layer.
        install_filter("template-fork")
    elif limits.seccomp:
        # Calls run here too: the unit layer from the start, class bodies
        # included (no process, no signal, no prctl; nothing compiling needs).
        _load_unit_layer()
    compiled: dict[str, type[BaseAnswer]] = {}
    request: DescribeRequest | EvaluateRequest = first
    entered = False
    while True:
        cls = compiled.get(request.digest)
        failure = None
        if cls is None:
            cls, failure = _compile(request, limits)
            if cls is not None:
                compiled[request.digest] = cls
                gc.freeze()
        if failure is not None:
            reply = failure
            if _has_children():
                # Whatever the class body started dies with this process.
                write_all(slot.answer_w, reply)
                os._exit(71)
        else:
            _COMPILED = cls
            if limits.fork_per_call:
                reply = _call_in_child(line, request.id, limits)
            else:
                if not entered:
                    # Calls run here, one after the other: this process is their sandbox.
                    _enter_unit(limits, collect=True)
                    entered = True
                # More CPU than the router's wall clock allows: its kill comes
                # first and names the cause.
                _arm_cpu(2 * limits.cpu_seconds + 1, keep_hard=True)
                reply = _answer(line, request)
        write_all(slot.answer_w, reply)
        line = read_line(slot.request_r, None, limit=MAX_ANSWER_BYTES)
        try:
            decoded = decode_request(line)
        except ValidationError as exc:
            write_all(slot.answer_w, encode(Reply.failure(None, "protocol", str(exc)[:500])))
            continue
        if not isinstance(decoded, DescribeRequest | EvaluateRequest):
            message = "a template process serves template requests only"
            write_all(slot.answer_w, encode(Reply.failure(decoded.id, "protocol", message)))
            continue
        request = decoded


def _compile(
    request: DescribeRequest | EvaluateRequest, limits: Limits
) -> tuple[type[BaseAnswer] | None, bytes | None]:
    """Compile the request's template here: (class, None), or (None, the
    failure reply). The class body gets a call's CPU allowance (soft limit only:
    this process lives on)."""
    if request.source is None:
        return None, encode(Reply.failure(request.id, "need_source", "template source unknown"))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime) + 1 + limits.cpu_seconds
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard < 0 else min(soft, hard), hard))
    try:
        cls = compile_template(request.source, request.question_id)
    except RequestError as exc:
        return None, encode(Reply.failure(request.id, exc.kind, exc.message))
    except (MemoryError, RecursionError) as exc:
        message = f"compiling the template: {type(exc).__name__}"
        return None, encode(Reply.failure(request.id, "crash", message))
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
    if _has_children():
        message = "the template's code started a process while compiling; it is refused"
        return None, encode(Reply.failure(request.id, "template", message))
    return cls, None


#: The answer pipe of this process's slot (a template process's).
_SLOT_ANSWER = -1
#: The compiled class of this template process (set once it compiled).
_COMPILED: type[BaseAnswer] | None = None
#: The unit seccomp layer, built once by the spawner before it forks.
_UNIT_PROGRAM: PreparedProgram | None = None
#: Whether this process loaded the unit layer already.
_UNIT_LOADED = False


def _has_children() -> bool:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True if pid == 0 else _has_children()


def _call_in_child(line: bytes, request_id: int | None, limits: Limits) -> bytes:
    """Fork a child for one call, wait for its answer within the wall clock,
    and return the answer line (a failure if it overran, died or said nothing)."""
    answer_r, answer_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            die_with_parent(parent)
            close_all_but({answer_w})
            _enter_unit(limits)
            write_all(answer_w, _answer(line))
        finally:
            os._exit(0)
    os.close(answer_w)
    try:
        reply = read_line(answer_r, limits.timeout, limit=MAX_ANSWER_BYTES) + b"\n"
    except Deadline:
        message = f"no answer within {limits.timeout:g} s (wall-clock limit); the call was stopped"
        _give_up_call(encode(Reply.failure(request_id, "timeout", message)))
    except OverflowError:
        message = f"answer larger than {MAX_ANSWER_BYTES} bytes"
        _give_up_call(encode(Reply.failure(request_id, "crash", message)))
    except EOFError:
        reply = b""
    finally:
        os.close(answer_r)
    _, status = os.waitpid(pid, 0)
    if not reply:
        reply = encode(
            Reply.failure(request_id, "crash", f"the call's process {signal_name(status)}")
        )
    return reply


def _give_up_call(reply: bytes) -> None:
    """Answer a call whose process overran, then exit (never returns): the
    call's process gets SIGKILL from the kernel as this one ends (its parent
    death signal), and the router kills this process's group when it notices.
    Exiting, not a SIGKILL to its own group, leaves an exit status: the router
    tells this end from a kill from outside, which it reports. The router
    starts a fresh process for the next call."""
    write_all(_SLOT_ANSWER, reply)
    os._exit(72)


def _enter_unit(limits: Limits, *, collect: bool = False) -> None:
    """Last steps before untrusted code: no collector work in a short-lived
    child (collecting would copy pages), the CPU limit, the seccomp layer."""
    if not collect:
        gc.disable()
        _arm_cpu(limits.cpu_seconds)
    if limits.seccomp:
        _load_unit_layer()


def _load_unit_layer() -> None:
    """Add the unit seccomp layer to this process, once (the spawner's
    prepared program; building it here only if there is none).

    Raises:
        SeccompUnavailable: the kernel refused it; no untrusted code may run.
    """
    global _UNIT_LOADED
    if _UNIT_LOADED:
        return
    if _UNIT_PROGRAM is not None:
        _UNIT_PROGRAM.load()
    else:
        from ._seccomp import install_filter

        install_filter("unit")
    _UNIT_LOADED = True


def _arm_cpu(seconds: int, *, keep_hard: bool = False) -> None:
    """Allow ``seconds`` more CPU seconds from now (SIGXCPU kills past them).
    A process that serves more calls keeps its hard limit (it cannot raise it
    again); a call's own child gets a hard limit too."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime) + 1 + seconds
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if keep_hard:
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard < 0 else min(soft, hard), hard))
    else:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))


def _answer(line: bytes, decoded: Request | None = None) -> bytes:
    """Run one request (in the process that is to run its untrusted code) and
    return its reply line; nothing raises out of here. ``decoded`` is ``line``
    already decoded, when the caller has it (decoding the same line twice cost
    a fresh template process ~0.2 ms)."""
    request_id: int | None = None
    request: object = None
    try:
        request = decoded if decoded is not None else decode_request(line)
        request_id = request.id
        result = _run(request)
        reply = Reply.success(request.id, result)
    except ValidationError as exc:
        reply = Reply.failure(request_id, "protocol", str(exc)[:500])
    except RequestError as exc:
        reply = Reply.failure(request_id, exc.kind, exc.message)
    except MemoryError:
        reply = Reply.failure(request_id, "crash", "MemoryError")
    except RecursionError as exc:
        reply = Reply.failure(request_id, "crash", f"RecursionError: {exc}")
    except BaseException as exc:  # template code may raise its own BaseException
        reply = Reply.failure(request_id, "internal", f"{type(exc).__name__}: {exc}")
    try:
        return refuse_huge_reply(encode(reply), request)
    except (TypeError, ValueError) as exc:
        failure = Failure(kind="internal", message=f"answer is not JSON: {exc}")
        return encode(Reply(id=request_id, ok=False, error=failure))


def _run(request: object) -> BaseModel:
    if isinstance(request, DescribeRequest | EvaluateRequest):
        if _COMPILED is None:
            raise RequestError("protocol", "a template request reached a one-shot child")
        if isinstance(request, DescribeRequest):
            return describe(_COMPILED, request)
        return evaluate(_COMPILED, request)
    if isinstance(request, TraitRequest):
        return trait(request)
    if isinstance(request, CheckTraitRequest):
        return check_trait(request)
    if isinstance(request, RegexTraitRequest):
        return regex_trait(request)
    if isinstance(request, StaticCheckRequest):
        return static_check(request)
    if isinstance(request, ScenarioCodeRequest):
        return run_scenario_code(request)
    raise RequestError("protocol", f"{type(request).__name__} is not run in a child")
