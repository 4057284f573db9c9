"""Deleting a session from `seri.db`: the one place where a session's rows are removed.

Nothing else ever deletes a session (`/clear` keeps the old one). A deletion takes the
session and its subagents' sessions (at any depth: they live inside its tasks and are
never listed on their own) with everything that refers to them: messages (and so their
full-text search rows, which the search index's triggers delete with them), path lists
and fired rules, checkpoints with their file rows and the stored file contents no other
checkpoint refers to, the retirement mark, recordings and their events, model-call
(spend) rows and the import mark. All of it goes in one transaction: a kill at any
instant leaves the whole session or none of it (`SERI_CRASH_AT=delete.in_transaction`
stops the process just before the commit).

What stays: a fork of the session keeps its own copy of the messages, and forgets only
where it came from (`forked_from` becomes NULL; its fork point stays, so a rewind there
still stops at it); the mark of a legacy `sessions/*.jsonl` import stays, so the file is
not imported again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from seri_lsp import faults
from seri_lsp.errors import SeriError, UnknownSession
from seri_lsp.store.checkpoints import collect_blobs
from seri_lsp.store.database import Database

# The tables whose rows name a session (column), deleted in this order; a table whose
# rows refer to another's (not by ON DELETE CASCADE) comes first. tests/test_delete.py
# checks that every table with a foreign key to `sessions` is here.
SESSION_ROWS: tuple[tuple[str, str], ...] = (
    ("session_rules_fired", "session_id"),
    ("messages", "session_id"),
    ("session_paths", "session_id"),
    ("session_events", "session_id"),
    ("checkpoints_retired", "session_id"),
    ("model_calls", "session_id"),
    ("session_imports", "session_id"),
    ("checkpoints", "session_id"),
    ("trajectories", "session_id"),
)
# Rows that refer to the session's rows in those tables (through a key of theirs), and
# are deleted just before them.
CHILD_ROWS: dict[str, tuple[str, str, str]] = {
    # table: (child table, its column, the parent's key)
    "checkpoints": ("checkpoint_files", "checkpoint_id", "id"),
    "trajectories": ("trajectory_events", "trajectory_id", "id"),
}

# The session and its subagents' sessions, and theirs.
_TREE = (
    "WITH RECURSIVE tree(id) AS (SELECT ? UNION"
    " SELECT s.id FROM sessions s JOIN tree ON s.parent_id = tree.id)"
)


class SubagentSession(SeriError):
    """The session is a subagent's, part of its parent's; it is deleted with the parent."""

    def __init__(self, session_id: str, parent_id: str) -> None:
        super().__init__(
            f"Session {session_id} is a subagent's session, part of session {parent_id}; "
            f"it is deleted with that session (seri.session.delete {parent_id})."
        )


@dataclass(frozen=True)
class Deletion:
    """What a deletion removed: the session (its id and title) and, counted with its
    subagents' sessions, their messages, checkpoints and recordings."""

    session_id: str
    title: str
    subagent_sessions: int
    messages: int
    checkpoints: int
    recordings: int


def delete_session(db: Database, session_id: str) -> Deletion:
    """Delete the session with exactly this id and its subagents' sessions, with all
    their rows, in one transaction. UnknownSession if there is none; SubagentSession for
    a subagent's session. The caller holds the session's lock."""
    with db.transaction() as tx:
        row = tx.execute(
            "SELECT title, parent_id FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            raise UnknownSession(session_id)
        if row["parent_id"] is not None:
            raise SubagentSession(session_id, row["parent_id"])
        ids = [r[0] for r in tx.execute(f"{_TREE} SELECT id FROM tree", (session_id,))]
        marks = ",".join("?" for _ in ids)
        deletion = Deletion(
            session_id=session_id,
            title=row["title"],
            subagent_sessions=len(ids) - 1,
            messages=_count(tx, "messages", marks, ids),
            checkpoints=_count(tx, "checkpoints", marks, ids),
            recordings=_count(tx, "trajectories", marks, ids),
        )
        shas = [
            sha
            for pair in tx.execute(
                "SELECT f.before_sha256, f.after_sha256 FROM checkpoint_files f"
                f" JOIN checkpoints c ON c.id = f.checkpoint_id WHERE c.session_id IN ({marks})",
                ids,
            )
            for sha in pair
        ]
        for table, column in SESSION_ROWS:
            child = CHILD_ROWS.get(table)
            if child is not None:
                child_table, child_column, key = child
                tx.execute(
                    f"DELETE FROM {child_table} WHERE {child_column} IN"
                    f" (SELECT {key} FROM {table} WHERE {column} IN ({marks}))",
                    ids,
                )
            tx.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", ids)
        collect_blobs(tx, shas)
        # A fork keeps its copy; only the name of its source goes (a foreign key).
        tx.execute(
            f"UPDATE sessions SET forked_from = NULL WHERE forked_from IN ({marks})"
            f" AND id NOT IN ({marks})",
            [*ids, *ids],
        )
        # Subagents first: each row is named by its children's parent_id.
        for deleted in reversed(ids):
            tx.execute("DELETE FROM sessions WHERE id = ?", (deleted,))
        faults.crash_point("delete.in_transaction")
    faults.crash_point("delete.committed")
    return deletion


def _count(tx: sqlite3.Connection, table: str, marks: str, ids: list[str]) -> int:
    row = tx.execute(f"SELECT COUNT(*) FROM {table} WHERE session_id IN ({marks})", ids).fetchone()
    return int(row[0])
