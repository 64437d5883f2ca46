"""Who seccomp-mode executors run as (``verifleet.sandbox._identity``)."""

from __future__ import annotations

import argparse

import pytest

from verifleet.orchestrator.cli._sandbox import start_sandbox
from verifleet.sandbox import (
    SandboxMode,
    SandboxPool,
    SandboxSettings,
    _identity,
    reset_default_pool,
)
from verifleet.sandbox._identity import (
    DEFAULT_UID,
    Separation,
    executor_identity,
    isolation_warning,
    sandbox_uid,
)
from verifleet.schemas import ConfigError

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("raw", ["0", "-3", "nobody", "4294967295"])
def test_a_bad_sandbox_uid_is_refused_by_name(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFLEET_SANDBOX_UID", raw)
    with pytest.raises(ConfigError, match="VERIFLEET_SANDBOX_UID"):
        sandbox_uid()


def test_only_seccomp_mode_changes_the_executors_identity() -> None:
    assert executor_identity(SandboxMode.STRICT).separation is Separation.NONE
    assert executor_identity(SandboxMode.RLIMITS_ONLY).separation is Separation.NONE
    assert isolation_warning(SandboxMode.RLIMITS_ONLY) is None


def test_seccomp_executors_report_the_sandbox_uid_not_the_workers() -> None:
    # This machine's worker (the test process) runs as root with user namespaces
    # allowed: the executor gets another uid, namespaces, or both.
    identity = executor_identity(SandboxMode.SECCOMP)
    assert identity.separation is not Separation.NONE
    pool = SandboxPool(SandboxSettings(mode=SandboxMode.SECCOMP, pool_size=1))
    try:
        pool.start()
        proc = pool._executors.acquire()
        try:
            assert proc.uid == DEFAULT_UID
        finally:
            pool._executors.release(proc)
    finally:
        pool.close()
    assert isolation_warning(SandboxMode.SECCOMP) is None


def test_without_uid_change_or_namespaces_the_commands_warn_loudly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Fault injection: an unprivileged worker where user namespaces are refused
    # (Docker's default profile as a non-root user) cannot be made on demand on
    # this machine, so the two probes are told what such a machine answers.
    _identity._identity.cache_clear()
    monkeypatch.setattr(_identity, "_can_change_uid", lambda: False)
    monkeypatch.setattr(_identity, "_namespaces_prefix", lambda uid: None)
    try:
        assert executor_identity(SandboxMode.SECCOMP).separation is Separation.NONE
        warning = isolation_warning(SandboxMode.SECCOMP)
        assert warning is not None and "environment (API keys" in warning
        monkeypatch.delenv("VERIFLEET_SANDBOX", raising=False)
        start_sandbox(argparse.Namespace(sandbox="seccomp"))
        assert "verifleet: WARNING: sandbox mode 'seccomp'" in capsys.readouterr().err
    finally:
        reset_default_pool(SandboxSettings()).close()
        _identity._identity.cache_clear()
