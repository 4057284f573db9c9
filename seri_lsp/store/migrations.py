"""Numbered schema migrations for `seri.db`.

Each migration is a small function applied once, in order, inside the write transaction
that records it in `schema_migrations`. Released migrations are never edited: a schema
change is a new function with the next number.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def m001_sessions_and_messages(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            max_turns INTEGER,
            parent_id TEXT REFERENCES sessions(id),
            last_input_tokens INTEGER
        )
        """
    )
    conn.execute("CREATE INDEX sessions_by_project ON sessions (project, updated_at)")
    conn.execute("CREATE INDEX sessions_by_update ON sessions (updated_at)")
    conn.execute(
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
            content TEXT NOT NULL DEFAULT '',
            thinking TEXT,
            tool_calls TEXT,
            tool_call_id TEXT,
            kind TEXT,
            recap TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            chars INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (session_id, seq)
        )
        """
    )


def m002_legacy_imports(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE legacy_imports (
            path TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            session_id TEXT,
            skipped_lines INTEGER NOT NULL DEFAULT 0,
            outcome TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            PRIMARY KEY (path, size, mtime_ns)
        )
        """
    )


def m003_session_events(conn: sqlite3.Connection) -> None:
    # What happened during a session that is not a message: retries, denials, usage,
    # compaction outcomes, repairs, prompt-file hashes. Trajectories build on this.
    conn.execute(
        """
        CREATE TABLE session_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX session_events_by_session ON session_events (session_id, kind)")


def m004_session_paths_and_rules(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE session_paths (
            session_id TEXT NOT NULL REFERENCES sessions(id),
            path TEXT NOT NULL,
            modified INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, path)
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE session_rules_fired (
            session_id TEXT NOT NULL REFERENCES sessions(id),
            rule TEXT NOT NULL,
            PRIMARY KEY (session_id, rule)
        )
        """
    )


def m005_checkpoints(conn: sqlite3.Connection) -> None:
    # Undo for prompts (`/rewind`). File contents are stored once per distinct content
    # (content-addressed by SHA-256) however many checkpoints refer to them, and removed
    # in the transaction that drops the last reference.
    conn.execute(
        """
        CREATE TABLE blobs (
            sha256 TEXT PRIMARY KEY,
            content BLOB NOT NULL,
            size INTEGER NOT NULL
        )
        """
    )
    # One per user prompt, taken before its task: `prompt_seq` is the `messages.seq` the
    # prompt was stored at (rewinding removes every message from there on); `state` is a
    # JSON snapshot of what else the conversation carried then (title, path lists, fired
    # rules, last billed input tokens), restored with the conversation.
    conn.execute(
        """
        CREATE TABLE checkpoints (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            prompt_seq INTEGER NOT NULL,
            prompt TEXT NOT NULL,
            state TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (session_id, prompt_seq)
        )
        """
    )
    # Each file a checkpoint's task changed: its content before the task's first change
    # (NULL: the file did not exist) and what seri last wrote to it (NULL: absent).
    conn.execute(
        """
        CREATE TABLE checkpoint_files (
            checkpoint_id INTEGER NOT NULL REFERENCES checkpoints(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            display TEXT NOT NULL,
            before_sha256 TEXT REFERENCES blobs(sha256),
            after_sha256 TEXT REFERENCES blobs(sha256),
            PRIMARY KEY (checkpoint_id, path)
        )
        """
    )
    conn.execute("CREATE INDEX checkpoint_files_by_before ON checkpoint_files (before_sha256)")
    conn.execute("CREATE INDEX checkpoint_files_by_after ON checkpoint_files (after_sha256)")
    # Sessions whose checkpoints were deleted by retention (kept for the 20 most recently
    # touched sessions of a project): prompts up to `through_seq` can no longer be
    # rewound; the conversation itself is untouched.
    conn.execute(
        """
        CREATE TABLE checkpoints_retired (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id),
            through_seq INTEGER NOT NULL,
            retired_at TEXT NOT NULL
        )
        """
    )


def m006_trajectories(conn: sqlite3.Connection) -> None:
    # Recordings (trajectories): one per session opened in a process, a header (the
    # settings in force) and its events in order. They replace session_events: the
    # events recorded there move into one recording per session, marked legacy. The
    # emptied table stays, so a seri-lsp of the previous release that is still running
    # on this profile can finish what it is doing; nothing reads it any more.
    conn.execute(
        """
        CREATE TABLE trajectories (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            started_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            header TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX trajectories_by_session ON trajectories (session_id, started_at)")
    conn.execute("CREATE INDEX trajectories_by_update ON trajectories (updated_at)")
    conn.execute(
        """
        CREATE TABLE trajectory_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id),
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (trajectory_id, seq)
        )
        """
    )
    recordings: dict[str, tuple[str, list[tuple[str, str, str]]]] = {}
    rows = conn.execute(
        "SELECT session_id, kind, data, created_at FROM session_events ORDER BY id"
    ).fetchall()
    for session_id, kind, data, created_at in rows:
        if session_id not in recordings:
            recordings[session_id] = (str(uuid.uuid4()), [])
        recordings[session_id][1].append((kind, data, created_at))
    for session_id, (trajectory_id, events) in recordings.items():
        started, newest = events[0][2], max(event[2] for event in events)
        header = {
            "legacy": "session_events",
            "trajectoryId": trajectory_id,
            "sessionId": session_id,
            "startedAt": started,
        }
        conn.execute(
            "INSERT INTO trajectories (id, session_id, started_at, updated_at, header)"
            " VALUES (?, ?, ?, ?, ?)",
            (trajectory_id, session_id, started, newest, json.dumps(header)),
        )
        conn.executemany(
            "INSERT INTO trajectory_events (trajectory_id, seq, kind, data, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [
                (trajectory_id, seq, kind, data, created_at)
                for seq, (kind, data, created_at) in enumerate(events, start=1)
            ],
        )
    conn.execute("DELETE FROM session_events")


def m007_session_totals(conn: sqlite3.Connection) -> None:
    # Running totals of each session's messages (how many, and their characters), kept
    # in the transactions that add or remove messages, so opening or listing a session
    # never counts its history. Filled in here for the sessions that exist.
    conn.execute("ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE sessions ADD COLUMN total_chars INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        "UPDATE sessions SET"
        " message_count = (SELECT COUNT(*) FROM messages m WHERE m.session_id = sessions.id),"
        " total_chars = (SELECT COALESCE(SUM(chars), 0) FROM messages m"
        "   WHERE m.session_id = sessions.id)"
    )


def m008_rules_fired_by_message(conn: sqlite3.Connection) -> None:
    # A glob rule's delivered mark belongs to the message that delivered it: when that
    # message goes (evicted into a recap by a compaction, removed by a rewind), the mark
    # goes with it, so the rule fires again the next time a tool touches a matching path.
    # Existing marks find their message by its text ("Rule <path> applies to ..."); a
    # mark whose message a compaction already evicted goes now.
    conn.execute(
        "ALTER TABLE session_rules_fired ADD COLUMN message_id INTEGER"
        " REFERENCES messages(id) ON DELETE CASCADE"
    )
    conn.execute("CREATE INDEX session_rules_fired_by_message ON session_rules_fired (message_id)")
    conn.execute(
        """
        UPDATE session_rules_fired SET message_id = (
            SELECT m.id FROM messages m
            WHERE m.session_id = session_rules_fired.session_id AND m.kind = 'rule'
              AND substr(m.content, 1, length('Rule ' || rule || ' applies to '))
                  = 'Rule ' || rule || ' applies to '
            ORDER BY m.seq DESC LIMIT 1
        )
        """
    )
    conn.execute("DELETE FROM session_rules_fired WHERE message_id IS NULL")


def m009_search_titles_and_imports(conn: sqlite3.Connection) -> None:
    # A title the user gave (seri.session.rename, /rename) is never replaced: not by the
    # first prompt's, not by a rewind to before the rename.
    conn.execute("ALTER TABLE sessions ADD COLUMN title_by_user INTEGER NOT NULL DEFAULT 0")
    # Imported bundles, by the digest of their content, so that importing the same one
    # again into the same project answers the session made the first time.
    conn.execute(
        """
        CREATE TABLE session_imports (
            digest TEXT NOT NULL,
            project TEXT NOT NULL,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            imported_at TEXT NOT NULL,
            PRIMARY KEY (digest, project)
        )
        """
    )
    # Where the full-text index (store/search.py) stands. The index itself is no part of
    # the schema: a SQLite without FTS5 cannot make it, so it is made (and filled from
    # the messages already stored) when a process that has FTS5 opens the profile. One
    # row: the messages up to `backfill_to` are indexed by the backfill, whose cursor is
    # `backfilled`, later ones as they are stored; `stale` says a process without FTS5
    # wrote here since, so the index is rebuilt.
    conn.execute(
        """
        CREATE TABLE search_index (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            backfill_to INTEGER NOT NULL,
            backfilled INTEGER NOT NULL,
            stale INTEGER NOT NULL
        )
        """
    )


def m010_forks_and_spend(conn: sqlite3.Connection) -> None:
    # Forks. Not `parent_id`, which names a subagent's parent (and keeps the session out
    # of lists): `forked_from` is the session a fork copied, `forked_at` the id of the
    # last message it copied there, `forked_seq` that message's position (the copy keeps
    # positions), where a rewind in the fork stops.
    conn.execute("ALTER TABLE sessions ADD COLUMN forked_from TEXT REFERENCES sessions(id)")
    conn.execute("ALTER TABLE sessions ADD COLUMN forked_at INTEGER")
    conn.execute("ALTER TABLE sessions ADD COLUMN forked_seq INTEGER")
    # Spend: what each model call was billed, and running totals on the session row (a
    # subagent's calls counted in its parent's too), kept in the transaction that stores
    # the call's reply. Nothing lowers them: no compaction, rewind or deletion of
    # messages touches `model_calls`. A cost is NULL until a call reports one.
    for column in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens"):
        conn.execute(f"ALTER TABLE sessions ADD COLUMN spent_{column} INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE sessions ADD COLUMN spent_cost REAL")
    conn.execute("ALTER TABLE sessions ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        """
        CREATE TABLE model_calls (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id),
            kind TEXT NOT NULL CHECK (kind IN ('turn', 'compaction', 'subagent')),
            input_tokens INTEGER,
            cached_input_tokens INTEGER,
            output_tokens INTEGER,
            reasoning_tokens INTEGER,
            cost REAL,
            message_id INTEGER,
            created_at TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX model_calls_by_session ON model_calls (session_id, kind)")
    # A session's subagents, found from it (its usage counts theirs).
    conn.execute("CREATE INDEX sessions_by_parent ON sessions (parent_id)")
    # Where in the conversation a path was first noted (and first modified) and a glob
    # rule delivered, so a fork keeps those of the part it copies. NULL: before this
    # migration (or imported), kept by every fork.
    conn.execute("ALTER TABLE session_paths ADD COLUMN seq INTEGER")
    conn.execute("ALTER TABLE session_paths ADD COLUMN modified_seq INTEGER")
    conn.execute("ALTER TABLE session_rules_fired ADD COLUMN seq INTEGER")


def m011_cache_writes(conn: sqlite3.Connection) -> None:
    # Spend: the input tokens a call wrote to the provider's prompt cache (its reads are
    # `cached_input_tokens`), per call and in the session's running totals. Calls stored
    # before this migration count 0 in the totals and NULL (not reported) on their row.
    conn.execute("ALTER TABLE model_calls ADD COLUMN cache_write_tokens INTEGER")
    conn.execute(
        "ALTER TABLE sessions ADD COLUMN spent_cache_write_tokens INTEGER NOT NULL DEFAULT 0"
    )


def m012_turn_endings(conn: sqlite3.Connection) -> None:
    # How each turn (one user prompt's task) ended, on the last message it left in the
    # conversation (the prompt itself when nothing followed it): `turn_status` is `done`,
    # `max_turns`, `cancelled`, `failed` or `interrupted`, `turn_error` the words the user
    # was shown; NULL on every other message (and on turns stored before this migration).
    # `turn_started_at` on the session is set while a turn runs: one still set when the
    # session is next opened belongs to a process that died mid-turn (interrupted).
    conn.execute("ALTER TABLE messages ADD COLUMN turn_status TEXT")
    conn.execute("ALTER TABLE messages ADD COLUMN turn_error TEXT")
    conn.execute("ALTER TABLE sessions ADD COLUMN turn_started_at TEXT")


def m013_session_model(conn: sqlite3.Connection) -> None:
    # The model a session chose (`seri.session.model`) over the `provider.model` setting;
    # NULL: the setting's.
    conn.execute("ALTER TABLE sessions ADD COLUMN model TEXT")


MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "sessions_and_messages", m001_sessions_and_messages),
    (2, "legacy_imports", m002_legacy_imports),
    (3, "session_events", m003_session_events),
    (4, "session_paths_and_rules", m004_session_paths_and_rules),
    (5, "checkpoints", m005_checkpoints),
    (6, "trajectories", m006_trajectories),
    (7, "session_totals", m007_session_totals),
    (8, "rules_fired_by_message", m008_rules_fired_by_message),
    (9, "search_titles_and_imports", m009_search_titles_and_imports),
    (10, "forks_and_spend", m010_forks_and_spend),
    (11, "cache_writes", m011_cache_writes),
    (12, "turn_endings", m012_turn_endings),
    (13, "session_model", m013_session_model),
]
