"""File plumbing shared by the writers and readers: atomic output, error wrapping."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from verifleet.schemas import ExportError

__all__ = [
    "PathLike",
    "atomic_output",
    "export_error",
    "publish",
    "remove_quietly",
    "require_readable",
    "temp_sibling",
]

PathLike = str | os.PathLike[str]


def export_error(path: PathLike, problem: str) -> ExportError:
    """An :class:`ExportError` whose message starts with the file it concerns."""
    return ExportError(f"{os.fspath(path)}: {problem}")


def require_readable(path: PathLike) -> None:
    """Fail now, not at the first ``next()``, if ``path`` cannot be opened for reading.

    Raises:
        ExportError: the file does not exist or cannot be opened.
    """
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError as exc:
        raise export_error(path, "no such file") from exc
    except OSError as exc:
        raise export_error(path, f"cannot open: {exc}") from exc


def remove_quietly(path: PathLike) -> None:
    """Delete ``path`` if it exists; a cleanup must never hide the original error."""
    with contextlib.suppress(OSError):
        os.unlink(path)


def temp_sibling(path: PathLike) -> Path:
    """Create an empty hidden temporary file next to ``path`` and return its path.

    Raises:
        ExportError: the directory does not exist or is not writable.
    """
    target = Path(path)
    # Not tempfile.mkstemp: it creates mode 0600, and the published file should get
    # the user's usual permissions (umask), like any file they write.
    temp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.partial")
    try:
        temp.open("xb").close()
    except OSError as exc:
        raise export_error(path, f"cannot create the output file: {exc}") from exc
    return temp


def publish(temp: Path, path: PathLike) -> None:
    """Move a finished temporary file onto ``path`` in one step.

    Raises:
        ExportError: the rename failed (the temporary file is removed).
    """
    try:
        os.replace(temp, path)
    except OSError as exc:
        remove_quietly(temp)
        raise export_error(path, f"cannot move the finished file into place: {exc}") from exc


@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path``.

    Readers never see a half-written file, and a failed export leaves an existing
    ``path`` untouched: on any exception the temporary file is deleted and the
    exception propagates.

    Raises:
        ExportError: the temporary file cannot be created or moved into place.
    """
    temp = temp_sibling(path)
    try:
        yield temp
    except BaseException:
        remove_quietly(temp)
        raise
    publish(temp, path)
