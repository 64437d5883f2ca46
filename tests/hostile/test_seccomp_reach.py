"""In ``seccomp`` mode template code cannot reach the worker through the
operating system (issue 34, item 2).

Without bubblewrap an executor shares the worker's filesystem and, before this
test's fix, its uid: a template that got past the interpreter guard read
``/proc/<worker>/environ`` (the model API key, the Redis URL with its password)
and killed any process of the worker's user. Here a "worker" process (a Python
process whose environment holds the secrets, as ``verifleet worker``'s does)
runs ``tests/hostile/seccomp/reach_the_worker.tpl`` in a sandbox pool; the
template reports in its own error what it read and whom it could signal.

Control: the same template in ``rlimits-only`` mode (separate processes, the
worker's uid, no seccomp) reads the secrets and kills the victim, so the test
can see both effects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ATTACK = Path(__file__).resolve().parent / "seccomp" / "reach_the_worker.tpl"

#: The worker's secrets: what must never reach template code.
API_KEY = "ENVSECRET-sk-5c1e7a-DO-NOT-LEAK"
REDIS_URL = "redis://:ENVSECRET-redis-password@127.0.0.1:21101/0"

# The worker: starts a pool in the given mode, runs the attack, prints what the
# template's verification said (its error text carries the loot).
_WORKER = textwrap.dedent(
    """
    import json, os, sys
    from verifleet.sandbox import SandboxMode, SandboxPool, SandboxSettings
    from verifleet.sandbox._identity import executor_identity

    mode = SandboxMode(sys.argv[1])
    source = open(sys.argv[2]).read().replace("__WORKER__", str(os.getpid()))
    source = source.replace("__VICTIM__", sys.argv[3])
    pool = SandboxPool(SandboxSettings(mode=mode, pool_size=1, timeout=20))
    try:
        handle = pool.load_template(source, "attack")
        evaluation = pool.evaluate(handle, {"value": "x"}, "")
        error = evaluation.verification.error if evaluation.verification else evaluation.invalid
        print(json.dumps({"error": error, "separation": executor_identity(mode).separation}))
    finally:
        pool.close()
    """
)


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the worker's user that template code must not be able to kill."""
    proc = subprocess.Popen(["sleep", "600"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _attack(mode: str, victim: subprocess.Popen[bytes]) -> dict[str, str]:
    env = dict(os.environ, OPENAI_API_KEY=API_KEY, VERIFLEET_REDIS_URL=REDIS_URL)
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, mode, str(ATTACK), str(victim.pid)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reply: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    assert "LEAK[" in reply["error"], reply  # the attack ran to its end
    return reply


def test_seccomp_mode_keeps_the_workers_secrets_and_processes_out_of_reach(
    victim: subprocess.Popen[bytes],
) -> None:
    reply = _attack("seccomp", victim)
    assert reply["separation"] in ("uid", "namespaces")
    assert "ENVSECRET" not in reply["error"].split("LEAK[", 1)[1].split("]", 1)[0]
    assert API_KEY not in reply["error"] and "redis-password" not in reply["error"]
    # Neither the victim nor the worker could be signalled.
    assert "victim=signalled" not in reply["error"]
    assert "worker=signalled" not in reply["error"]
    assert victim.poll() is None
    if reply["separation"] == "namespaces":
        # Its own pid namespace and /proc: the worker is not even visible.
        assert "seen=False" in reply["error"]


def test_control_rlimits_only_mode_lets_the_same_code_reach_the_worker(
    victim: subprocess.Popen[bytes],
) -> None:
    reply = _attack("rlimits-only", victim)
    assert reply["separation"] == "none"
    assert API_KEY in reply["error"] and "ENVSECRET-redis-password" in reply["error"]
    assert "victim=signalled" in reply["error"] and "worker=signalled" in reply["error"]
    assert victim.wait(timeout=30) == -9
