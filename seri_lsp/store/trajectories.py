"""Recordings (trajectories) in `seri.db`, and the legacy `trajectories/*.jsonl` files.

A recording belongs to one session opened in one process: a header (the settings in
force when it started) and its events, numbered in order. `updated_at` is the time of
its newest record (the header or an event), which is what retention goes by.

Everything here is synchronous and small; the engine runs it on its database thread.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
import uuid
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from seri_lsp.errors import InvalidArgument
from seri_lsp.store.database import Database, format_time, utc_now

LEGACY_DIR = "trajectories"
LEGACY_SESSIONS_DIR = "sessions"


class UnknownRecording(InvalidArgument):
    """No recording (and no session with one) answers to the given id."""

    def __init__(self, given: str, detail: str = "") -> None:
        message = f"No recording matches {given!r}"
        message += f": {detail}" if detail else "; `seri-lsp trajectory list` lists them."
        super().__init__("trajectoryId", message)


@dataclass(frozen=True)
class RecordingInfo:
    """A recording's row with what lists show about it (its header, in full, is not
    listed: `model` is taken from it)."""

    id: str
    session_id: str
    started_at: str
    updated_at: str
    model: str | None
    events: int
    project: str | None
    title: str | None
    header: dict[str, Any]


@dataclass(frozen=True)
class Recorded:
    """One recorded event, as `show` and `seri.trajectory.get` give it."""

    seq: int
    kind: str
    created_at: str
    data: dict[str, Any]
    # Only where events of several recordings are given together (`compacted`).
    trajectory_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Trajectory:
    """A recording with its events and its session's recordings (`seri.trajectory.get`);
    `id` None: the session has none (then no times either)."""

    id: str | None
    session_id: str | None
    started_at: str | None = None
    updated_at: str | None = None
    recording: bool
    header: dict[str, Any] | None
    events: list[Recorded]
    recordings: list[RecordingInfo]
    # Where the record asked for is when it is not the asked session's own: a fork's
    # compacted turns are its source's (`session_id` then names the source).
    note: str | None = None


@dataclass
class PruneReport:
    """What retention deleted."""

    recordings: list[tuple[str, str]] = field(default_factory=list)  # (recording, session)
    files: list[str] = field(default_factory=list)
    failed_files: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.recordings or self.files or self.failed_files)


# A recording as `RecordingInfo` reads it: its row, its event count, its session's
# project and title.
_INFO_SELECT = (
    "SELECT t.id, t.session_id, t.started_at, t.updated_at, t.header,"
    " (SELECT COUNT(*) FROM trajectory_events e WHERE e.trajectory_id = t.id) AS events,"
    " s.project, s.title"
    " FROM trajectories t LEFT JOIN sessions s ON s.id = t.session_id"
)


class TrajectoryStore:
    """Writes and reads recordings."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # --- writing ------------------------------------------------------------------

    def start(self, session_id: str, header: dict[str, Any]) -> str:
        """Begin a recording of `session_id` with its header; returns the recording id
        (the header's `trajectoryId`, or a new one)."""
        trajectory_id = header.get("trajectoryId") or str(uuid.uuid4())
        now = header.get("startedAt") or utc_now()
        with self.db.transaction() as tx:
            tx.execute(
                "INSERT INTO trajectories (id, session_id, started_at, updated_at, header)"
                " VALUES (?, ?, ?, ?, ?)",
                (trajectory_id, session_id, now, now, _dumps(header)),
            )
        return trajectory_id

    def append(
        self,
        trajectory_id: str,
        session_id: str,
        header: dict[str, Any],
        seq: int,
        kind: str,
        data: dict[str, Any],
    ) -> None:
        """Add event number `seq`. A recording pruned meanwhile by another process is
        started again under its id and header, so the events that follow are kept."""
        with self.db.transaction() as tx:
            write_events(tx, trajectory_id, session_id, header, [(seq, kind, data)])

    def update_header(self, trajectory_id: str, header: dict[str, Any]) -> None:
        """Replace the header (a value learnt after the start, such as the window)."""
        with self.db.transaction() as tx:
            tx.execute(
                "UPDATE trajectories SET header = ? WHERE id = ?", (_dumps(header), trajectory_id)
            )

    # --- reading ------------------------------------------------------------------

    def recordings(
        self, session_id: str | None = None, limit: int | None = None
    ) -> list[RecordingInfo]:
        """Recordings, newest first (by start), with their event counts."""
        sql = _INFO_SELECT
        params: list[Any] = []
        if session_id is not None:
            sql += " WHERE t.session_id = ?"
            params.append(session_id)
        sql += " ORDER BY t.started_at DESC, t.rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_info(row) for row in self.db.query(sql, params)]

    def info(self, trajectory_id: str) -> RecordingInfo | None:
        rows = self.db.query(_INFO_SELECT + " WHERE t.id = ?", (trajectory_id,))
        return _info(rows[0]) if rows else None

    def events(self, trajectory_id: str) -> list[Recorded]:
        """A recording's events in order."""
        rows = self.db.query(
            "SELECT seq, kind, data, created_at FROM trajectory_events"
            " WHERE trajectory_id = ? ORDER BY seq",
            (trajectory_id,),
        )
        return [
            Recorded(row["seq"], row["kind"], row["created_at"], json.loads(row["data"]))
            for row in rows
        ]

    def before_compaction(self, session_id: str) -> tuple[str, list[Recorded]] | None:
        """What the session's recordings hold of the turns its latest compaction replaced:
        the recording where the compaction was recorded, and the events of that recording
        up to and including the `compaction` event, after those of the session's earlier
        recordings, each event naming its recording; the turns of the prompts the
        conversation kept (the event's `keptPrompts`, from their `task_started` on) are
        left out. None: no compaction of the session was recorded."""
        found = self.db.query_one(
            "SELECT t.id, e.seq FROM trajectory_events e"
            " JOIN trajectories t ON t.id = e.trajectory_id"
            " WHERE t.session_id = ? AND e.kind = 'compaction'"
            " AND json_extract(e.data, '$.outcome') = 'compacted'"
            " ORDER BY t.started_at DESC, t.rowid DESC, e.seq DESC LIMIT 1",
            (session_id,),
        )
        if found is None:
            return None
        rows = self.db.query(
            "SELECT e.trajectory_id, e.seq, e.kind, e.data, e.created_at"
            " FROM trajectory_events e JOIN trajectories t ON t.id = e.trajectory_id"
            " WHERE t.session_id = ? AND (t.id = ? AND e.seq <= ? OR t.id != ?"
            " AND (t.started_at, t.rowid) < (SELECT started_at, rowid FROM trajectories"
            " WHERE id = ?))"
            " ORDER BY t.started_at, t.rowid, e.seq",
            (session_id, found["id"], found["seq"], found["id"], found["id"]),
        )
        events = [
            Recorded(
                row["seq"],
                row["kind"],
                row["created_at"],
                json.loads(row["data"]),
                row["trajectory_id"],
            )
            for row in rows
        ]
        kept = events[-1].data.get("keptPrompts") if events else None
        if isinstance(kept, int) and kept > 0:
            starts = [i for i, e in enumerate(events[:-1]) if e.kind == "task_started"]
            if len(starts) >= kept:
                events = events[: starts[-kept]] + events[-1:]
        return found["id"], events

    def latest_of(self, session_id: str) -> str | None:
        """The newest recording of a session, if it has any."""
        row = self.db.query_one(
            "SELECT id FROM trajectories WHERE session_id = ?"
            " ORDER BY started_at DESC, rowid DESC LIMIT 1",
            (session_id,),
        )
        return row["id"] if row else None

    def resolve(self, given: str) -> str:
        """A recording id from what the user typed.

        In order: a recording id; a session id (its newest recording); a unique prefix
        of the recording ids and session ids together (a session standing for its newest
        recording). UnknownRecording when nothing, or more than one thing, matches.
        """
        given = given.strip()
        if not given:
            raise UnknownRecording(given)
        if self.db.query_one("SELECT 1 FROM trajectories WHERE id = ?", (given,)):
            return given
        latest = self.latest_of(given)
        if latest is not None:
            return latest
        pattern = _like_prefix(given)
        recordings = [
            row["id"]
            for row in self.db.query(
                "SELECT id FROM trajectories WHERE id LIKE ? ESCAPE '\\' LIMIT 6", (pattern,)
            )
        ]
        sessions = [
            row["session_id"]
            for row in self.db.query(
                "SELECT DISTINCT session_id FROM trajectories"
                " WHERE session_id LIKE ? ESCAPE '\\' LIMIT 6",
                (pattern,),
            )
        ]
        matches = [f"recording {r}" for r in recordings] + [f"session {s}" for s in sessions]
        if len(matches) == 1:
            return recordings[0] if recordings else self.latest_of(sessions[0]) or ""
        if matches:
            raise UnknownRecording(given, f"it matches {', '.join(matches[:5])}; give more")
        if self.db.query_one("SELECT 1 FROM sessions WHERE id = ?", (given,)):
            raise UnknownRecording(given, "that session has no recording")
        raise UnknownRecording(given)

    # --- retention ----------------------------------------------------------------

    def prune_candidates(self, cutoff: str | None, keep: Collection[str]) -> dict[str, list[str]]:
        """Session -> recording ids that retention would delete.

        With a `cutoff`, the recordings of every session whose newest record is older
        than it; with None, every recording. Recordings in `keep` never count.
        """
        sql = "SELECT id, session_id FROM trajectories"
        params: tuple[str, ...] = ()
        if cutoff is not None:
            # Only the sessions whose newest record is older than the cutoff are read.
            sql += (
                " WHERE session_id IN (SELECT session_id FROM trajectories"
                " GROUP BY session_id HAVING MAX(updated_at) < ?)"
            )
            params = (cutoff,)
        by_session: dict[str, list[str]] = {}
        for row in self.db.query(sql, params):
            if row["id"] not in keep:
                by_session.setdefault(row["session_id"], []).append(row["id"])
        return by_session

    def delete(self, trajectory_ids: Iterable[str]) -> int:
        """Delete recordings and their events (never a session or a message)."""
        ids = list(trajectory_ids)
        with self.db.transaction() as tx:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" for _ in chunk)
                tx.execute(f"DELETE FROM trajectory_events WHERE trajectory_id IN ({marks})", chunk)
                tx.execute(f"DELETE FROM trajectories WHERE id IN ({marks})", chunk)
        return len(ids)


def write_events(
    conn: sqlite3.Connection,
    trajectory_id: str,
    session_id: str,
    header: dict[str, Any],
    events: Sequence[tuple[int, str, dict[str, Any]]],
) -> None:
    """Add events `(seq, kind, data)` to a recording inside an open transaction.

    A recording pruned meanwhile by another process is started again under its id and
    header, so the events that follow are kept.
    """
    if not events:
        return
    now = utc_now()
    # The header is encoded only when the recording has to be started again.
    updated = conn.execute(
        "UPDATE trajectories SET updated_at = ? WHERE id = ?", (now, trajectory_id)
    ).rowcount
    if not updated:
        conn.execute(
            "INSERT INTO trajectories (id, session_id, started_at, updated_at, header)"
            " VALUES (?, ?, ?, ?, ?)",
            (trajectory_id, session_id, header.get("startedAt") or now, now, _dumps(header)),
        )
    conn.executemany(
        "INSERT INTO trajectory_events (trajectory_id, seq, kind, data, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(trajectory_id, seq, kind, _dumps(data), now) for seq, kind, data in events],
    )


def cutoff_for(days: float, now: datetime | None = None) -> str:
    """The time before which a record is older than a window of `days`.

    A window reaching before the earliest datetime keeps everything, so it is cut there
    (`SERI_TRAJECTORY_RETENTION_DAYS=1000000` must not fail every open).
    """
    moment = now or datetime.now(UTC)
    try:
        cutoff = moment - timedelta(days=days)
    except OverflowError:
        cutoff = datetime.min.replace(tzinfo=UTC)
    return format_time(cutoff)


def prune_legacy_files(profile_root: Path, days: float, report: PruneReport) -> None:
    """Delete `<profile>/trajectories/*.jsonl` files last modified before the window.

    Only regular files directly in that folder count; nothing in (or leading into) the
    legacy `sessions/` folder is ever touched.
    """
    folder = profile_root / LEGACY_DIR
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        report.failed_files.append(f"{folder} ({exc.strerror})")
        return
    sessions = Path(os.path.realpath(profile_root / LEGACY_SESSIONS_DIR))
    threshold = time.time() - days * 86400
    for entry in sorted(entries, key=lambda e: e.name):
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_mtime >= threshold:
            continue
        real = Path(os.path.realpath(entry.path))
        if real == sessions or sessions in real.parents:
            continue
        try:
            os.unlink(entry.path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            report.failed_files.append(f"{entry.path} ({exc.strerror})")
            continue
        report.files.append(entry.path)


def _info(row: Any) -> RecordingInfo:
    header = json.loads(row["header"])
    return RecordingInfo(
        id=row["id"],
        session_id=row["session_id"],
        started_at=row["started_at"],
        updated_at=row["updated_at"],
        model=header.get("model"),
        events=row["events"],
        project=row["project"],
        title=row["title"],
        header=header,
    )


def _dumps(value: Any) -> str:
    # ASCII escapes keep text that is not valid Unicode (a lone surrogate a model sent)
    # storable; anything not JSON by nature is stored as its text.
    return json.dumps(value, default=str)


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
