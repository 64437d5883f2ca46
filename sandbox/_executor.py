"""The executor process: ``python -m verifleet.sandbox._executor``.

Started by the host pool (inside bubblewrap in strict mode). Order of work:

1. Move the protocol off fd 1: requests arrive on stdin, answers leave on a
   private duplicate of stdout, and fd 1 / ``sys.stdout`` point at stderr, so a
   template's ``print`` cannot forge an answer.
2. Set rlimits: address space, open files, file size 0, no core dumps, no new
   processes; CPU seconds are re-armed before every request.
3. Import the template runtime and warm it up (so no import happens after the
   filter that a filter could break).
4. Install the seccomp filter (strict and seccomp modes); a failure is fatal.
5. Answer one JSON line per request line until stdin closes.

Each answer is ``{"id", "ok": true, "result"}`` or ``{"id", "ok": false,
"error": {"kind", "message"}}``. The first line written is the hello:
``{"hello": {"seccomp": bool, "pid": int}}`` or ``{"fatal": message}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
from typing import IO, Any

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


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="verifleet.sandbox._executor")
    parser.add_argument("--mode", required=True)
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--cpu-seconds", type=int, required=True)
    parser.add_argument("--max-templates", type=int, default=1024)
    return parser.parse_args(argv)


def _protocol_streams() -> tuple[IO[bytes], IO[bytes]]:
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
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
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    # Writing past RLIMIT_FSIZE should fail with EFBIG, not kill the executor.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _arm_cpu(seconds: int) -> None:
    """Allow ``seconds`` more CPU seconds from now (SIGXCPU kills past them)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _write(stream: IO[bytes], message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":"), allow_nan=True).encode("utf-8") + b"\n"
    view = memoryview(data)
    while view:
        written = stream.write(view)
        view = view[written or 0 :]


def main(argv: list[str] | None = None) -> int:
    """Run the executor until stdin closes. Returns the exit status."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    requests, answers = _protocol_streams()
    try:
        _set_limits(args.memory_mb)
        from verifleet.sandbox._runtime import RequestError, Runtime
        from verifleet.schemas import use_code_checkers
        from verifleet.schemas._checkers import IN_PROCESS

        use_code_checkers(IN_PROCESS)  # this process is the sandbox

        runtime = Runtime(max_templates=args.max_templates)
        runtime.describe({"template_id": "warmup", "source": _WARMUP_TEMPLATE, "question_id": "w"})
        runtime.evaluate({"template_id": "warmup", "question_id": "w", "data": {"value": "x"}})
        seccomp = args.mode in ("strict", "seccomp")
        if seccomp:
            from verifleet.sandbox._seccomp import install_filter

            install_filter()
    except Exception as exc:
        _write(answers, {"fatal": f"{type(exc).__name__}: {exc}"})
        return 3
    _write(answers, {"hello": {"seccomp": seccomp, "pid": os.getpid()}})
    for line in requests:
        try:
            request = json.loads(line)
            request_id = request["id"]
            handler = runtime.handlers[request["op"]]
        except Exception as exc:
            _write(
                answers,
                {"id": None, "ok": False, "error": {"kind": "protocol", "message": str(exc)}},
            )
            continue
        _arm_cpu(args.cpu_seconds)
        try:
            result = handler(request)
        except RequestError as exc:
            reply = {
                "id": request_id,
                "ok": False,
                "error": {"kind": exc.kind, "message": exc.message},
            }
        except MemoryError:
            reply = {
                "id": request_id,
                "ok": False,
                "error": {"kind": "crash", "message": "MemoryError"},
            }
        except RecursionError as exc:
            reply = {
                "id": request_id,
                "ok": False,
                "error": {"kind": "crash", "message": f"RecursionError: {exc}"},
            }
        except BaseException as exc:  # template code may raise its own BaseException
            reply = {
                "id": request_id,
                "ok": False,
                "error": {"kind": "internal", "message": f"{type(exc).__name__}: {exc}"},
            }
        else:
            reply = {"id": request_id, "ok": True, "result": result}
        try:
            _write(answers, reply)
        except (TypeError, ValueError) as exc:
            _write(
                answers,
                {
                    "id": request_id,
                    "ok": False,
                    "error": {"kind": "internal", "message": f"answer is not JSON: {exc}"},
                },
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
