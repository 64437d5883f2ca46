"""One run per output file: the output is checked and locked before any unit runs.

Two runs writing the same ``--out`` would interleave their journals and the second
``finalize`` would replace the first's file; a typo in the extension would only be
found after every unit ran. Both are refused up front.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType
from typing import IO

from verifleet.schemas import ConfigError

__all__ = ["OutputLock", "check_output", "lock_path"]


def lock_path(out: Path) -> Path:
    """The lock file of ``out`` (hidden, beside it)."""
    return out.with_name(f".{out.name}.lock")


def check_output(out: Path) -> None:
    """Refuse an output whose format is unknown or whose folder cannot be written.

    Creates the folder when it is missing (the journal needs it anyway).

    Raises:
        ExportError: the extension names no result format (the message lists them).
        ConfigError: the folder cannot be created or written, or ``out`` is a folder.
    """
    from verifleet.orchestrator import resolve_format

    resolve_format(out)
    if out.is_dir():
        raise ConfigError(
            f"--out {out}: is a folder; name a result file such as {out}/results.parquet"
        )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create its folder: {exc.strerror}") from None
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out}: its folder {out.parent} is not writable")
    if out.exists() and not os.access(out, os.W_OK):
        raise ConfigError(f"--out {out}: the file exists and is not writable")


class OutputLock:
    """An exclusive ``flock`` on ``out``'s lock file, held for the whole run.

    The kernel drops the lock when the process dies, however it dies, so a crashed
    run never blocks the next one (its lock file stays until the next run ends).
    The file is removed on release while still locked; a run that locked a file
    just removed checks that its file is still the one at the path, and tries again.

    Raises (on enter):
        ConfigError: another process holds the lock (the message gives its pid).
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = lock_path(out)
        self._fh: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock or refuse; see the class docstring."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fh = self.path.open("a+", encoding="utf-8")
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "unknown"
                fh.close()
                raise ConfigError(
                    f"--out {self.out}: another verifleet run (pid {holder}) is writing this "
                    "file; wait for it to finish or choose another --out"
                ) from None
            try:
                current = os.stat(self.path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fh.fileno()).st_ino:
                break
            fh.close()  # locked a file its holder removed on release: take the new one
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        """Drop the lock (idempotent)."""
        if self._fh is not None:
            self.path.unlink(missing_ok=True)  # while still held: see the class docstring
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
