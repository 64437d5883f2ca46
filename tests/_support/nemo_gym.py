"""NeMo Gym 0.7.0 from PyPI, for tests that run its own tooling against
``verifleet serve``.

:func:`nemo_gym_venv` makes (once, then reuses) a venv of its own under
``~/.cache/verifleet/nemo-gym-0.7.0`` with ``pip install nemo-gym==0.7.0``: the
package registry is the only network it needs. nemo-gym 0.7.0 declares Python
>= 3.13.14 but installs and runs on 3.13.0 (``--ignore-requires-python``); the
interpreter is ``VERIFLEET_NEMO_GYM_PYTHON``, else ``python3.13`` on PATH, else
pyenv's 3.13. NeMo Gym's launcher makes a venv per server with ``uv``; the tests
point it at this one instead (``++skip_venv_if_present`` and ``++uv_venv_dir``,
:func:`server_venvs`).

:class:`PolicyStub` is the policy under training: an OpenAI-compatible chat
endpoint on 127.0.0.1 that answers each question with a scripted reply.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

NEMO_GYM_VERSION = "0.7.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "verifleet"
VENV = CACHE / f"nemo-gym-{NEMO_GYM_VERSION}"
_DONE = VENV / ".verifleet-installed"

#: Server directories NeMo Gym's launcher starts in these tests: each gets the venv.
SERVERS = (
    "resources_servers/verifleet",
    "responses_api_agents/simple_agent",
    "responses_api_models/vllm_model",
    "environment_servers/legacy_agent",
)


def _python313() -> str:
    """An interpreter of Python 3.13 (see the module docstring).

    Raises:
        RuntimeError: none found (the message says how to give one).
    """
    given = os.environ.get("VERIFLEET_NEMO_GYM_PYTHON")
    candidates = [given] if given else []
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += sorted(str(p / "bin" / "python3") for p in pyenv.glob("3.13*"))
    candidates.append(shutil.which("python3.13") or "")
    for candidate in candidates:
        # A pyenv shim exists but may refuse to run: ask the interpreter itself.
        if candidate and Path(candidate).exists():
            probe = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 13))"],
                capture_output=True,
                text=True,
            )
            if probe.stdout.strip() == "True":
                return candidate
    raise RuntimeError(
        "NeMo Gym 0.7.0 needs Python 3.13: set VERIFLEET_NEMO_GYM_PYTHON to one "
        "(e.g. `pyenv install 3.13`)"
    )


def nemo_gym_venv() -> Path:
    """The venv with nemo-gym 0.7.0, made on first use (minutes), reused after.

    Safe from several test processes at once (a file lock); a half-made venv
    (an interrupted install) is made again.

    Raises:
        RuntimeError: no Python 3.13, or pip failed (its output in the message).
    """
    if _DONE.exists():
        return VENV
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"nemo-gym-{NEMO_GYM_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _DONE.exists():
            return VENV
        shutil.rmtree(VENV, ignore_errors=True)
        python = _python313()
        steps = [
            [python, "-m", "venv", str(VENV)],
            [
                str(VENV / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--ignore-requires-python",
                f"nemo-gym=={NEMO_GYM_VERSION}",
            ],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(step)} failed:\n{done.stdout}\n{done.stderr}")
        _DONE.write_text(NEMO_GYM_VERSION)
    return VENV


def server_venvs(root: Path, venv: Path) -> Path:
    """A ``uv_venv_dir`` under ``root`` in which every server of :data:`SERVERS`
    finds ``venv`` (a link as ``<type>/<name>/.venv``)."""
    for server in SERVERS:
        link = root / server / ".venv"
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(venv, target_is_directory=True)
    return root


def nemo_env(venv: Path) -> dict[str, str]:
    """The environment NeMo Gym's commands run in: its venv first on PATH, Ray on
    loopback only and patient, no telemetry, no proxies."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(
        PATH=f"{venv / 'bin'}:{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        RAY_USAGE_STATS_ENABLED="0",
        # On a busy machine Ray's dashboard agent takes longer than the raylet's
        # default wait to start (measured: 53 s at load average 13).
        RAY_raylet_start_wait_time_s="600",
        RAY_agent_register_timeout_ms="600000",
        WANDB_MODE="disabled",
        HF_HUB_OFFLINE="1",
        NO_PROXY="*",
        PYTHONUNBUFFERED="1",
    )
    return env


class PolicyStub:
    """A scripted policy: ``POST /v1/chat/completions`` answers the last user
    message with ``replies[text]`` (``"I do not know."`` for an unknown one).

    Args:
        replies: Question text -> the answer the policy gives.
    """

    def __init__(self, replies: Mapping[str, str]) -> None:
        self.replies = dict(replies)
        self.calls = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._reply({"object": "list", "data": [{"id": "policy", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.calls += 1
                question = ""
                for message in body.get("messages") or []:
                    if message.get("role") == "user":
                        content = message.get("content")
                        if isinstance(content, list):
                            content = "".join(str(p.get("text", "")) for p in content)
                        question = str(content or "").strip()
                text = stub.replies.get(question, "I do not know.")
                self._reply(
                    {
                        "id": f"chatcmpl-{stub.calls}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model") or "policy",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
                    }
                )

            def _reply(self, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> PolicyStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
