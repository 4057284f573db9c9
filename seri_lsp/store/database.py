"""The profile's SQLite database: opening it safely, WAL, busy timeout, migrations.

Two editor windows mean two server processes on one `seri.db`, so the database runs in
WAL mode with a busy timeout and every write is an `IMMEDIATE` transaction (a deferred
transaction that later upgrades to a write can fail at once with SQLITE_BUSY_SNAPSHOT,
which no timeout retries).

A file that is not seri's is refused before anything is written to it, so the user's data
stays byte-for-byte as it was: one that is not SQLite, a SQLite database seri did not
create (inspected read-only, before the switch to WAL), or one written by a newer seri.
A seri database is recognised by its `schema_migrations` table and the tables its
migrations made. The database and its `-wal` and `-shm` files are made private (0600)
before use. Once migrated, the connection gets the triggers that keep the full-text
index (`store/search_index.py`) in step with the messages.

A process may open `seri.db` more than once (the ACP agent opens it for each session
it serves). Closing any file descriptor of a file drops every POSIX lock the process
holds on it, the SQLite connections' included, and a connection without its lock is
taken for gone: another process closing its own connection would then delete the
write-ahead log under this one's feet (and lose or corrupt what it writes next). So a
file this process already has open through SQLite is not read again to check it: it
was checked when it was first opened.

A write that waits longer than the busy timeout (10 s; `SERI_BUSY_TIMEOUT_MS` sets it in
milliseconds, for tests) raises `StoreBusy`, which the faces answer as a refusal.

Each connection is traced when `SERI_TRACE_SQL` asks for it (`faults.sql_tracer`).
"""

from __future__ import annotations

import functools
import os
import random
import sqlite3
import stat
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from seri_lsp.errors import StoreBusy
from seri_lsp.faults import sql_tracer
from seri_lsp.store import search_index
from seri_lsp.store.migrations import MIGRATIONS

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000
BUSY_TIMEOUT_ENV = "SERI_BUSY_TIMEOUT_MS"
MAX_BUSY_TIMEOUT_MS = 600_000
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


# What a store that fails under a write raises: another process holding the write lock
# past the busy timeout, or SQLite's own errors (a full disk, a constraint).
STORE_ERRORS: tuple[type[Exception], ...] = (StoreBusy, sqlite3.Error)


class StoreError(Exception):
    """The database cannot be used; the message says why and what to do."""


def busy_timeout_ms(env: Mapping[str, str] = os.environ) -> int:
    """How long a write waits for another process's write: `SERI_BUSY_TIMEOUT_MS` or 10 s."""
    value = env.get(BUSY_TIMEOUT_ENV, "").strip()
    if value.isascii() and value.isdigit() and int(value) <= MAX_BUSY_TIMEOUT_MS:
        return int(value)
    return BUSY_TIMEOUT_MS


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite gave up waiting for another connection's lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


@contextmanager
def busy_as_store_busy() -> Iterator[None]:
    """Translate SQLite's "database is locked" into `StoreBusy`, a refusal in user words."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise StoreBusy() from exc
        raise


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
        self._file = _open_here.add(path)
        # Why this process cannot search (`store/search_index.py`), or None when it can.
        self.search_unavailable: str | None = None

    @classmethod
    def open(cls, path: Path) -> Database:
        """Open (creating if needed) and migrate the database at `path`.

        Raises StoreError, without writing to the file, when it is not a SQLite
        database, is a SQLite database seri did not create, or was migrated by a newer
        version of seri-lsp.
        """
        if not _open_here.holds(path):  # else checked already, and not to be read again
            _check_header(path)
            try:
                # Create the file ourselves so it is 0600 from its first byte.
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:  # there, perhaps made a moment ago by another process
                _inspect(path)
            else:
                os.close(fd)
        _make_private(path)
        db = cls(path)
        try:
            db._check_schema_version()
            db._use_wal()
            db._conn.execute("PRAGMA synchronous=NORMAL")
            db._migrate()
            db.search_unavailable = search_index.prepare(db._conn, db.transaction)
        except (StoreBusy, sqlite3.OperationalError) as exc:
            db.close()
            if isinstance(exc, StoreBusy) or is_busy(exc):
                raise StoreError(
                    f"{path} is busy: another seri process is writing; try again."
                ) from exc
            raise _unreadable(path, exc) from exc
        except sqlite3.DatabaseError as exc:
            db.close()
            raise _unreadable(path, exc) from exc
        except StoreError:
            db.close()
            raise
        _make_private(path)
        return db

    def _connect(self) -> sqlite3.Connection:
        timeout = busy_timeout_ms()
        conn = sqlite3.connect(
            self.path,
            timeout=timeout / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.row_factory = sqlite3.Row
        trace = sql_tracer()
        if trace is not None:
            conn.set_trace_callback(trace)
        conn.execute(f"PRAGMA busy_timeout={timeout}")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _use_wal(self) -> None:
        """Switch the file to WAL (a no-op once it is). The switch takes the file for
        itself without waiting on SQLite's busy handler, so when several processes open
        a new profile at once, the ones that lose the race try again for a while."""
        deadline = time.monotonic() + busy_timeout_ms() / 1000
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0.01, 0.05))

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
        """A write transaction: everything inside commits together or not at all.

        Raises StoreBusy when another process keeps the database locked for writing
        longer than the busy timeout.
        """
        with self._lock:
            with busy_as_store_busy():
                self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
                    raise StoreBusy() from exc
                raise

    def _rollback(self) -> None:
        # SQLite may already have rolled back (a full disk, an I/O error): the error that
        # got us here is the one to report.
        if self._conn.in_transaction:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def checkpoint(self) -> None:
        """Copy the write-ahead log's pages into the database file now (SQLite's PASSIVE
        checkpoint: it waits for nobody and copies what it can), so the commits that
        follow do not stop to do it. For idle moments; a failure only leaves the work
        to SQLite's own checkpoint at a later commit."""
        with self._lock, suppress(sqlite3.Error):
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read and return all its rows."""
        with self._lock, busy_as_store_busy():
            return self._conn.execute(sql, params).fetchall()

    def query_tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read and return all its rows as plain tuples (cheaper than Rows, for
        reads of many rows)."""
        with self._lock, busy_as_store_busy():
            cursor = self._conn.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, params).fetchall()

    def query_batches(
        self,
        sql: str,
        params: Sequence[Any],
        size: int,
        each: Callable[[list[tuple[Any, ...]]], None],
    ) -> None:
        """Run a read and hand its rows to `each` as plain tuples, `size` at a time, so
        a read of many rows never holds them all."""
        with self._lock, busy_as_store_busy():
            cursor = self._conn.cursor()
            cursor.row_factory = None
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(size):
                each(rows)

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """Run a read and return its first row, if any."""
        with self._lock, busy_as_store_busy():
            return self._conn.execute(sql, params).fetchone()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
            _open_here.discard(self._file)
            self._file = None


class _OpenFiles:
    """The database files this process has open through SQLite, by device and inode
    (a stat opens nothing), with how many connections each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[int, int], int] = {}

    @staticmethod
    def _key(path: Path) -> tuple[int, int] | None:
        try:
            info = path.stat()
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def holds(self, path: Path) -> bool:
        key = self._key(path)
        with self._lock:
            return key is not None and key in self._counts

    def add(self, path: Path) -> tuple[int, int] | None:
        key = self._key(path)
        if key is not None:
            with self._lock:
                self._counts[key] = self._counts.get(key, 0) + 1
        return key

    def discard(self, key: tuple[int, int] | None) -> None:
        if key is None:
            return
        with self._lock:
            left = self._counts.pop(key, 0) - 1
            if left > 0:
                self._counts[key] = left


_open_here = _OpenFiles()


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


def _unreadable(path: Path, exc: sqlite3.Error) -> StoreError:
    return StoreError(
        f"{path} could not be read as a seri database ({exc}). "
        "It was left untouched; move it aside to start with a fresh store."
    )


class _NotSeri(Exception):
    pass


def _inspect(path: Path) -> None:
    """Refuse, read-only and before anything is written, a database that is not seri's."""
    if path.stat().st_size == 0:
        return
    # Reading a WAL-mode database makes its -wal and -shm files; a refused database
    # should be left as it was found, so those we made go again.
    companions = [Path(f"{path}-wal"), Path(f"{path}-shm")]
    made = [companion for companion in companions if not companion.exists()]
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms() / 1000)
    except sqlite3.Error as exc:
        raise _unreadable(path, exc) from exc
    try:
        _check_is_seri(conn)
    except _NotSeri as exc:
        conn.close()
        _remove_if_made(made)
        raise StoreError(
            f"{path} is a SQLite database that seri did not create ({exc}). It was left "
            "untouched; move it aside (or point --profile-root elsewhere) to start with a "
            "fresh store."
        ) from None
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise StoreError(
                f"{path} is busy: another process is writing to it; try again."
            ) from exc
        raise _unreadable(path, exc) from exc
    except sqlite3.DatabaseError as exc:
        raise _unreadable(path, exc) from exc
    finally:
        conn.close()


def _remove_if_made(made: list[Path]) -> None:
    wal = next((p for p in made if p.name.endswith("-wal")), None)
    if wal is not None and wal.exists() and wal.stat().st_size > 0:
        return  # someone wrote meanwhile: it is theirs, not ours
    for companion in made:
        with suppress(FileNotFoundError):
            companion.unlink()


def _check_is_seri(conn: sqlite3.Connection) -> None:
    rows = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
    if not rows:
        return  # an empty database: seri makes it its own
    tables = {name for kind, name in rows if kind == "table" and not name.startswith("sqlite_")}
    if "schema_migrations" not in tables:
        listed = ", ".join(sorted(tables)[:8]) or "no tables"
        raise _NotSeri(f"it holds {listed} and no schema_migrations table")
    if _columns(conn, "schema_migrations") != {"version", "name", "applied_at"}:
        raise _NotSeri("its schema_migrations table is not seri's")
    versions = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in versions):
        raise _NotSeri("its schema_migrations table is not seri's")
    known = max(version for version, _, _ in MIGRATIONS)
    if versions and max(versions) > known:
        return  # a newer seri's database: refused with its own message after this
    every = frozenset(version for version, _, _ in MIGRATIONS)
    applied = _schema_after(None if versions == every else frozenset(versions))
    for table, columns in applied.items():
        if table not in tables:
            raise _NotSeri(f"its {table} table is missing")
        found = _columns(conn, table)
        if found != columns:
            raise _NotSeri(
                f"its {table} table has the columns {', '.join(sorted(found))}, "
                f"not seri's {', '.join(sorted(columns))}"
            )
    for table in _schema_after(None).keys() - applied.keys():
        if table in tables:
            raise _NotSeri(f"it has a {table} table that seri did not make")


@functools.cache
def _schema_after(versions: frozenset[int] | None) -> dict[str, set[str]]:
    """Table -> column names after the given migrations (all of them when None); worked
    out once per process (it replays the migrations in memory)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(
            "CREATE TABLE schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for version, _, migration in MIGRATIONS:
            if versions is None or version in versions:
                migration(conn)
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {name: _columns(conn, name) for name in names}
    finally:
        conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    quoted = table.replace('"', '""')
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{quoted}")')}


def _make_private(path: Path) -> None:
    """The database and its -wal and -shm files are the user's alone (0600)."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            mode = stat.S_IMODE(candidate.stat().st_mode)
            if mode != 0o600:
                candidate.chmod(0o600)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(
                f"{candidate} could not be made private (chmod 600: {exc.strerror}); "
                "fix its owner or permissions."
            ) from exc
