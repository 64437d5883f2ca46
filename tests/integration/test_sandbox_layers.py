"""The OS layers of the sandbox, tested as if template code had already escaped
the interpreter-level guard: the probe below runs with full Python (``open``,
``socket``, ``os``) under the same bubblewrap command line and seccomp filter
that executors get, and must be stopped by the OS."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from verifleet.sandbox import SandboxMode, SandboxSettings
from verifleet.sandbox._launch import bwrap_prefix, executor_command

pytestmark = pytest.mark.integration

_PROBE = r"""
import json, os, socket, sys
secret, marker, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
seccomp = sys.argv[4] == "1"
if seccomp:
    from verifleet.sandbox._seccomp import install_filter
    install_filter()
out = {}
def attempt(name, fn):
    try:
        out[name] = ("ok", repr(fn())[:200])
    except BaseException as exc:
        out[name] = ("refused", type(exc).__name__)
attempt("read_passwd", lambda: open("/etc/passwd").read())
attempt("read_secret", lambda: open(secret).read())
attempt("write_marker", lambda: open(marker, "w").write("x"))
attempt("write_tmp", lambda: open("/tmp/inside", "w").write("x"))
def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
    return "connected"
attempt("connect", connect)
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    return pid
attempt("fork", fork)
if seccomp:  # without the filter, exec would replace this probe
    attempt("exec", lambda: os.execv("/bin/sh", ["/bin/sh", "-c", "true"]))
print(json.dumps(out))
"""


def _run_probe(
    prefix: list[str], tmp_path: Path, *, seccomp: bool, hides_files: bool = True
) -> dict[str, list[str]]:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-MARKER")
    marker = tmp_path / "marker.txt"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        proc = subprocess.run(
            [
                *prefix,
                sys.executable,
                "-I",
                "-c",
                _PROBE,
                str(secret),
                str(marker),
                str(port),
                "1" if seccomp else "0",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing inside the sandbox reached the host's loopback
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert ("TOP-SECRET-MARKER" in proc.stdout) is not hides_files
    result: dict[str, list[str]] = json.loads(proc.stdout)
    return result


def test_strict_mode_stops_files_network_and_processes(tmp_path: Path) -> None:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "bubblewrap is installed by scripts/install.sh"
    seen = _run_probe(bwrap_prefix(bwrap), tmp_path, seccomp=True)
    for name in ("read_passwd", "read_secret", "write_marker", "write_tmp", "connect", "fork"):
        assert seen[name][0] == "refused", (name, seen[name])
    assert seen["exec"][0] == "refused"


def test_bubblewrap_alone_hides_the_host(tmp_path: Path) -> None:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    seen = _run_probe(bwrap_prefix(bwrap), tmp_path, seccomp=False)
    # No /etc, no host /tmp, no host network: each refused by the namespaces.
    assert seen["read_passwd"] == ["refused", "FileNotFoundError"]
    assert seen["read_secret"] == ["refused", "FileNotFoundError"]
    assert seen["write_marker"][0] == "refused"
    assert seen["connect"][0] == "refused"


def test_seccomp_alone_refuses_writes_sockets_and_processes(tmp_path: Path) -> None:
    seen = _run_probe([], tmp_path, seccomp=True, hides_files=False)
    for name in ("write_marker", "write_tmp", "connect", "fork", "exec"):
        assert seen[name] == ["refused", "PermissionError"], (name, seen[name])
    # Without bubblewrap, reading is the AST guard's and the namespace's job only:
    # this is what the 'seccomp' downgrade gives up (docs/security.md).
    assert seen["read_secret"][0] == "ok"


def test_strict_mode_refuses_to_start_without_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifleet.sandbox import SandboxPool, SandboxUnavailable

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(FileNotFoundError, match="apt-get install bubblewrap"):
        executor_command(SandboxSettings(mode=SandboxMode.STRICT))
    pool = SandboxPool(SandboxSettings(mode=SandboxMode.STRICT))
    with pytest.raises(SandboxUnavailable) as info:
        pool.start()
    message = str(info.value)
    assert "bwrap" in message and "--sandbox=seccomp" in message and "rlimits-only" in message
    pool.close()
