"""The processes a command started, read from /proc: to check that none
outlives it."""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["Process", "descendants", "spawner_children", "still_running"]

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


def spawner_children() -> dict[int, bool]:
    """Children of the spawners of this process's sandbox executors, each with
    whether it leads a process group of its own (a template process does; a
    spare forked ahead does not until its first request). The router is the
    executor process whose parent is not one (in ``seccomp`` mode it may run
    under ``unshare`` or another uid); its child is the spawner."""
    parents: dict[int, int] = {}
    groups: dict[int, int] = {}
    executor: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        parents[int(name)], groups[int(name)] = int(fields[1]), int(fields[2])
        # The executor's interpreter (not an ``unshare`` that starts it).
        if b"verifleet.sandbox._executor" in command and b"python" in command.split(b"\0")[0]:
            executor.add(int(name))

    def mine(pid: int) -> bool:  # other test runs on this machine have executors too
        while pid in parents and pid != os.getpid():
            pid = parents[pid]
        return pid == os.getpid()

    routers = {pid for pid in executor if parents[pid] not in executor and mine(pid)}
    spawners = {pid for pid in executor if parents[pid] in routers}
    return {pid: groups[pid] == pid for pid in executor if parents[pid] in spawners}
