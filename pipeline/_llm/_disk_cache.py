"""The call cache of local runs: one SQLite file, no server.

``VERIFLEET_CACHE_DIR`` (default ``~/.cache/verifleet``) holds ``calls.sqlite3``.
Entries expire after ``ttl_seconds`` and the oldest go beyond ``max_entries``;
the same bounds as the fleet's Redis cache, and as there the first reply stored
under a key is kept (two processes on one file agree).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["DEFAULT_MAX_ENTRIES", "DEFAULT_TTL_SECONDS", "DiskCallCache", "default_cache_dir"]

#: Entries kept at most (the oldest go first).
DEFAULT_MAX_ENTRIES = 1_000_000
#: How long an entry is reused: 30 days.
DEFAULT_TTL_SECONDS = 30 * 24 * 3600

# Trimming to the bound is checked every this many writes, not on each.
_TRIM_EVERY = 256


def default_cache_dir() -> Path:
    """``VERIFLEET_CACHE_DIR``, else ``~/.cache/verifleet``."""
    configured = os.environ.get("VERIFLEET_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "verifleet"


def _set_up(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS calls "
        "(key TEXT PRIMARY KEY, value BLOB NOT NULL, created REAL NOT NULL)"
    )
    db.execute("CREATE INDEX IF NOT EXISTS calls_created ON calls (created)")
    db.execute("CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER)")


def _retry_locked(action: Callable[[], None], *, seconds: float = 30.0) -> None:
    """Run ``action``, again while SQLite says the file is locked (up to
    ``seconds``); its last error otherwise."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class DiskCallCache:
    """A :class:`~verifleet.pipeline.CallCache` in a SQLite file (thread-safe:
    one connection per thread; WAL, so readers do not wait for a writer).

    Args:
        path: The database file; ``default_cache_dir() / "calls.sqlite3"`` if None.
        max_entries: The size bound.
        ttl_seconds: How long an entry is reused.

    Raises:
        OSError: (on first use) the folder cannot be created.
        sqlite3.Error: the file is not a usable database.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
    ) -> None:
        self.path = Path(path) if path is not None else default_cache_dir() / "calls.sqlite3"
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._local = threading.local()
        self._lock = threading.Lock()
        self._setup_lock = threading.Lock()
        self._set_up = False
        self._writes = 0

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            # Threads (and processes) opening a new file at once raced here:
            # switching to WAL answers "database is locked" at once, without
            # waiting, and a reward run scored that call as failed. One thread
            # of this process sets the file up; another process doing the same
            # is waited for.
            with self._setup_lock:
                if not self._set_up:
                    _retry_locked(lambda: _set_up(db))
                    self._set_up = True
            self._local.db = db
        return db

    def _count(self, name: str) -> None:
        self._db().execute(
            "INSERT INTO counters VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1",
            (name,),
        )

    def get(self, key: str) -> bytes | None:
        """The entry under ``key`` unless it expired; counts a hit or a miss."""
        row = (
            self._db()
            .execute(
                "SELECT value FROM calls WHERE key = ? AND created >= ?",
                (key, time.time() - self.ttl_seconds),
            )
            .fetchone()
        )
        self._count("hits" if row is not None else "misses")
        return bytes(row[0]) if row is not None else None

    def put(self, key: str, value: bytes) -> bytes:
        """Store ``value`` unless ``key`` holds an entry that has not expired (the
        first reply is kept); return the entry now stored. Every few hundred
        writes, drop expired entries and the oldest beyond ``max_entries``."""
        db = self._db()
        now = time.time()
        db.execute(
            "INSERT INTO calls VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
            "value = excluded.value, created = excluded.created WHERE calls.created < ?",
            (key, value, now, now - self.ttl_seconds),
        )
        row = db.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        with self._lock:
            self._writes += 1
            trim = self._writes % _TRIM_EVERY == 1
        if trim:
            self._trim(db)
        # None only when a clear() or trim in between took the entry.
        return bytes(row[0]) if row is not None else value

    def _trim(self, db: sqlite3.Connection) -> None:
        db.execute("DELETE FROM calls WHERE created < ?", (time.time() - self.ttl_seconds,))
        (count,) = db.execute("SELECT COUNT(*) FROM calls").fetchone()
        if count > self.max_entries:
            db.execute(
                "DELETE FROM calls WHERE key IN (SELECT key FROM calls ORDER BY created LIMIT ?)",
                (count - self.max_entries,),
            )

    def stats(self) -> dict[str, object]:
        """Entries, bytes, hits and misses so far, and the bounds."""
        db = self._db()
        self._trim(db)
        entries, size = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM calls"
        ).fetchone()
        counters = dict(db.execute("SELECT name, value FROM counters").fetchall())
        return {
            "where": str(self.path),
            "entries": int(entries),
            "bytes": int(size),
            "hits": int(counters.get("hits", 0)),
            "misses": int(counters.get("misses", 0)),
            "max_entries": self.max_entries,
            "ttl_seconds": self.ttl_seconds,
        }

    def clear(self) -> int:
        """Remove every entry and reset the counters; returns the entries removed."""
        db = self._db()
        (count,) = db.execute("SELECT COUNT(*) FROM calls").fetchone()
        db.execute("DELETE FROM calls")
        db.execute("DELETE FROM counters")
        return int(count)
