"""Sessions and their messages in `seri.db`: the durable record of every conversation.

Everything here is synchronous and small; the engine runs it on its database thread.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seri_lsp import faults
from seri_lsp.errors import UnknownSession
from seri_lsp.store.database import Database, utc_now
from seri_lsp.store.messages import (
    ENCODE_BATCH,
    INTERRUPTED_BY_EXIT,
    EncodedMessages,
    EncodedMessagesBuilder,
    Message,
    Recap,
    ToolCall,
    TurnEnd,
    TurnStatus,
    prompt_words,
    wire_message,
)
from seri_lsp.store.search_index import indexed_after
from seri_lsp.store.spend import (
    TOTALS_COLUMNS,
    TOTALS_WIDTH,
    Spend,
    SpendTotals,
    record_spend,
    totals_from_row,
)

TITLE_LENGTH = 80

# A session's row with its running totals (kept with every change of its messages, so
# reading a session never counts them).
_SESSION_COLUMNS = f"""
    s.id, s.project, s.title, s.created_at, s.updated_at, s.max_turns, s.parent_id,
    s.last_input_tokens, s.message_count, s.total_chars, s.forked_from, s.forked_at,
    s.forked_seq, s.model, {TOTALS_COLUMNS}
"""


@dataclass(frozen=True)
class Session:
    """A session as the contract shows it: `max_turns` the budget in force, `parent_id`
    the session it was forked from (or a subagent's parent)."""

    id: str
    project: str
    title: str
    created_at: str
    updated_at: str
    max_turns: int
    message_count: int
    parent_id: str | None
    forked_at: int | None
    spend: SpendTotals
    # The model its turns use: the one it chose (`seri.session.model`), else the
    # `provider.model` setting (None only where that setting is not known: the CLI).
    model: str | None = None


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
    # The characters of its messages (the running total behind the token estimate).
    total_chars: int = 0
    # A fork: the session it copied, the id there of the last message it copied, and that
    # message's position (the fork keeps it).
    forked_from: str | None = None
    forked_at: int | None = None
    forked_seq: int | None = None
    spend: SpendTotals = field(default_factory=SpendTotals)
    # The model it chose over the `provider.model` setting (None: the setting's).
    model: str | None = None

    def session(self, default_max_turns: int, default_model: str | None = None) -> Session:
        """The session as the contract shows it, `default_max_turns` the budget in force
        when it set none of its own, `default_model` the model when it chose none."""
        return Session(
            id=self.id,
            project=self.project,
            title=self.title,
            created_at=self.created_at,
            updated_at=self.updated_at,
            max_turns=self.max_turns if self.max_turns is not None else default_max_turns,
            message_count=self.message_count,
            parent_id=self.forked_from or self.parent_id,
            forked_at=self.forked_at,
            spend=self.spend,
            model=self.model or default_model,
        )


@dataclass(frozen=True)
class SessionPaths:
    """Paths a session's tools have read and modified (modified wins)."""

    read: tuple[str, ...]
    modified: tuple[str, ...]


@dataclass(frozen=True)
class Outline:
    """What a message is, without its text: enough to choose where a fork ends."""

    id: int
    seq: int
    role: str
    kind: str | None


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

    def is_imported(self, session_id: str) -> bool:
        """Whether the session was made by an import (`seri.session.import`)."""
        row = self.db.query_one("SELECT 1 FROM session_imports WHERE session_id = ?", (session_id,))
        return row is not None

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

    def recent(
        self,
        project: str | None,
        limit: int | None = None,
        offset: int = 0,
        *,
        with_messages: bool = False,
    ) -> list[SessionInfo]:
        """Top-level sessions, most recently touched first; all projects when None.

        At most `limit` of them (all when None), after skipping the first `offset`; with
        `with_messages`, only those that hold a message.
        """
        where = "s.parent_id IS NULL"
        if with_messages:
            where += " AND s.message_count > 0"
        params: list[Any] = []
        if project is not None:
            where += " AND s.project = ?"
            params.append(project)
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE {where}"
            " ORDER BY s.updated_at DESC, s.rowid DESC"
        )
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None else limit, offset]
        return [_session_from_row(row) for row in self.db.query(sql, params)]

    def touch(self, session_id: str) -> SessionInfo:
        """Mark the session as just used (so `continue` finds it) and return it."""
        with self.db.transaction() as tx:
            _touch(tx, session_id)
        return self.get(session_id)

    def rename(self, session_id: str, title: str) -> SessionInfo:
        """Give the session the user's title: kept from now on (a first prompt or a
        rewind does not replace it). Its last-touched time is left as it was."""
        with self.db.transaction() as tx:
            tx.execute(
                "UPDATE sessions SET title = ?, title_by_user = 1 WHERE id = ?", (title, session_id)
            )
        return self.get(session_id)

    def set_max_turns(self, session_id: str, max_turns: int) -> SessionInfo:
        """Persist a turn budget for the rest of this session."""
        with self.db.transaction() as tx:
            tx.execute("UPDATE sessions SET max_turns = ? WHERE id = ?", (max_turns, session_id))
            _touch(tx, session_id)
        return self.get(session_id)

    def set_model(self, session_id: str, model: str | None) -> SessionInfo:
        """Persist the model a session uses from its next turn (None: the setting's)."""
        with self.db.transaction() as tx:
            tx.execute("UPDATE sessions SET model = ? WHERE id = ?", (model, session_id))
            _touch(tx, session_id)
        return self.get(session_id)

    def fork(
        self,
        source_id: str,
        fork_id: str,
        *,
        point: Callable[[Sequence[Outline]], int],
        title: Callable[[str, bool, Callable[[str], bool]], str],
    ) -> tuple[SessionInfo, int]:
        """Copy session `source_id` up to a point into a new session `fork_id`, in one
        transaction, and return the fork and the id of the last message copied.

        `point(outline)` picks the index of the last message to copy from the source's
        messages in order (it may raise to refuse); `title(source title, whether the user
        gave it, taken)` names the fork, `taken(title)` telling a title the project has.
        The copy keeps the messages' positions and times, the path lists and glob rules
        noted up to that point, the turn budget and the model; the billed input-token count only
        when every message is copied. The fork's spend starts at zero and no checkpoint
        is copied. The source is only read.
        """
        with self.db.transaction() as tx:
            source = tx.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (source_id,)
            ).fetchone()
            if source is None:
                raise UnknownSession(source_id)
            outline = [
                Outline(*row)
                for row in tx.execute(
                    "SELECT id, seq, role, kind FROM messages WHERE session_id = ? ORDER BY seq",
                    (source_id,),
                )
            ]
            index = point(outline)
            last = outline[index]
            now = utc_now()
            (by_user,) = tx.execute(
                "SELECT title_by_user FROM sessions WHERE id = ?", (source_id,)
            ).fetchone()

            def taken(candidate: str) -> bool:
                return _title_taken(tx, source["project"], candidate)

            tx.execute(
                "INSERT INTO sessions (id, project, title, created_at, updated_at, max_turns,"
                " last_input_tokens, forked_from, forked_at, forked_seq, model)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fork_id,
                    source["project"],
                    title(source["title"], by_user, taken),
                    now,
                    now,
                    source["max_turns"],
                    source["last_input_tokens"] if index == len(outline) - 1 else None,
                    source_id,
                    last.id,
                    last.seq,
                    source["model"],
                ),
            )
            tx.execute(
                "INSERT INTO messages (session_id, seq, role, content, thinking, tool_calls,"
                " tool_call_id, kind, recap, is_error, chars, created_at, turn_status,"
                " turn_error)"
                " SELECT ?, seq, role, content, thinking, tool_calls, tool_call_id, kind, recap,"
                " is_error, chars, created_at, turn_status, turn_error FROM messages"
                " WHERE session_id = ? AND seq <= ? ORDER BY seq",
                (fork_id, source_id, last.seq),
            )
            tx.execute(
                "UPDATE sessions SET (message_count, total_chars) = (SELECT COUNT(*),"
                " COALESCE(SUM(chars), 0) FROM messages WHERE session_id = ?) WHERE id = ?",
                (fork_id, fork_id),
            )
            # Modified only if it was by then; noted before this migration (NULL): kept.
            tx.execute(
                "INSERT INTO session_paths (session_id, path, modified, seq, modified_seq)"
                " SELECT ?, path, modified AND COALESCE(modified_seq <= ?, 1),"
                " seq, CASE WHEN COALESCE(modified_seq <= ?, 0) THEN modified_seq END"
                " FROM session_paths WHERE session_id = ? AND COALESCE(seq <= ?, 1)"
                " ORDER BY rowid",
                (fork_id, last.seq, last.seq, source_id, last.seq),
            )
            # A rule delivered in the part copied stays delivered, tied to the fork's copy
            # of its message (the copy keeps positions).
            tx.execute(
                "INSERT INTO session_rules_fired (session_id, rule, message_id, seq)"
                " SELECT ?, r.rule, copy.id, copy.seq FROM session_rules_fired r"
                " JOIN messages original ON original.id = r.message_id"
                " JOIN messages copy ON copy.session_id = ? AND copy.seq = original.seq"
                " WHERE r.session_id = ? AND original.seq <= ? ORDER BY r.rowid",
                (fork_id, fork_id, source_id, last.seq),
            )
            return self._info(fork_id, tx), last.id

    # --- messages ---------------------------------------------------------------

    def messages(self, session_id: str) -> list[Message]:
        """The session's messages in conversation order."""
        rows = self.db.query(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        return [message_from_row(row) for row in rows]

    def wire_page(
        self, session_id: str, limit: int | None, before_seq: int | None = None
    ) -> tuple[list[dict[str, Any]], bool]:
        """The newest `limit` messages (all without a limit) before sequence number
        `before_seq` (when given), in conversation order, each straight from its row to
        its wire form (no Message in between: a view of a long session reads many), and
        whether older ones exist."""
        sql, params = _page_query(session_id, before_seq)
        if limit is None:
            return [_wire_from_row(row) for row in self.db.query_tuples(sql, params)], False
        rows = self.db.query_tuples(sql + " DESC LIMIT ?", [*params, limit + 1])
        has_more = len(rows) > limit
        return [_wire_from_row(row) for row in reversed(rows[:limit])], has_more

    def encoded_page(
        self, session_id: str, limit: int | None, before_seq: int | None = None
    ) -> tuple[EncodedMessages, bool]:
        """`wire_page` encoded as JSON; the whole history is read and encoded a batch of
        rows at a time, so it is never held as objects all at once."""
        if limit is not None:
            messages, has_more = self.wire_page(session_id, limit, before_seq)
            return EncodedMessages.of(messages), has_more
        builder = EncodedMessagesBuilder()
        sql, params = _page_query(session_id, before_seq)
        self.db.query_batches(
            sql, params, ENCODE_BATCH, lambda rows: builder.add([_wire_from_row(r) for r in rows])
        )
        return builder.done(), False

    def message_seq(self, session_id: str, message_id: int) -> int | None:
        """The sequence number of a message of this session; None if it has no such message."""
        row = self.db.query_one(
            "SELECT seq FROM messages WHERE id = ? AND session_id = ?", (message_id, session_id)
        )
        return row[0] if row else None

    def totals(self, session_id: str) -> tuple[int, int]:
        """(message count, total chars) of a session: its running totals, not a count."""
        row = self.db.query_one(
            "SELECT message_count, total_chars FROM sessions WHERE id = ?", (session_id,)
        )
        return (row[0], row[1]) if row is not None else (0, 0)

    def append(self, session_id: str, message: Message) -> Message:
        """Store a message at the end of the session; the first prompt names the session."""
        return self.write_step(session_id, (message,))[0]

    def write_step(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        billed: int | None = None,
        read: Iterable[str] = (),
        modified: Iterable[str] = (),
        rules: Iterable[tuple[str, int]] = (),
        spend: Spend | None = None,
        also: Callable[[sqlite3.Connection], None] | None = None,
        label: str = "step",
        turn_starts: bool = False,
    ) -> list[Message]:
        """Store one step of a turn in one transaction, and return its messages as stored.

        The messages go at the end of the session (the first prompt names it), with the
        running totals; `billed` (when given) becomes the last billed input-token count;
        the paths are noted at the step's place in the conversation, and each glob rule
        delivered (`rules`: its path and the position in `messages` of the message that
        delivers it) is marked as fired for as long as that message stays; `spend` (a
        model call's) is stored and counted; `also(tx)` writes whatever else belongs to
        the step (its recording events) in the same transaction; `turn_starts` marks the
        session's turn as running (`end_turn` closes it). All of it commits
        together or none of it does (`SERI_CRASH_AT=<label>.in_transaction` stops the
        process just before the commit).
        """
        with self.db.transaction() as tx:
            stored = append_messages(tx, session_id, messages, billed=billed) if messages else []
            seq = stored[-1].seq if stored else None
            note_paths(tx, session_id, read, modified, seq=seq)
            fired = [
                (session_id, rule, stored[index].id, stored[index].seq) for rule, index in rules
            ]
            if fired:
                tx.executemany(
                    "INSERT OR REPLACE INTO session_rules_fired (session_id, rule, message_id, seq)"
                    " VALUES (?, ?, ?, ?)",
                    fired,
                )
            if spend is not None:
                record_spend(tx, session_id, spend, stored[0].id if stored else None)
            if turn_starts:
                tx.execute(
                    "UPDATE sessions SET turn_started_at = ? WHERE id = ?", (utc_now(), session_id)
                )
            if also is not None:
                also(tx)
            faults.crash_point(f"{label}.in_transaction")
        return stored

    def end_turn(self, session_id: str, status: TurnStatus, error: str | None) -> int | None:
        """Close the session's running turn: its end goes on the last message of the
        conversation (None: the session has none). Returns that message's id."""
        with self.db.transaction() as tx:
            return _end_turn(tx, session_id, TurnEnd(status, error))

    def close_interrupted_turn(self, session_id: str) -> bool:
        """A turn still marked running when its session is opened (with the session's
        lock held, so no process runs it) was cut off by a process that died: it ends as
        `interrupted`. Reads only the session's row unless there is one."""
        row = self.db.query_one("SELECT turn_started_at FROM sessions WHERE id = ?", (session_id,))
        if row is None or row[0] is None:
            return False
        with self.db.transaction() as tx:
            _end_turn(tx, session_id, TurnEnd("interrupted", INTERRUPTED_BY_EXIT))
        return True

    def replace_prefix(
        self, session_id: str, evicted: Sequence[Message], recap: Message
    ) -> tuple[Message, set[str]]:
        """Compaction's commit: write the recap and delete the evicted messages at once.

        The recap takes the place (sequence number) of the last evicted message, so it
        sorts before everything kept. Both happen in one transaction or neither does. A
        glob rule whose message was evicted is no longer marked as fired (its mark goes
        with its message); returns the recap as stored and the rules still fired.
        """
        if not evicted:
            raise ValueError("nothing to evict")
        seq = max(m.seq for m in evicted if m.seq is not None)
        ids = [m.id for m in evicted]
        with self.db.transaction() as tx:
            placeholders = ",".join("?" for _ in ids)
            remove_messages(tx, session_id, f"id IN ({placeholders})", ids)
            faults.crash_point("compaction.in_transaction")
            stored = insert_message(tx, session_id, recap, seq=seq)
            tx.execute("UPDATE sessions SET last_input_tokens = NULL WHERE id = ?", (session_id,))
            _touch(tx, session_id)
            fired = {
                row[0]
                for row in tx.execute(
                    "SELECT rule FROM session_rules_fired WHERE session_id = ?", (session_id,)
                )
            }
        return stored, fired

    def import_conversation(
        self,
        project: str,
        *,
        digest: str,
        title: str,
        created_at: str | None,
        updated_at: str | None,
        messages: Sequence[Message],
        read: Iterable[str],
        modified: Iterable[str],
        last_input_tokens: int | None,
    ) -> tuple[SessionInfo, bool]:
        """A new session of `project` holding an imported conversation, written in one
        transaction, and True; or, when the content with this `digest` was imported into
        this project before, that session and False."""
        with self.db.transaction() as tx:
            known = tx.execute(
                "SELECT session_id FROM session_imports WHERE digest = ? AND project = ?",
                (digest, project),
            ).fetchone()
            if known is not None:
                return self._info(known[0], tx), False
            created = created_at or utc_now()
            # Its own title unless a session here has it (its source, imported back).
            title = marked_title(
                title, "imported", lambda t: _title_taken(tx, project, t), always=False
            )
            info = self.create(project, title=title, created_at=created, conn=tx)
            with indexed_after(tx, "m.session_id = ?", (info.id,)):
                append_messages(tx, info.id, messages)
            note_paths(tx, info.id, read, modified)
            tx.execute(
                "UPDATE sessions SET updated_at = ?, last_input_tokens = ? WHERE id = ?",
                (updated_at or created, last_input_tokens, info.id),
            )
            tx.execute(
                "INSERT INTO session_imports (digest, project, session_id, imported_at)"
                " VALUES (?, ?, ?, ?)",
                (digest, project, info.id, utc_now()),
            )
            return self._info(info.id, tx), True

    # --- paths and rules ---------------------------------------------------------

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
        """Glob rules delivered in this session whose message is still in it."""
        rows = self.db.query(
            "SELECT rule FROM session_rules_fired WHERE session_id = ?", (session_id,)
        )
        return {row["rule"] for row in rows}

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
    conn: sqlite3.Connection, session_id: str, message: Message, *, seq: int
) -> Message:
    """Insert a message at sequence number `seq` inside an open transaction.

    The session's running totals (message count, characters) count it.
    """
    stored = _insert_row(conn, session_id, seq, message)
    conn.execute(
        "UPDATE sessions SET message_count = message_count + 1, total_chars = total_chars + ?"
        " WHERE id = ?",
        (message.chars, session_id),
    )
    return stored


def append_messages(
    conn: sqlite3.Connection,
    session_id: str,
    messages: Sequence[Message],
    *,
    billed: int | None = None,
) -> list[Message]:
    """Insert messages at the end of a session inside an open transaction.

    One statement keeps the session's running totals and its time of last use, names
    it after its first prompt (when it has no title yet) and, with `billed`, sets the
    last billed input-token count.
    """
    last = _last_seq(conn, session_id)
    stored = [
        _insert_row(conn, session_id, seq, message)
        for seq, message in enumerate(messages, start=last + 1)
    ]
    prompt = next((m for m in messages if m.role == "user" and m.kind is None), None)
    title = make_title(prompt.content) if prompt is not None else None
    conn.execute(
        "UPDATE sessions SET message_count = message_count + ?, total_chars = total_chars + ?,"
        " updated_at = ?, title = CASE WHEN title = '' AND ? IS NOT NULL THEN ? ELSE title END,"
        " last_input_tokens = COALESCE(?, last_input_tokens) WHERE id = ?",
        (
            len(messages),
            sum(m.chars for m in messages),
            stored[-1].created_at if stored else utc_now(),
            title,
            title,
            billed,
            session_id,
        ),
    )
    return stored


def remove_messages(
    conn: sqlite3.Connection, session_id: str, where: str, params: Sequence[Any]
) -> None:
    """Delete the session's messages that match `where`, keeping its running totals."""
    condition = f"session_id = ? AND {where}"
    row = conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM(chars), 0) FROM messages WHERE {condition}",
        (session_id, *params),
    ).fetchone()
    conn.execute(f"DELETE FROM messages WHERE {condition}", (session_id, *params))
    conn.execute(
        "UPDATE sessions SET message_count = message_count - ?, total_chars = total_chars - ?"
        " WHERE id = ?",
        (row[0], row[1], session_id),
    )


def note_paths(
    conn: sqlite3.Connection,
    session_id: str,
    read: Iterable[str],
    modified: Iterable[str],
    *,
    seq: int | None = None,
) -> None:
    """Note paths the tools touched inside an open transaction (modified wins), at
    position `seq` of the conversation (None: unknown, as for an import)."""
    rows = [(session_id, path, seq) for path in read]
    if rows:
        conn.executemany(
            "INSERT OR IGNORE INTO session_paths (session_id, path, modified, seq)"
            " VALUES (?, ?, 0, ?)",
            rows,
        )
    changed = [(session_id, path, seq, seq) for path in modified]
    if changed:
        conn.executemany(
            "INSERT INTO session_paths (session_id, path, modified, seq, modified_seq)"
            " VALUES (?, ?, 1, ?, ?) ON CONFLICT (session_id, path) DO UPDATE SET"
            " modified_seq = CASE WHEN modified = 1 THEN modified_seq ELSE excluded.seq END,"
            " modified = 1",
            changed,
        )


def _end_turn(conn: sqlite3.Connection, session_id: str, end: TurnEnd) -> int | None:
    """Put a turn's end on the session's last message and mark no turn running."""
    conn.execute("UPDATE sessions SET turn_started_at = NULL WHERE id = ?", (session_id,))
    row = conn.execute(
        "SELECT id FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (session_id,)
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        "UPDATE messages SET turn_status = ?, turn_error = ? WHERE id = ?",
        (end.status, end.error, row[0]),
    )
    return int(row[0])


def _insert_row(conn: sqlite3.Connection, session_id: str, seq: int, message: Message) -> Message:
    created = message.created_at or utc_now()
    cursor = conn.execute(_INSERT_MESSAGE, _message_row(session_id, seq, message, created))
    assert cursor.lastrowid is not None
    if message.turn_end is not None:  # an imported turn's end
        conn.execute(
            "UPDATE messages SET turn_status = ?, turn_error = ? WHERE id = ?",
            (message.turn_end.status, message.turn_end.error, cursor.lastrowid),
        )
    return message.stored(id=cursor.lastrowid, seq=seq, created_at=created)


def _last_seq(conn: sqlite3.Connection, session_id: str) -> int:
    row = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
    ).fetchone()
    return row[0]


# A message as insert_new_messages stores it, in column order: role, content, thinking,
# tool_calls (JSON text), tool_call_id, kind, recap (JSON text), is_error, chars.
NewMessage = tuple[str, str, str | None, str | None, str | None, str | None, str | None, int, int]


def insert_new_messages(
    conn: sqlite3.Connection, session_id: str, messages: Sequence[NewMessage], created_at: str
) -> None:
    """Insert the messages of a session that has none yet, in one statement, all created
    at `created_at` (an import): no per-row sequence query, clock read or object."""
    with indexed_after(conn, "m.session_id = ?", (session_id,)):
        conn.executemany(
            _INSERT_MESSAGE,
            [
                (session_id, seq, *fields, created_at)
                for seq, fields in enumerate(messages, start=1)
            ],
        )
    conn.execute(
        "UPDATE sessions SET message_count = message_count + ?, total_chars = total_chars + ?"
        " WHERE id = ?",
        (len(messages), sum(fields[8] for fields in messages), session_id),
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
    tool_calls, recap, status = row["tool_calls"], row["recap"], row["turn_status"]
    return Message(
        role=row["role"],
        content=row["content"],
        thinking=row["thinking"],
        tool_calls=tuple(ToolCall(**call) for call in json.loads(tool_calls)) if tool_calls else (),
        tool_call_id=row["tool_call_id"],
        kind=row["kind"],
        recap=Recap.from_json(json.loads(recap)) if recap else None,
        is_error=bool(row["is_error"]),
        turn_end=TurnEnd(status, row["turn_error"]) if status else None,
        id=row["id"],
        seq=row["seq"],
        created_at=row["created_at"],
        chars=row["chars"],
    )


_WIRE_COLUMNS = (
    "id, created_at, role, content, thinking, tool_calls, tool_call_id, kind, recap, is_error,"
    " turn_status, turn_error"
)


def _page_query(session_id: str, before_seq: int | None) -> tuple[str, list[Any]]:
    """The read of a session's messages in conversation order (before `before_seq`)."""
    where, params = "session_id = ?", list[Any]([session_id])
    if before_seq is not None:
        where += " AND seq < ?"
        params.append(before_seq)
    return f"SELECT {_WIRE_COLUMNS} FROM messages WHERE {where} ORDER BY seq", params


def _wire_from_row(row: tuple[Any, ...]) -> dict[str, Any]:
    """A message's wire form from its `_WIRE_COLUMNS` row (as `Message.to_wire` gives)."""
    message_id, created_at, role, content, thinking, calls, call_id, kind, recap, error = row[:10]
    status, turn_error = row[10:]
    return wire_message(
        message_id,
        created_at,
        role,
        content,
        thinking,
        [
            {"id": call["id"], "name": call["name"], "arguments": call["arguments"]}
            for call in json.loads(calls)
        ]
        if calls
        else [],
        call_id,
        kind,
        Recap.from_json(json.loads(recap)).to_json() if recap else None,
        error,
        TurnEnd(status, turn_error) if status else None,
    )


def marked_title(
    title: str, word: str, taken: Callable[[str], bool], *, always: bool, by_user: bool = False
) -> str:
    """A title for a copy of a session titled `title` (a fork, an import) that no session
    of the project has yet (`taken`): the title itself when `always` is false and it is
    free (or empty: an untitled import stays so), else "<title> (<word>)", then
    "<title> (<word> 2)", 3, ... A mark of the same word the title already ends with is
    replaced, not repeated ("a (fork)" forks to "a (fork 2)") unless the user gave the
    title (`by_user`: it is kept whole as the base); the title is cut short so the mark
    fits the title length."""
    base = title if by_user else re.sub(rf" \({re.escape(word)}(?: \d+)?\)$", "", title)
    if not always and (not title or not taken(title)):
        return title
    number = 1
    while True:
        mark = f"({word})" if number == 1 else f"({word} {number})"
        room = TITLE_LENGTH - len(mark) - 1
        cut = base if len(base) <= room else base[: room - 1].rstrip() + "…"
        candidate = f"{cut} {mark}" if cut else mark
        if not taken(candidate):
            return candidate
        number += 1


def make_title(text: str) -> str:
    """A one-line title from a prompt (its own words, not what was attached to it)."""
    line = " ".join(prompt_words(text).split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


def _title_taken(conn: sqlite3.Connection, project: str, title: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sessions WHERE project = ? AND title = ? LIMIT 1", (project, title)
    ).fetchone()
    return row is not None


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
        total_chars=row["total_chars"],
        forked_from=row["forked_from"],
        forked_at=row["forked_at"],
        forked_seq=row["forked_seq"],
        model=row["model"],
        spend=totals_from_row(tuple(row)[-TOTALS_WIDTH:]),
    )
