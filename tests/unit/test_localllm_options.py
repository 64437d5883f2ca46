"""The llama-server build options: portable feature tiers, never native/AMX."""

from __future__ import annotations

import platform

import pytest

from verifleet.orchestrator._localllm import build

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
