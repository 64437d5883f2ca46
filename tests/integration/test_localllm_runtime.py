"""Which llama.cpp server runs the bundled model: the prebuilt one, else the source build.

The prebuilt server (the ``xllamacpp`` wheel) runs for real here. The fallback to the
source build is checked on every run against a stand-in for the cached build
(:func:`source_stand_in`: a ``llama-server`` in the build cache that runs the prebuilt
server), so the choice, its smoke check and the launch of the source runtime are the
real ones without compiling llama.cpp. The tests that need the real source build are
marked ``source_build``: deselected by default, run by ``scripts/test-source-build.sh``
(which compiles it, 10-12 minutes on two cores, then cached). A CPU the prebuilt wheel
cannot run on (no AVX2), and a prebuilt server that crashes, cannot be had on demand:
those tests replace only the CPU-flag reader or the prebuilt server's command (with a
stand-in that dies with SIGSEGV), and say so.
"""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from _support import llm as llm_support

from verifleet.orchestrator import LocalLLMServer
from verifleet.orchestrator._localllm import (
    PREBUILT_VERSION,
    SAFE_RUNTIME_ARGS,
    LLMRuntime,
    LocalLLMError,
    choose_runtime,
    ensure_llama_server,
    find_llama_server,
    llama_server_cache_dir,
    prebuilt_runtime,
    prebuilt_unavailable,
)
from verifleet.orchestrator._localllm import prebuilt as prebuilt_module
from verifleet.orchestrator._localllm import runtime as runtime_module
from verifleet.orchestrator._localllm.prebuilt import prebuilt_command

pytestmark = pytest.mark.integration

local_llm = llm_support.local_llm

_VERDICT = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 40},
        "score": {"type": "integer", "enum": [1, 2, 3]},
    },
    "required": ["answer", "score"],
    "additionalProperties": False,
}


def _structured_reply(server: LocalLLMServer) -> dict[str, object]:
    """One json_schema completion, the way the pipeline's judge asks for one."""
    body = {
        "model": server.model_name,
        "messages": [{"role": "user", "content": "Rate the answer 'Paris' from 1 to 3."}],
        "max_tokens": 256,
        "temperature": 0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": _VERDICT},
        },
    }
    reply = httpx.post(
        f"{server.base_url}/chat/completions", json=body, timeout=120, trust_env=False
    )
    assert reply.status_code == 200, reply.text
    parsed: dict[str, object] = json.loads(reply.json()["choices"][0]["message"]["content"])
    return parsed


@pytest.fixture
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERIFLEET_LLAMA_SERVER", raising=False)
    monkeypatch.delenv("VERIFLEET_LLM_RUNTIME", raising=False)


def test_the_default_runtime_is_the_prebuilt_server_where_it_can_run(
    local_llm: LocalLLMServer,
) -> None:
    assert local_llm.runtime is not None
    expected = "prebuilt" if prebuilt_unavailable() is None else "source"
    assert local_llm.runtime.kind == expected
    if expected == "prebuilt":
        assert local_llm.runtime.command[0] == sys.executable
        assert PREBUILT_VERSION in local_llm.runtime.label
    assert set(_structured_reply(local_llm)) == {"answer", "score"}


def test_the_prebuilt_server_serves_structured_output_with_no_repack(no_override: None) -> None:
    # The options the smoke check falls back to must reach the prebuilt server too.
    runtime = prebuilt_runtime()
    with LocalLLMServer(
        runtime=runtime, parallel=1, ctx_per_slot=1024, extra_args=SAFE_RUNTIME_ARGS
    ) as server:
        assert "--no-repack" in server.command(runtime, Path("model.gguf"))
        parsed = _structured_reply(server)
    assert parsed["score"] in (1, 2, 3) and isinstance(parsed["answer"], str)


def test_the_prebuilt_server_refuses_an_option_it_does_not_know() -> None:
    proc = subprocess.run(
        [*prebuilt_runtime().command, "--model", "m.gguf", "--port", "1", "--flash-attn"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "unrecognized arguments: --flash-attn" in proc.stderr


@pytest.fixture
def source_stand_in(no_override: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cached source build that is the prebuilt server (or, on a machine the
    prebuilt one cannot serve, the real source build), in a build cache of its
    own: what the fallback finds instead of compiling."""
    real = prebuilt_command() if prebuilt_unavailable() is None else (str(ensure_llama_server()),)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    binary = llama_server_cache_dir() / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text(f'#!/bin/sh\nexec {shlex.join(real)} "$@"\n')
    binary.chmod(0o755)
    return binary


@pytest.mark.source_build
def test_the_source_build_serves_structured_output(
    no_override: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cached build, compiled by scripts/test-source-build.sh (see the module doc).
    monkeypatch.setenv("VERIFLEET_LLM_RUNTIME", "source")
    with LocalLLMServer(parallel=1, ctx_per_slot=1024) as server:
        assert server.runtime is not None and server.runtime.kind == "source"
        assert server.runtime.command == (str(find_llama_server()),)
        parsed = _structured_reply(server)
    assert parsed["score"] in (1, 2, 3) and isinstance(parsed["answer"], str)


def _crashing_prebuilt(tmp_path: Path) -> LLMRuntime:
    script = tmp_path / "crashing-server"
    script.write_text("#!/bin/sh\nkill -SEGV $$\n")
    script.chmod(0o755)
    return LLMRuntime("prebuilt", (str(script),), (script,), tmp_path / "cache", "stand-in")


def test_a_prebuilt_server_that_fails_its_smoke_check_falls_back_to_the_source_build(
    source_stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in for a prebuilt server that crashes on this CPU (see the module doc).
    monkeypatch.setattr(runtime_module, "prebuilt_runtime", lambda: _crashing_prebuilt(tmp_path))
    progress = io.StringIO()
    chosen, _args = choose_runtime(progress=progress)
    assert chosen.kind == "source" and chosen.command == (str(source_stand_in),)
    said = progress.getvalue()
    assert "does not serve a completion" in said and "status -11" in said
    assert "using llama-server built from source instead" in said
    # Asked for explicitly, the prebuilt one fails with its attempts, no fallback.
    with pytest.raises(LocalLLMError, match="with --no-repack"):
        choose_runtime(mode="prebuilt")
    # The server a run starts takes the same path and serves from the source runtime.
    with LocalLLMServer(parallel=1, ctx_per_slot=1024) as server:
        assert server.runtime == chosen
        assert server.command(chosen, Path("m.gguf"))[0] == str(source_stand_in)
        parsed = _structured_reply(server)
    assert parsed["score"] in (1, 2, 3) and isinstance(parsed["answer"], str)


def test_a_cpu_without_avx2_gets_the_source_build(
    source_stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pre-AVX2 CPU, as its /proc/cpuinfo flags would say (see the module doc).
    monkeypatch.setattr(prebuilt_module, "cpu_flags", lambda: frozenset({"sse4_2", "avx"}))
    assert "lacks avx2, bmi2, f16c, fma" in (prebuilt_unavailable() or "")
    with pytest.raises(LocalLLMError, match="cannot run here: the CPU lacks avx2"):
        choose_runtime(mode="prebuilt")
    progress = io.StringIO()
    chosen, _args = choose_runtime(progress=progress)
    assert chosen.kind == "source" and chosen.command == (str(source_stand_in),)
    assert "the CPU lacks avx2" in progress.getvalue()


def test_an_unknown_runtime_mode_is_refused(
    no_override: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERIFLEET_LLM_RUNTIME", "gpu")
    with pytest.raises(LocalLLMError, match="VERIFLEET_LLM_RUNTIME='gpu': expected one of auto"):
        LocalLLMServer().start()


def _llm_build(*extra: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "verifleet", "llm", "build", *extra],
        capture_output=True,
        text=True,
        timeout=1800,  # --from-source compiles when nothing is cached
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_llm_build_prints_the_runtime_it_chose(no_override: None) -> None:
    expected = "prebuilt" if prebuilt_unavailable() is None else "source"
    assert _llm_build().startswith(f"runtime: {expected} (")


def test_llm_build_from_source_takes_the_cached_source_build(source_stand_in: Path) -> None:
    # The subprocess inherits the stand-in's build cache (XDG_CACHE_HOME).
    from_source = _llm_build("--from-source")
    assert from_source.startswith("runtime: source (llama-server built from llama-cpp-python")
    assert str(source_stand_in) in from_source
    assert "runtime options: " in from_source


@pytest.mark.source_build
def test_llm_build_from_source_compiles_and_prints_the_source_build(no_override: None) -> None:
    from_source = _llm_build("--from-source")
    assert from_source.startswith("runtime: source (llama-server built from llama-cpp-python")
    assert str(find_llama_server()) in from_source
    assert "runtime options: " in from_source
