"""The llama-server build options (portable feature tiers, never native/AMX) and the
prebuilt server's platform and CPU needs."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from verifleet.orchestrator._localllm import build, prebuilt

_AMX_XEON = frozenset(
    {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512_vnni"}
    | {"amx_tile", "amx_int8", "amx_bf16"}
)


@pytest.fixture
def x86(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")


def test_an_amx_cpu_gets_the_avx2_tier_without_amx_or_avx512(x86: None) -> None:
    options = build.build_options(_AMX_XEON)
    assert "-DGGML_NATIVE=OFF" in options and "-DGGML_AVX2=ON" in options
    assert "-DGGML_AMX_INT8=OFF" in options and "-DGGML_AVX512=OFF" in options
    assert not any(o.endswith("=ON") and ("AMX" in o or "AVX512" in o) for o in options)


def test_older_cpus_get_lower_tiers(x86: None) -> None:
    sse_only = build.build_options(frozenset({"sse4_2", "avx"}))
    assert "-DGGML_SSE42=ON" in sse_only and "-DGGML_AVX2=OFF" in sse_only
    baseline = build.build_options(frozenset())
    assert "-DGGML_SSE42=OFF" in baseline and "-DGGML_AVX=OFF" in baseline


def test_the_cache_directory_changes_with_the_options(
    x86: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "cpu_flags", lambda: _AMX_XEON)
    avx2 = build.llama_server_cache_dir()
    monkeypatch.setattr(build, "cpu_flags", lambda: frozenset({"sse4_2"}))
    sse = build.llama_server_cache_dir()
    assert avx2 != sse and avx2.parent == sse.parent
    # An old native build lived in the unsuffixed directory: never reused.
    assert avx2.name != f"llama-server-{build.LLAMA_CPP_PYTHON_VERSION}"


# --- the prebuilt runtime (xllamacpp) ---------------------------------------------


def test_an_amx_cpu_may_run_the_prebuilt_server_and_an_old_one_may_not(x86: None) -> None:
    # The wheel holds no AVX-512/AMX code, so AMX CPUs need nothing but AVX2 & co.
    amx = prebuilt.prebuilt_unavailable(_AMX_XEON)
    assert amx is None or "installed" in amx or "extension" in amx  # not the CPU
    old = prebuilt.prebuilt_unavailable(frozenset({"sse4_2", "avx", "fma"}))
    assert old == "the CPU lacks avx2, bmi2, f16c, which the wheel is compiled for"


def test_other_platforms_are_not_offered_the_prebuilt_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert "the wheel is for Linux x86-64" in (prebuilt.prebuilt_unavailable(_AMX_XEON) or "")


def test_install_sh_installs_the_pinned_wheel_on_linux_x86_64() -> None:
    script = (Path(__file__).parents[2] / "scripts" / "install.sh").read_text()
    pin = f'"{prebuilt.PREBUILT_PACKAGE}=={prebuilt.PREBUILT_VERSION}"'
    assert f"--only-binary {prebuilt.PREBUILT_PACKAGE} {pin}" in script
