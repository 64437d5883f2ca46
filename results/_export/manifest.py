"""The run manifest: what made a results file, kept in it and beside it.

A manifest records the benchmark's digest, the whole verification config, the
models, verifleet's version and git commit (when it runs from a checkout) and
facts about the host. A Parquet file keeps it in its footer (key-value metadata
under :data:`MANIFEST_METADATA_KEY`); every output also gets it as JSON in
``<file>.manifest.json``, so CSV and JSON Lines files, which have no footer,
carry one too. ``reverify`` reads it to re-judge with the run's own settings.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from verifleet.schemas import Benchmark, VerificationConfig, digest_of, verifleet_version

from .files import PathLike, export_error

__all__ = [
    "MANIFEST_FORMAT",
    "MANIFEST_METADATA_KEY",
    "build_manifest",
    "manifest_path",
    "read_manifest",
    "write_manifest_beside",
]

MANIFEST_METADATA_KEY = "verifleet.manifest"
"""The Parquet footer key holding the manifest as JSON."""
MANIFEST_FORMAT = "verifleet-run-manifest/1"


def _git_commit() -> str | None:
    """The commit of the checkout verifleet runs from, or None (an installed
    wheel, no git, not a checkout)."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None


def _host() -> dict[str, object]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def build_manifest(
    benchmark: Benchmark, config: VerificationConfig, *, job_id: str | None = None
) -> dict[str, object]:
    """The manifest of a run of ``benchmark`` under ``config``.

    Args:
        benchmark: The benchmark run (its digest is over its JSON dump).
        config: The verification config, kept whole (it names environment
            variables for keys, never the keys themselves).
        job_id: The fleet job's id, when the results come from a job.

    Returns:
        A JSON-ready dict.
    """
    return {
        "format": MANIFEST_FORMAT,
        "created": datetime.now(UTC).isoformat(),
        "job_id": job_id,
        "benchmark": {
            "digest": digest_of(benchmark.model_dump(mode="json")),
            "name": benchmark.name,
            "questions": len(benchmark.questions),
        },
        "config": config.model_dump(mode="json"),
        "models": {
            "answering": [m.identity().display_string for m in config.answering_models],
            "parsing": [m.identity(role="parsing").display_string for m in config.parsing_models],
        },
        "verifleet": {"version": verifleet_version(), "commit": _git_commit()},
        "host": _host(),
    }


def manifest_path(path: PathLike) -> Path:
    """Where the manifest of the results file ``path`` is kept beside it."""
    target = Path(path)
    return target.with_name(f"{target.name}.manifest.json")


def write_manifest_beside(path: PathLike, manifest: dict[str, object]) -> Path:
    """Write ``manifest`` as JSON beside the results file ``path``.

    Returns:
        The manifest file's path.

    Raises:
        ExportError: the file cannot be written.
    """
    target = manifest_path(path)
    try:
        target.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise export_error(target, f"cannot write the run manifest: {exc}") from exc
    return target


def read_manifest(path: PathLike) -> dict[str, object] | None:
    """The manifest of the results file ``path``: from a Parquet file's footer,
    else from ``<path>.manifest.json``; None when there is neither (files
    written before manifests existed, or by another tool).

    Raises:
        ExportError: a manifest is there but is not a JSON object.
    """
    source = Path(path)
    text: str | bytes | None = None
    if source.suffix.lower() in (".parquet", ".pq") and source.is_file():
        try:
            meta = pq.read_schema(source).metadata or {}
        except (OSError, pa.ArrowException):
            meta = {}
        text = meta.get(MANIFEST_METADATA_KEY.encode())
    beside = manifest_path(source)
    if text is None and beside.is_file():
        try:
            text = beside.read_text(encoding="utf-8")
        except OSError as exc:
            raise export_error(beside, f"cannot read the run manifest: {exc}") from exc
    if text is None:
        return None
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise export_error(source, f"its run manifest is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict):
        raise export_error(source, "its run manifest is not a JSON object")
    return manifest
