"""The executor: ``python -m verifleet.sandbox._executor``.

Started by the host pool (inside bubblewrap in strict mode). This process is the
*router*: it reads the host's requests and hands each to a child (see
``_children``), and never runs template or trait code itself. Order of work:

1. Move the protocol off fd 1: requests arrive on stdin, answers leave on a
   private duplicate of stdout, and fd 1 / ``sys.stdout`` point at stderr, so
   nothing printed can forge an answer.
2. Set rlimits: address space (per process), open files, file size 0, no core
   dumps.
3. Import the template runtime and warm it up, so children start warm.
4. Open the slot pipes and fork the spawner, before any request is read: the
   spawner (and so every child) never holds another request's data.
5. Install the router's seccomp filter (strict and seccomp modes; fatal on
   failure), then answer one line per request until stdin closes.

The first line written is a :class:`~._protocol.Hello`; every other line is a
:class:`~._protocol.Reply` to one request.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
from typing import IO

from pydantic import ValidationError

from ._children import MAX_ANSWER_BYTES, Limits, Slot, spawner_main
from ._digits import undecodable_request
from ._pipes import write_all
from ._protocol import Hello, PingRequest, PingResult, Reply, decode_request, encode

_WARMUP_TEMPLATE = """
import re
from verifleet.templates import BaseAnswer

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "x"}

    def verify(self) -> bool:
        return bool(re.match("x", self.value))
"""

#: Open files per process: the router holds four descriptors per slot.
_MAX_FILES = 1024

#: Slots' worth of descriptors (four each) left to the router's other files
#: (stdio, the protocol's duplicates, the spawner's control and status pipes).
_OTHER_FILES_SLOTS = 8

#: Template processes an executor may hold beyond ``--template-processes``
#: while their units wait for the model (described, not evaluated yet): a
#: local run has up to 64 units in flight over two executors, and a process
#: stopped before its unit's evaluation compiles its template twice (300
#: one-unit questions, 64 in flight: 564 compiles with 16 slots, 357 with 48).
_WAITING_PROCESSES = 48


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="verifleet.sandbox._executor")
    parser.add_argument("--mode", required=True)
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--cpu-seconds", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--template-processes", type=int, default=16)
    parser.add_argument("--max-templates", type=int, default=1024)
    parser.add_argument("--templates-per-process", type=int, default=512)
    parser.add_argument("--fresh-state", choices=("call", "template", "job"), default="template")
    return parser.parse_args(argv)


def _protocol_streams() -> tuple[int, int]:
    requests = os.dup(0)
    answers = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr
    return requests, answers


def _set_limits(memory_mb: int) -> None:
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_NOFILE, (_MAX_FILES, _MAX_FILES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Writing past RLIMIT_FSIZE should fail with EFBIG, not kill the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _not_dumpable() -> None:
    import ctypes

    pr_set_dumpable = 4
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _warm_up() -> None:
    """Import and exercise what children run, once, before the spawner forks."""
    from ._protocol import DescribeRequest, EvaluateRequest, source_digest
    from ._runtime import compile_template, describe, evaluate

    digest = source_digest(_WARMUP_TEMPLATE)
    cls = compile_template(_WARMUP_TEMPLATE, "w")
    describe(cls, DescribeRequest(id=0, template_id="warmup", digest=digest))
    evaluate(cls, EvaluateRequest(id=0, template_id="warmup", digest=digest, data={"value": "x"}))


def main(argv: list[str] | None = None) -> int:
    """Run the executor until stdin closes. Returns the exit status."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    requests, answers = _protocol_streams()
    seccomp = args.mode in ("strict", "seccomp")
    limits = Limits(
        seccomp=seccomp,
        cpu_seconds=args.cpu_seconds,
        timeout=args.timeout,
        fork_per_call=args.fresh_state == "call",
        per_template=args.fresh_state != "job",
    )
    try:
        # Not dumpable (inherited by every child): /proc/<pid>/environ, mem, fd
        # ... of the executor's processes belong to root, so another executor
        # running as the same uid cannot read this one's jobs through /proc.
        _not_dumpable()
        _set_limits(args.memory_mb)
        _warm_up()
        room = _MAX_FILES // 4 - _OTHER_FILES_SLOTS - args.template_processes
        waiting = max(0, min(_WAITING_PROCESSES, room))
        slots = [Slot.open(i) for i in range(args.template_processes + waiting + 1)]
        control_r, control_w = os.pipe()
        # How the spawner's children ended or stopped, for the router's errors.
        status_r, status_w = os.pipe()
        spawner = os.fork()
        if spawner == 0:
            try:
                from ._pipes import die_with_parent

                os.close(requests)
                os.close(answers)
                die_with_parent(os.getppid())
                os.close(status_r)
                spawner_main(control_r, slots, limits, status_w)
            finally:
                os._exit(70)
        os.close(control_r)
        os.close(status_w)
        if seccomp:
            from ._seccomp import install_filter

            install_filter("router")
        from ._router import Router

        router = Router(
            slots,
            control_w,
            status_r,
            spawner,
            limits,
            max_sources=args.max_templates,
            max_classes=args.templates_per_process,
            max_kept=args.template_processes,
        )
    except Exception as exc:
        write_all(answers, encode(Hello(fatal=f"{type(exc).__name__}: {exc}")))
        return 3
    write_all(answers, encode(Hello(seccomp=seccomp, pid=os.getpid(), uid=os.getuid())))
    stream: IO[bytes] = os.fdopen(requests, "rb")
    for line in stream:
        try:
            request = decode_request(line)
        except ValidationError as exc:
            write_all(answers, undecodable_request(line, str(exc)))
            continue
        if isinstance(request, PingRequest):
            reply = encode(
                Reply.success(
                    request.id, PingResult(cpu_seconds=_cpu_seconds(), compiled=router.compiled)
                )
            )
        else:
            reply = router.handle(request, line)
        write_all(answers, reply)
    return 0


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["MAX_ANSWER_BYTES", "main"]
