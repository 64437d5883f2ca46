"""The smoke check of llama-server: one completion before first use on a machine.

The crash this guards against (llama.cpp's AMX repack path on Intel Xeons) cannot be
produced on demand on other CPUs, so most tests here use a stand-in ``llama-server``:
a small Python HTTP server that serves /health and /v1/chat/completions like the real
one, and kills itself with SIGSEGV at start unless given ``--no-repack`` (when told
to crash). The last test runs the real bundled server (the prebuilt one where it runs)
with the options it chose.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from verifleet.orchestrator import LocalLLMServer
from verifleet.orchestrator._localllm import (
    SAFE_RUNTIME_ARGS,
    LocalLLMError,
    runtime_args,
)

_FAKE = """#!{python}
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
mode = {mode!r}
if mode == "always" or (mode == "repack" and "--no-repack" not in args):
    os.kill(os.getpid(), signal.SIGSEGV)
port = int(args[args.index("--port") + 1])

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self._send({{"status": "ok"}})
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send({{"choices": [{{"message": {{"role": "assistant", "content": "hi"}}}}]}})

HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def _fake_server(tmp_path: Path, mode: str) -> tuple[Path, Path]:
    calls = tmp_path / "calls.txt"
    binary = tmp_path / "llama-server"
    binary.write_text(_FAKE.format(python=sys.executable, calls=str(calls), mode=mode))
    binary.chmod(0o755)
    return binary, calls


@pytest.fixture
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The smoke records of the stand-in binaries go to tmp_path, not the real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def _started_args(calls: Path) -> list[str]:
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_working_binary_needs_no_extra_options_and_is_checked_once(tmp_cache: Path) -> None:
    binary, calls = _fake_server(tmp_cache, "never")
    assert runtime_args(binary) == ()
    assert runtime_args(binary) == ()
    assert len(_started_args(calls)) == 1


def test_a_binary_that_crashes_is_retried_with_no_repack_and_that_is_remembered(
    tmp_cache: Path,
) -> None:
    binary, calls = _fake_server(tmp_cache, "repack")
    assert runtime_args(binary) == SAFE_RUNTIME_ARGS
    first, second = _started_args(calls)
    assert "--no-repack" not in first.split() and "--no-repack" in second.split()
    # The choice is on disk: a new process (here: a cleared memo) does not check again.
    from verifleet.orchestrator._localllm import smoke

    smoke._CHECKED.clear()
    assert runtime_args(binary) == SAFE_RUNTIME_ARGS
    assert len(_started_args(calls)) == 2


def test_a_binary_that_always_crashes_fails_with_every_attempt_and_its_log(
    tmp_cache: Path,
) -> None:
    binary, _ = _fake_server(tmp_cache, "always")
    with pytest.raises(LocalLLMError) as caught:
        runtime_args(binary)
    message = str(caught.value)
    assert "with default options" in message and "with --no-repack" in message
    assert message.count("status -11") == 2
    logs = [
        line.split("(log: ")[-1].rstrip(")") for line in message.splitlines() if "(log: " in line
    ]
    assert len(logs) == 2 and all(Path(log).is_file() for log in logs)


def test_the_bundled_server_starts_with_the_options_the_check_chose(
    local_llm: LocalLLMServer,
) -> None:
    assert local_llm.runtime is not None
    assert local_llm.runtime_args == runtime_args(local_llm.runtime)
    body = {
        "model": local_llm.model_name,
        "messages": [{"role": "user", "content": "Name a colour."}],
        "max_tokens": 8,
    }
    reply = httpx.post(f"{local_llm.base_url}/chat/completions", json=body, timeout=120)
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"].strip()
