"""The processes a command started, read from /proc: to check that none
outlives it."""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["Process", "descendants", "still_running"]

#: (pid, start time in clock ticks since boot, command line): the start time
#: tells a process from a later one that got its pid.
Process = tuple[int, int, str]


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of ``pid``, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0], int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def descendants(pid: int) -> list[Process]:
    """Every live process under ``pid`` (children, theirs, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        stat = _stat(int(entry.name))
        if stat is not None:
            parents.setdefault(stat[0], []).append(int(entry.name))
    found: list[Process] = []
    stack = list(parents.get(pid, []))
    while stack:
        child = stack.pop()
        stat = _stat(child)
        if stat is not None and stat[1] != "Z":
            found.append((child, stat[2], _cmdline(child)))
        stack.extend(parents.get(child, []))
    return found


def still_running(processes: list[Process], wait: float = 20.0) -> list[Process]:
    """Those of ``processes`` still running (not gone, not a zombie) after up
    to ``wait`` seconds: a process told to stop by its parent's death takes a
    moment to exit."""
    deadline = time.monotonic() + wait
    while True:
        left = []
        for process in processes:
            stat = _stat(process[0])
            if stat is not None and stat[1] != "Z" and stat[2] == process[1]:
                left.append(process)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)
