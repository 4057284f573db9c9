"""Checkpoints in `seri.db`: what `/rewind` needs to undo a prompt, and nothing more.

A checkpoint is taken before each user prompt's task: the position the prompt takes in
the conversation (`prompt_seq`, the `messages.seq` of the prompt) and a snapshot of what
else the conversation carried then (title, path lists, the last billed input-token
count; the glob rules delivered need none: their marks go with their messages). While
the task runs, every file its tools change gets a row: the content before the task's
first change (NULL: the file did not exist) and what seri last wrote to it (NULL:
absent), both as SHA-256 keys into `blobs`.

Blobs are content-addressed: a content is stored once however many rows refer to it,
and deleted in the same transaction that drops the last row referring to it.

Retention keeps checkpoints for the 20 most recently touched top-level sessions of each
project; the others lose theirs (never their conversation) and are recorded in
`checkpoints_retired`, so a rewind can say why it cannot go back.

Everything here is synchronous; the engine runs it on its database thread.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from seri_lsp.store.database import Database, utc_now
from seri_lsp.store.sessions import remove_messages

# Sessions per project whose checkpoints are kept (the most recently touched ones).
KEEP_SESSIONS = 20


def sha256_of(data: bytes) -> str:
    """The key a content is stored under."""
    import hashlib  # only when needed: not at start-up

    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FileChange:
    """One file a checkpoint's task changed."""

    path: str  # canonical absolute path
    display: str  # as the tools show it (workspace-relative)
    before: str | None  # sha256 of the content before the task; None: absent
    after: str | None  # sha256 of what seri last wrote; None: absent (deleted)


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint and the files its task changed (in the order first changed)."""

    id: int
    session_id: str
    prompt_seq: int
    prompt: str
    state: dict[str, Any]
    created_at: str
    files: tuple[FileChange, ...] = ()


@dataclass(frozen=True)
class Retirement:
    """Retention deleted the session's checkpoints for prompts up to `through_seq`."""

    through_seq: int
    retired_at: str


@dataclass(frozen=True)
class Prompt:
    """A user prompt still in the conversation."""

    seq: int
    text: str


@dataclass
class SessionCheckpoints:
    """What a rewind of one session needs to know, read in one go."""

    prompts: list[Prompt]  # newest first; only those the conversation still holds
    compacted: bool  # the conversation starts with a recap
    checkpoints: dict[int, Checkpoint] = field(default_factory=dict)  # by prompt_seq
    retired: Retirement | None = None
    # A fork: the session it was forked from (None: since deleted) and the position of
    # the last message it copied (the copied prompts have no checkpoints here).
    forked: tuple[str | None, int] | None = None


class CheckpointStore:
    """Reads and writes checkpoints, their file rows and blobs."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- taking ---------------------------------------------------------------------

    def take(self, session_id: str, prompt: str) -> Checkpoint:
        """Record a checkpoint for the prompt about to be stored in `session_id`.

        Checkpoints that can never be reached again are dropped on the way: those whose
        prompt a compaction evicted, and one left at this position by a prompt that
        never got stored.
        """
        with self.db.transaction() as tx:
            row = tx.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            position = row[0]
            recap = _last_recap_seq(tx, session_id)
            stale = [
                r["id"]
                for r in tx.execute(
                    "SELECT id FROM checkpoints WHERE session_id = ?"
                    " AND (prompt_seq >= ? OR prompt_seq <= ?)",
                    (session_id, position, recap),
                )
            ]
            collect_blobs(tx, _delete_checkpoints(tx, stale))
            state = _snapshot(tx, session_id)
            created = utc_now()
            cursor = tx.execute(
                "INSERT INTO checkpoints (session_id, prompt_seq, prompt, state, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, position, prompt, json.dumps(state), created),
            )
            assert cursor.lastrowid is not None
        return Checkpoint(cursor.lastrowid, session_id, position, prompt, state, created)

    def record_before(
        self, checkpoint_id: int, path: str, display: str, data: bytes | None
    ) -> bool:
        """The content of `path` before the task's first change to it (None: absent).

        Only the first call for a path counts. False when the checkpoint is gone (its
        session's checkpoints were retired meanwhile).
        """
        with self.db.transaction() as tx:
            sha = _put_blob(tx, data)
            cursor = tx.execute(
                "INSERT OR IGNORE INTO checkpoint_files"
                " (checkpoint_id, path, display, before_sha256, after_sha256)"
                " SELECT id, ?, ?, ?, ? FROM checkpoints WHERE id = ?",
                (path, display, sha, sha, checkpoint_id),
            )
            inserted = cursor.rowcount > 0
            exists = inserted or _has_checkpoint(tx, checkpoint_id)
            if not inserted:
                collect_blobs(tx, [sha])
        return exists

    def record_after(self, checkpoint_id: int, path: str, data: bytes | None) -> None:
        """What seri just wrote to `path` (None: it is absent now)."""
        with self.db.transaction() as tx:
            row = tx.execute(
                "SELECT after_sha256 FROM checkpoint_files WHERE checkpoint_id = ? AND path = ?",
                (checkpoint_id, path),
            ).fetchone()
            if row is None:
                return
            sha = _put_blob(tx, data)
            tx.execute(
                "UPDATE checkpoint_files SET after_sha256 = ? WHERE checkpoint_id = ? AND path = ?",
                (sha, checkpoint_id, path),
            )
            collect_blobs(tx, [row["after_sha256"]])

    # --- reading --------------------------------------------------------------------

    def session(self, session_id: str) -> SessionCheckpoints:
        """The session's prompts, checkpoints and retirement, for listing and rewinding."""
        with self.db.transaction() as tx:  # one consistent read
            prompts = [
                Prompt(r["seq"], r["content"])
                for r in tx.execute(
                    "SELECT seq, content FROM messages WHERE session_id = ? AND role = 'user'"
                    " AND kind IS NULL ORDER BY seq DESC",
                    (session_id,),
                )
            ]
            compacted = _last_recap_seq(tx, session_id) > 0
            checkpoints = _checkpoints(tx, session_id)
            retired = tx.execute(
                "SELECT through_seq, retired_at FROM checkpoints_retired WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            fork = tx.execute(
                "SELECT forked_from, forked_seq FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return SessionCheckpoints(
            prompts=prompts,
            compacted=compacted,
            checkpoints={c.prompt_seq: c for c in checkpoints},
            retired=Retirement(retired["through_seq"], retired["retired_at"]) if retired else None,
            forked=(fork[0], fork[1]) if fork is not None and fork[1] is not None else None,
        )

    def blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Stored contents by their key."""
        found = {}
        for sha in set(shas):
            row = self.db.query_one("SELECT content FROM blobs WHERE sha256 = ?", (sha,))
            if row is not None:
                found[sha] = bytes(row["content"])
        return found

    # --- rewinding ------------------------------------------------------------------

    def files_restored(
        self, checkpoint_ids: Iterable[int], restored: Mapping[str, str | None]
    ) -> None:
        """A files-only rewind: the restored contents are now what seri last wrote.

        The checkpoints stay (their prompts stay in the conversation); a later rewind
        compares the files with what this one wrote, not with what the tasks wrote.
        """
        ids = list(checkpoint_ids)
        if not ids or not restored:
            return
        marks = ",".join("?" for _ in ids)
        with self.db.transaction() as tx:
            old = []
            for path, sha in restored.items():
                rows = tx.execute(
                    f"SELECT after_sha256 FROM checkpoint_files WHERE path = ?"
                    f" AND checkpoint_id IN ({marks})",
                    (path, *ids),
                ).fetchall()
                old += [r["after_sha256"] for r in rows]
                tx.execute(
                    f"UPDATE checkpoint_files SET after_sha256 = ? WHERE path = ?"
                    f" AND checkpoint_id IN ({marks})",
                    (sha, path, *ids),
                )
            collect_blobs(tx, old)

    def truncate(
        self, session_id: str, cut_seq: int, restored: Mapping[str, str | None]
    ) -> tuple[dict[str, Any], bool]:
        """Remove the prompt at `cut_seq` and everything after it, in one transaction.

        The messages go, and so do the checkpoints of those prompts; the conversation's
        title, path lists and billed count go back to the snapshot taken
        before that prompt (the billed count is forgotten if a compaction ran since).
        What seri last wrote to each file those tasks changed is carried to the newest
        remaining checkpoint that changed it: `restored` (path -> content key) for the
        files this rewind put back, else the rewound tasks' own last write. Returns the
        snapshot that was restored, and whether a compaction ran after that prompt (it
        kept the prompt, so its recap of the earlier history stays).
        """
        with self.db.transaction() as tx:
            cut = tx.execute(
                "SELECT state, created_at FROM checkpoints WHERE session_id = ? AND prompt_seq = ?",
                (session_id, cut_seq),
            ).fetchone()
            if cut is None:
                raise ValueError(f"no checkpoint at {cut_seq} in session {session_id}")
            state = json.loads(cut["state"])
            removed = [c for c in _checkpoints(tx, session_id) if c.prompt_seq >= cut_seq]
            last_write: dict[str, str | None] = {}
            for checkpoint in removed:  # oldest first: the newest write wins
                for change in checkpoint.files:
                    last_write[change.path] = change.after
            old: list[str | None] = []
            for path, after in last_write.items():
                sha = restored.get(path, after)
                keeper = tx.execute(
                    "SELECT f.checkpoint_id, f.after_sha256 FROM checkpoint_files f"
                    " JOIN checkpoints c ON c.id = f.checkpoint_id"
                    " WHERE c.session_id = ? AND c.prompt_seq < ? AND f.path = ?"
                    " ORDER BY c.prompt_seq DESC LIMIT 1",
                    (session_id, cut_seq, path),
                ).fetchone()
                if keeper is not None:
                    old.append(keeper["after_sha256"])
                    tx.execute(
                        "UPDATE checkpoint_files SET after_sha256 = ?"
                        " WHERE checkpoint_id = ? AND path = ?",
                        (sha, keeper["checkpoint_id"], path),
                    )
            old += _delete_checkpoints(tx, [c.id for c in removed])
            remove_messages(tx, session_id, "seq >= ?", (cut_seq,))
            compacted_since = tx.execute(
                "SELECT 1 FROM messages WHERE session_id = ? AND kind = 'recap' AND created_at > ?",
                (session_id, cut["created_at"]),
            ).fetchone()
            if compacted_since:
                state["lastInputTokens"] = None
            _restore_snapshot(tx, session_id, state)
            collect_blobs(tx, old)
        return state, compacted_since is not None

    # --- retention ------------------------------------------------------------------

    def retain(
        self,
        project: str,
        *,
        keep: int = KEEP_SESSIONS,
        spare: Callable[[str], bool] = lambda session_id: False,
    ) -> list[str]:
        """Delete the checkpoints of the project's sessions beyond the `keep` most recent.

        Those sessions are marked retired; `spare(session_id)` keeps a session's
        checkpoints anyway (one that another seri process has open). Returns the ids
        of the sessions retired now.
        """
        with self.db.transaction() as tx:
            rows = tx.execute(
                "SELECT s.id FROM sessions s WHERE s.project = ? AND s.parent_id IS NULL"
                " AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.session_id = s.id)"
                " AND s.id NOT IN (SELECT t.id FROM sessions t WHERE t.project = ?"
                "   AND t.parent_id IS NULL ORDER BY t.updated_at DESC, t.rowid DESC LIMIT ?)",
                (project, project, keep),
            ).fetchall()
            retired = [row["id"] for row in rows if not spare(row["id"])]
            for session_id in retired:
                ids, through = [], 0
                for row in tx.execute(
                    "SELECT id, prompt_seq FROM checkpoints WHERE session_id = ?", (session_id,)
                ):
                    ids.append(row["id"])
                    through = max(through, row["prompt_seq"])
                collect_blobs(tx, _delete_checkpoints(tx, ids))
                tx.execute(
                    "INSERT INTO checkpoints_retired (session_id, through_seq, retired_at)"
                    " VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                    " through_seq = MAX(through_seq, excluded.through_seq),"
                    " retired_at = excluded.retired_at",
                    (session_id, through, utc_now()),
                )
        return retired


# --- inside a transaction -------------------------------------------------------------


def _last_recap_seq(tx: sqlite3.Connection, session_id: str) -> int:
    row = tx.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ? AND kind = 'recap'",
        (session_id,),
    ).fetchone()
    return row[0]


def _has_checkpoint(tx: sqlite3.Connection, checkpoint_id: int) -> bool:
    row = tx.execute("SELECT 1 FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
    return row is not None


def _checkpoints(tx: sqlite3.Connection, session_id: str) -> list[Checkpoint]:
    """The session's checkpoints, oldest first, each with its files."""
    files: dict[int, list[FileChange]] = {}
    for row in tx.execute(
        "SELECT f.checkpoint_id, f.path, f.display, f.before_sha256, f.after_sha256"
        " FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id"
        " WHERE c.session_id = ? ORDER BY f.rowid",
        (session_id,),
    ):
        files.setdefault(row["checkpoint_id"], []).append(
            FileChange(row["path"], row["display"], row["before_sha256"], row["after_sha256"])
        )
    return [
        Checkpoint(
            id=row["id"],
            session_id=session_id,
            prompt_seq=row["prompt_seq"],
            prompt=row["prompt"],
            state=json.loads(row["state"]),
            created_at=row["created_at"],
            files=tuple(files.get(row["id"], ())),
        )
        for row in tx.execute(
            "SELECT id, prompt_seq, prompt, state, created_at FROM checkpoints"
            " WHERE session_id = ? ORDER BY prompt_seq",
            (session_id,),
        )
    ]


def _put_blob(tx: sqlite3.Connection, data: bytes | None) -> str | None:
    """Store a content once (None stands for "absent" and stores nothing)."""
    if data is None:
        return None
    sha = sha256_of(data)
    tx.execute(
        "INSERT OR IGNORE INTO blobs (sha256, content, size) VALUES (?, ?, ?)",
        (sha, data, len(data)),
    )
    return sha


def _delete_checkpoints(tx: sqlite3.Connection, ids: list[int]) -> list[str | None]:
    """Delete checkpoints and their file rows; returns the content keys they referred to."""
    if not ids:
        return []
    marks = ",".join("?" for _ in ids)
    shas: list[str | None] = []
    for row in tx.execute(
        f"SELECT before_sha256, after_sha256 FROM checkpoint_files"
        f" WHERE checkpoint_id IN ({marks})",
        ids,
    ):
        shas += [row["before_sha256"], row["after_sha256"]]
    tx.execute(f"DELETE FROM checkpoint_files WHERE checkpoint_id IN ({marks})", ids)
    tx.execute(f"DELETE FROM checkpoints WHERE id IN ({marks})", ids)
    return shas


def collect_blobs(tx: sqlite3.Connection, shas: Iterable[str | None]) -> None:
    """Delete the blobs among `shas` that no checkpoint row refers to any more."""
    for sha in {sha for sha in shas if sha is not None}:
        tx.execute(
            "DELETE FROM blobs WHERE sha256 = ?"
            " AND NOT EXISTS (SELECT 1 FROM checkpoint_files WHERE before_sha256 = ?)"
            " AND NOT EXISTS (SELECT 1 FROM checkpoint_files WHERE after_sha256 = ?)",
            (sha, sha, sha),
        )


def _snapshot(tx: sqlite3.Connection, session_id: str) -> dict[str, Any]:
    """What a conversation rewind puts back besides the messages."""
    session = tx.execute(
        "SELECT title, last_input_tokens FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    path_rows = tx.execute(
        "SELECT path, modified, seq, modified_seq FROM session_paths WHERE session_id = ?"
        " ORDER BY rowid",
        (session_id,),
    ).fetchall()
    return {
        "title": session["title"] if session else "",
        "lastInputTokens": session["last_input_tokens"] if session else None,
        "paths": [[row["path"], bool(row["modified"])] for row in path_rows],
        # Where each was noted (a fork keeps those of the part it copies).
        "pathSeqs": {row["path"]: [row["seq"], row["modified_seq"]] for row in path_rows},
    }


def _restore_snapshot(tx: sqlite3.Connection, session_id: str, state: dict[str, Any]) -> None:
    # A title the user gave stays: it was given to the session, not to a prompt.
    tx.execute(
        "UPDATE sessions SET title = CASE WHEN title_by_user THEN title ELSE ? END,"
        " last_input_tokens = ?, updated_at = ? WHERE id = ?",
        (state.get("title", ""), state.get("lastInputTokens"), utc_now(), session_id),
    )
    # A snapshot taken before forks existed has no positions: NULL, kept by every fork.
    # (The glob rules delivered need no snapshot: their marks go with their messages;
    # the `rules` of an older snapshot are not used.)
    path_seqs = state.get("pathSeqs", {})
    tx.execute("DELETE FROM session_paths WHERE session_id = ?", (session_id,))
    for path, modified in state.get("paths", []):
        seq, modified_seq = path_seqs.get(path, (None, None))
        tx.execute(
            "INSERT OR IGNORE INTO session_paths (session_id, path, modified, seq, modified_seq)"
            " VALUES (?, ?, ?, ?, ?)",
            (session_id, path, int(bool(modified)), seq, modified_seq),
        )
