"""Sessions and their messages in `seri.db`: the durable record of every conversation.

Everything here is synchronous and small; the engine runs it on its database thread.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from seri_lsp import faults
from seri_lsp.errors import UnknownSession
from seri_lsp.store.database import Database, utc_now
from seri_lsp.store.messages import Message, Recap, ToolCall

TITLE_LENGTH = 80

_SESSION_COLUMNS = """
    s.id, s.project, s.title, s.created_at, s.updated_at, s.max_turns, s.parent_id,
    s.last_input_tokens,
    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS message_count
"""


@dataclass(frozen=True)
class SessionInfo:
    """A session's row, as listed and sent to editors."""

    id: str
    project: str
    title: str
    created_at: str
    updated_at: str
    max_turns: int | None
    parent_id: str | None
    last_input_tokens: int | None
    message_count: int

    def to_wire(self, default_max_turns: int) -> dict[str, Any]:
        """The `session` object of the LSP contract; maxTurns is the budget in force."""
        return {
            "id": self.id,
            "project": self.project,
            "title": self.title,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "maxTurns": self.max_turns if self.max_turns is not None else default_max_turns,
            "messageCount": self.message_count,
        }


@dataclass(frozen=True)
class SessionPaths:
    """Paths a session's tools have read and modified (modified wins)."""

    read: tuple[str, ...]
    modified: tuple[str, ...]

    def to_wire(self) -> dict[str, list[str]]:
        """The `paths` object of `seri.session.get`."""
        return {"read": list(self.read), "modified": list(self.modified)}


class SessionStore:
    """Reads and writes sessions, messages and path lists (recordings: `trajectories`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- sessions ---------------------------------------------------------------

    def create(
        self,
        project: str,
        *,
        session_id: str | None = None,
        parent_id: str | None = None,
        title: str = "",
        created_at: str | None = None,
        updated_at: str | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> SessionInfo:
        """Create an empty session in `project` and return it."""
        session_id = session_id or str(uuid.uuid4())
        created = created_at or utc_now()
        row = (session_id, project, title, created, updated_at or created, parent_id)
        sql = (
            "INSERT INTO sessions (id, project, title, created_at, updated_at, parent_id)"
            " VALUES (?, ?, ?, ?, ?, ?)"
        )
        if conn is not None:
            conn.execute(sql, row)
            return self._info(session_id, conn)
        with self.db.transaction() as tx:
            tx.execute(sql, row)
        return self.get(session_id)

    def get(self, session_id: str) -> SessionInfo:
        """The session with exactly this id; UnknownSession if there is none."""
        info = self.find_exact(session_id)
        if info is None:
            raise UnknownSession(session_id)
        return info

    def find_exact(self, session_id: str) -> SessionInfo | None:
        """The session with exactly this id, or None."""
        row = self.db.query_one(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,)
        )
        return _session_from_row(row) if row else None

    def resolve(self, id_or_prefix: str) -> SessionInfo:
        """A session by full id or by a unique prefix of it (as `git` resolves hashes)."""
        exact = self.find_exact(id_or_prefix)
        if exact is not None:
            return exact
        escaped = id_or_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.db.query(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id LIKE ? ESCAPE '\\' LIMIT 6",
            (escaped + "%",),
        )
        if len(rows) == 1 and id_or_prefix:
            return _session_from_row(rows[0])
        if len(rows) > 1 and id_or_prefix:
            ids = ", ".join(row["id"] for row in rows[:5])
            raise UnknownSession(id_or_prefix, f"it matches several sessions ({ids}); give more")
        raise UnknownSession(id_or_prefix)

    def latest(self, project: str) -> SessionInfo | None:
        """The project's most recently touched top-level session."""
        row = self.db.query_one(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s"
            " WHERE s.project = ? AND s.parent_id IS NULL"
            " ORDER BY s.updated_at DESC, s.rowid DESC LIMIT 1",
            (project,),
        )
        return _session_from_row(row) if row else None

    def recent_ids(self, project: str) -> list[str]:
        """Ids of the project's top-level sessions, most recently touched first."""
        rows = self.db.query(
            "SELECT s.id FROM sessions s WHERE s.project = ? AND s.parent_id IS NULL"
            " ORDER BY s.updated_at DESC, s.rowid DESC",
            (project,),
        )
        return [row["id"] for row in rows]

    def list(self, project: str | None, limit: int | None = None) -> list[SessionInfo]:
        """Top-level sessions, most recently touched first; all projects when None."""
        where = "s.parent_id IS NULL"
        params: list[Any] = []
        if project is not None:
            where += " AND s.project = ?"
            params.append(project)
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE {where}"
            " ORDER BY s.updated_at DESC, s.rowid DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_session_from_row(row) for row in self.db.query(sql, params)]

    def touch(self, session_id: str) -> SessionInfo:
        """Mark the session as just used (so `continue` finds it) and return it."""
        with self.db.transaction() as tx:
            _touch(tx, session_id)
        return self.get(session_id)

    def set_max_turns(self, session_id: str, max_turns: int) -> SessionInfo:
        """Persist a turn budget for the rest of this session."""
        with self.db.transaction() as tx:
            tx.execute("UPDATE sessions SET max_turns = ? WHERE id = ?", (max_turns, session_id))
            _touch(tx, session_id)
        return self.get(session_id)

    def set_last_input_tokens(self, session_id: str, tokens: int | None) -> None:
        """Remember the provider's last billed input-token count (None: no longer valid)."""
        with self.db.transaction() as tx:
            tx.execute(
                "UPDATE sessions SET last_input_tokens = ? WHERE id = ?", (tokens, session_id)
            )

    # --- messages ---------------------------------------------------------------

    def messages(self, session_id: str) -> list[Message]:
        """The session's messages in conversation order."""
        rows = self.db.query(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        return [message_from_row(row) for row in rows]

    def messages_page(
        self, session_id: str, limit: int | None, before_seq: int | None = None
    ) -> tuple[list[Message], bool]:
        """The newest `limit` messages (all without a limit) before sequence number
        `before_seq` (when given), in conversation order, and whether older ones exist."""
        where, params = "session_id = ?", [session_id]
        if before_seq is not None:
            where += " AND seq < ?"
            params.append(before_seq)
        if limit is None:
            rows = self.db.query(f"SELECT * FROM messages WHERE {where} ORDER BY seq", params)
            return [message_from_row(row) for row in rows], False
        rows = self.db.query(
            f"SELECT * FROM messages WHERE {where} ORDER BY seq DESC LIMIT ?", [*params, limit + 1]
        )
        has_more = len(rows) > limit
        return [message_from_row(row) for row in reversed(rows[:limit])], has_more

    def message_seq(self, session_id: str, message_id: int) -> int | None:
        """The sequence number of a message of this session; None if it has no such message."""
        row = self.db.query_one(
            "SELECT seq FROM messages WHERE id = ? AND session_id = ?", (message_id, session_id)
        )
        return row[0] if row else None

    def totals(self, session_id: str) -> tuple[int, int]:
        """(message count, total chars) of a session, for the running estimate."""
        row = self.db.query_one(
            "SELECT COUNT(*), COALESCE(SUM(chars), 0) FROM messages WHERE session_id = ?",
            (session_id,),
        )
        assert row is not None
        return row[0], row[1]

    def append(self, session_id: str, message: Message) -> Message:
        """Store a message at the end of the session; the first prompt names the session."""
        with self.db.transaction() as tx:
            stored = insert_message(tx, session_id, message)
            if message.role == "user" and message.kind is None:
                tx.execute(
                    "UPDATE sessions SET title = ? WHERE id = ? AND title = ''",
                    (make_title(message.content), session_id),
                )
            _touch(tx, session_id)
        return stored

    def replace_prefix(
        self, session_id: str, evicted: Sequence[Message], recap: Message
    ) -> Message:
        """Compaction's commit: write the recap and delete the evicted messages at once.

        The recap takes the place (sequence number) of the last evicted message, so it
        sorts before everything kept. Both happen in one transaction or neither does.
        """
        if not evicted:
            raise ValueError("nothing to evict")
        seq = max(m.seq for m in evicted if m.seq is not None)
        ids = [m.id for m in evicted]
        with self.db.transaction() as tx:
            placeholders = ",".join("?" for _ in ids)
            tx.execute(
                f"DELETE FROM messages WHERE session_id = ? AND id IN ({placeholders})",
                (session_id, *ids),
            )
            faults.crash_point("compaction.in_transaction")
            stored = insert_message(tx, session_id, recap, seq=seq)
            tx.execute("UPDATE sessions SET last_input_tokens = NULL WHERE id = ?", (session_id,))
            _touch(tx, session_id)
        return stored

    # --- paths and rules ---------------------------------------------------------

    def add_paths(
        self, session_id: str, read: Iterable[str] = (), modified: Iterable[str] = ()
    ) -> None:
        """Note paths the tools touched; once modified, a path stays modified."""
        with self.db.transaction() as tx:
            for path in read:
                tx.execute(
                    "INSERT OR IGNORE INTO session_paths (session_id, path, modified)"
                    " VALUES (?, ?, 0)",
                    (session_id, path),
                )
            for path in modified:
                tx.execute(
                    "INSERT INTO session_paths (session_id, path, modified) VALUES (?, ?, 1)"
                    " ON CONFLICT (session_id, path) DO UPDATE SET modified = 1",
                    (session_id, path),
                )

    def paths(self, session_id: str) -> SessionPaths:
        """The read and modified path lists, each in first-touched order."""
        rows = self.db.query(
            "SELECT path, modified FROM session_paths WHERE session_id = ? ORDER BY rowid",
            (session_id,),
        )
        return SessionPaths(
            read=tuple(row["path"] for row in rows if not row["modified"]),
            modified=tuple(row["path"] for row in rows if row["modified"]),
        )

    def fired_rules(self, session_id: str) -> set[str]:
        """Glob rules already delivered in this session."""
        rows = self.db.query(
            "SELECT rule FROM session_rules_fired WHERE session_id = ?", (session_id,)
        )
        return {row["rule"] for row in rows}

    def mark_rule_fired(self, session_id: str, rule: str) -> None:
        """Remember that a glob rule was delivered, so it arrives only once."""
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO session_rules_fired (session_id, rule) VALUES (?, ?)",
                (session_id, rule),
            )

    def _info(self, session_id: str, conn: sqlite3.Connection) -> SessionInfo:
        row = conn.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,)
        ).fetchone()
        return _session_from_row(row)


_INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, seq, role, content, thinking, tool_calls,"
    " tool_call_id, kind, recap, is_error, chars, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_message(
    conn: sqlite3.Connection, session_id: str, message: Message, *, seq: int | None = None
) -> Message:
    """Insert a message inside an open transaction; it goes last unless `seq` is given."""
    if seq is None:
        row = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()
        seq = row[0]
    created = message.created_at or utc_now()
    cursor = conn.execute(_INSERT_MESSAGE, _message_row(session_id, seq, message, created))
    assert cursor.lastrowid is not None
    return message.stored(id=cursor.lastrowid, seq=seq, created_at=created)


# A message as insert_new_messages stores it, in column order: role, content, thinking,
# tool_calls (JSON text), tool_call_id, kind, recap (JSON text), is_error, chars.
NewMessage = tuple[str, str, str | None, str | None, str | None, str | None, str | None, int, int]


def insert_new_messages(
    conn: sqlite3.Connection, session_id: str, messages: Sequence[NewMessage], created_at: str
) -> None:
    """Insert the messages of a session that has none yet, in one statement, all created
    at `created_at` (an import): no per-row sequence query, clock read or object."""
    conn.executemany(
        _INSERT_MESSAGE,
        [(session_id, seq, *fields, created_at) for seq, fields in enumerate(messages, start=1)],
    )


def _message_row(session_id: str, seq: int, message: Message, created: str) -> tuple[Any, ...]:
    tool_calls = (
        json.dumps([call.to_wire() for call in message.tool_calls]) if message.tool_calls else None
    )
    recap = json.dumps(message.recap.to_json()) if message.recap is not None else None
    return (
        session_id,
        seq,
        message.role,
        message.content,
        message.thinking,
        tool_calls,
        message.tool_call_id,
        message.kind,
        recap,
        int(message.is_error),
        message.chars,
        created,
    )


def message_from_row(row: sqlite3.Row) -> Message:
    """Rebuild a Message from its `messages` row (empty columns are not decoded)."""
    tool_calls, recap = row["tool_calls"], row["recap"]
    return Message(
        role=row["role"],
        content=row["content"],
        thinking=row["thinking"],
        tool_calls=tuple(ToolCall(**call) for call in json.loads(tool_calls)) if tool_calls else (),
        tool_call_id=row["tool_call_id"],
        kind=row["kind"],
        recap=Recap.from_json(json.loads(recap)) if recap else None,
        is_error=bool(row["is_error"]),
        id=row["id"],
        seq=row["seq"],
        created_at=row["created_at"],
        chars=row["chars"],
    )


def make_title(text: str) -> str:
    """A one-line title from a prompt."""
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


def _touch(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (utc_now(), session_id))


def _session_from_row(row: sqlite3.Row) -> SessionInfo:
    return SessionInfo(
        id=row["id"],
        project=row["project"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        max_turns=row["max_turns"],
        parent_id=row["parent_id"],
        last_input_tokens=row["last_input_tokens"],
        message_count=row["message_count"],
    )
