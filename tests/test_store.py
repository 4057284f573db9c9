"""The profile store: migrations, WAL, permissions, and refusing files it must not touch."""

from __future__ import annotations

import hashlib
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from seri_lsp.profile import ensure_profile_root, resolve_profile_root
from seri_lsp.store.database import Database, StoreError
from seri_lsp.store.migrations import MIGRATIONS


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_blank_database_is_migrated_to_the_latest_schema(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "seri.db")
    assert db.applied_migrations() == [(version, name) for version, name, _ in MIGRATIONS]
    tables = {row["name"] for row in db.query("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "messages", "legacy_imports", "session_events"} <= tables
    db.close()


def test_reopening_a_migrated_database_applies_nothing_again(tmp_path: Path) -> None:
    path = tmp_path / "seri.db"
    first = Database.open(path)
    applied_at = first.query("SELECT version, applied_at FROM schema_migrations")
    first.close()
    second = Database.open(path)
    assert second.query("SELECT version, applied_at FROM schema_migrations") == applied_at
    second.close()


def test_opening_the_database_again_in_one_process_keeps_its_write_ahead_log_alive(
    tmp_path: Path,
) -> None:
    # The ACP agent opens seri.db once per session it serves. Had the second open read
    # the file through a descriptor of its own, closing it would drop the first
    # connection's locks, and another process closing its connection would then delete
    # the log the first one still writes to.
    path = tmp_path / "seri.db"
    first = Database.open(path)
    second = Database.open(path)
    other = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
        " c.execute('SELECT 1 FROM sqlite_master'); c.close()"
    )
    subprocess.run([sys.executable, "-c", other, str(path)], check=True)
    assert Path(f"{path}-wal").exists()
    second.close()
    first.close()


def test_the_database_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "seri.db")
    assert db.query_one("PRAGMA journal_mode")[0] == "wal"
    assert db.query_one("PRAGMA busy_timeout")[0] >= 5000
    db.close()


def test_profile_root_is_private_and_the_database_is_0600(tmp_path: Path) -> None:
    root = ensure_profile_root(tmp_path / "a" / "profile")
    db = Database.open(root / "seri.db")
    db.close()
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "seri.db").stat().st_mode) == 0o600


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "seri.db"
    path.write_bytes(b"these are my notes, not a database\n" * 100)
    before = digest(path)
    with pytest.raises(StoreError, match="not a SQLite database"):
        Database.open(path)
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seri.db"]


def test_a_database_from_a_newer_seri_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "seri.db"
    db = Database.open(path)
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')"
        )
    db.close()
    # Fold the WAL back into the file so the hash covers every byte of the database.
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match="newer seri-lsp"):
        Database.open(path)
    assert digest(path) == before


def test_a_corrupt_sqlite_file_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = tmp_path / "seri.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    before = digest(path)
    with pytest.raises(StoreError, match="left untouched"):
        Database.open(path)
    assert digest(path) == before


def test_profile_root_precedence(tmp_path: Path) -> None:
    env = {"SERI_PROFILE_ROOT": str(tmp_path / "env")}
    assert resolve_profile_root(str(tmp_path / "cli"), str(tmp_path / "init"), env) == (
        tmp_path / "cli"
    )
    assert resolve_profile_root(None, str(tmp_path / "init"), env) == tmp_path / "init"
    assert resolve_profile_root(None, None, env) == tmp_path / "env"
    assert resolve_profile_root(None, None, {}).name == "seri"


def test_migration_8_ties_each_fired_rule_to_its_message_and_drops_evicted_ones(
    tmp_path: Path,
) -> None:
    """A database of the previous release: a rule whose message is still there keeps its
    mark (now tied to that message); one whose message a compaction evicted loses it."""
    path = tmp_path / "seri.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for version, name, migration in MIGRATIONS[:7]:
        migration(conn)
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01T00:00:00Z')", (version, name)
        )
    conn.execute(
        "INSERT INTO sessions (id, project, created_at, updated_at) VALUES ('s', '/', '', '')"
    )
    kept = "Rule /w/.seri/rules/py.md applies to a.py (globs: *.py):\n\nUse type hints."
    conn.execute(
        "INSERT INTO messages (session_id, seq, role, content, kind, chars, created_at)"
        " VALUES ('s', 1, 'user', ?, 'rule', 1, '')",
        (kept,),
    )
    conn.executemany(
        "INSERT INTO session_rules_fired (session_id, rule) VALUES ('s', ?)",
        [("/w/.seri/rules/py.md",), ("/w/.seri/rules/evicted.md",)],
    )
    conn.commit()
    conn.close()
    db = Database.open(path)
    rows = db.query("SELECT rule, message_id FROM session_rules_fired")
    assert [(row["rule"], row["message_id"]) for row in rows] == [("/w/.seri/rules/py.md", 1)]
    with db.transaction() as tx:  # the mark goes with its message
        tx.execute("DELETE FROM messages WHERE id = 1")
    assert db.query("SELECT rule FROM session_rules_fired") == []
    db.close()
