"""Run a Python module with every Redis round trip counted (a bench wrapper).

Usage: ``python bench/_roundtrips.py OUTFILE -m MODULE [ARGS...]``, e.g. a
worker: ``... OUTFILE -m celery -A verifleet.workers.app worker ...``.

redis-py sends each command, and each pipeline or script call as a whole, with
one ``send_packed_command`` on a connection; counting those calls counts round
trips, kombu's broker traffic (it uses redis-py too) included. The count is
written to OUTFILE every 0.2 s (replaced atomically), so a bench reads it while
the process runs and after it ends.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time
from pathlib import Path
from typing import Any

import redis.connection


def main() -> None:
    """Patch the counter in, start the writer thread, run the module."""
    out = Path(sys.argv[1])
    if sys.argv[2] != "-m":
        raise SystemExit("usage: _roundtrips.py OUTFILE -m MODULE [ARGS...]")
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    lock = threading.Lock()
    count = [0]
    original = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        with lock:
            count[0] += 1
        original(self, command, check_health)

    redis.connection.AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]

    def write() -> None:
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        while True:
            tmp.write_text(str(count[0]))
            os.replace(tmp, out)
            time.sleep(0.2)

    threading.Thread(target=write, name="round-trips", daemon=True).start()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
