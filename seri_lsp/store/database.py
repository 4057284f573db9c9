"""The profile's SQLite database: opening it safely, WAL, busy timeout, migrations.

Two editor windows mean two server processes on one `seri.db`, so the database runs in
WAL mode with a busy timeout and every write is an `IMMEDIATE` transaction (a deferred
transaction that later upgrades to a write can fail at once with SQLITE_BUSY_SNAPSHOT,
which no timeout retries).

A file that is not a SQLite database, or one written by a newer seri, is refused before
anything is written to it, so the user's data stays byte-for-byte as it was.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from seri_lsp.store.migrations import MIGRATIONS

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000


class StoreError(Exception):
    """The database cannot be used; the message says why and what to do."""


_clock_lock = threading.Lock()
_last_moment = datetime.min.replace(tzinfo=UTC)


def utc_now() -> str:
    """The current time as an ISO-8601 UTC string that sorts correctly as text.

    Strictly increasing within a process, so "most recently touched" never ties.
    """
    global _last_moment
    with _clock_lock:
        moment = max(datetime.now(UTC), _last_moment + timedelta(microseconds=1))
        _last_moment = moment
    return format_time(moment)


def format_time(moment: datetime) -> str:
    """Render a timestamp the one way the store writes them (UTC, microseconds)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Database:
    """One connection to `seri.db`, safe to share between threads.

    The engine runs its database work on a worker thread so the event loop never waits
    on the disk; the command-line faces use it directly. A lock serialises use of the
    single connection.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._conn = self._connect()

    @classmethod
    def open(cls, path: Path) -> Database:
        """Open (creating if needed) and migrate the database at `path`.

        Raises StoreError, without writing to the file, when it is not a SQLite
        database or was migrated by a newer version of seri-lsp.
        """
        _check_header(path)
        if not path.exists():
            # Create the file ourselves so it is 0600 from its first byte.
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(fd)
        db = cls(path)
        try:
            db._check_schema_version()
            db._conn.execute("PRAGMA journal_mode=WAL")
            db._conn.execute("PRAGMA synchronous=NORMAL")
            db._migrate()
        except sqlite3.DatabaseError as exc:
            db.close()
            raise StoreError(
                f"{path} could not be read as a seri database ({exc}). "
                "It was left untouched; move it aside to start with a fresh store."
            ) from exc
        except StoreError:
            db.close()
            raise
        if path.stat().st_mode & 0o777 != 0o600:
            path.chmod(0o600)
        return db

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _check_schema_version(self) -> None:
        known = max(version for version, _, _ in MIGRATIONS)
        has_table = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
        ).fetchone()
        if not has_table:
            return
        row = self._conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        newest = row[0] or 0
        if newest > known:
            raise StoreError(
                f"{self.path} was written by a newer seri-lsp (schema version {newest}, "
                f"this one knows up to {known}). It was left untouched; "
                "upgrade seri-lsp to use it."
            )

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            # Checked again inside the write lock: another process may have migrated
            # further between our first look and now.
            self._check_schema_version()
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, name, migration in MIGRATIONS:
                if version in applied:
                    continue
                migration(conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, utc_now()),
                )

    def applied_migrations(self) -> list[tuple[int, str]]:
        """The migrations recorded in this database, oldest first."""
        rows = self.query("SELECT version, name FROM schema_migrations ORDER BY version")
        return [(row["version"], row["name"]) for row in rows]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: everything inside commits together or not at all."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read and return all its rows."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """Run a read and return its first row, if any."""
        with self._lock:
            return self._conn.execute(sql, params).fetchone()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"{path} cannot be read: {exc.strerror}.") from exc
    if header and header != SQLITE_HEADER:
        raise StoreError(
            f"{path} is not a SQLite database. It was left untouched; "
            "move it aside (or point --profile-root elsewhere) to start with a fresh store."
        )
