"""Small helpers shared by the agent-loop tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from tests.harness import command

# A summariser's reply with the four sections, and a reply long enough to fill a small
# window, for the tests that compact.
SUMMARY = (
    "Goal: rename foo to bar across the project\n"
    "Progress: renamed foo to bar in src/app.py\n"
    "Blockers: none\n"
    "Next steps: update README.md"
)
FILLER = "x" * 400


async def prompt(client: LanguageClient, text: str) -> dict[str, Any]:
    """Send a prompt (or slash command) and return the command's result."""
    return await command(client, "seri.prompt", {"text": text})


async def messages(client: LanguageClient, session_id: str | None = None) -> list[dict[str, Any]]:
    """The stored messages of a session (the open one by default)."""
    args = {"sessionId": session_id} if session_id else {}
    return (await command(client, "seri.session.get", args))["messages"]


def events(profile_root: Path, kind: str, session_id: str | None = None) -> list[dict[str, Any]]:
    """Events of one kind in the recordings (trajectories) in seri.db, oldest first, read
    straight from the file, each as its data with the `sessionId` it was recorded in."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        sql = (
            "SELECT t.session_id, e.data FROM trajectory_events e"
            " JOIN trajectories t ON t.id = e.trajectory_id WHERE e.kind = ?"
        )
        params: list[Any] = [kind]
        if session_id is not None:
            sql += " AND t.session_id = ?"
            params.append(session_id)
        rows = conn.execute(sql + " ORDER BY e.id", params).fetchall()
    finally:
        conn.close()
    return [{"sessionId": row[0], **json.loads(row[1])} for row in rows]


# Every row of seri.db that belongs to a session, table by table.
SESSION_ROWS = {
    "sessions": "SELECT * FROM sessions WHERE id = ?",
    "messages": "SELECT * FROM messages WHERE session_id = ? ORDER BY id",
    "paths": "SELECT * FROM session_paths WHERE session_id = ? ORDER BY rowid",
    "rules": "SELECT * FROM session_rules_fired WHERE session_id = ? ORDER BY rowid",
    "checkpoints": "SELECT * FROM checkpoints WHERE session_id = ? ORDER BY id",
    "files": "SELECT f.* FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id"
    " WHERE c.session_id = ? ORDER BY f.rowid",
    "calls": "SELECT * FROM model_calls WHERE session_id = ? ORDER BY id",
}


def session_rows(profile_root: Path, session_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row that belongs to a session, as stored, read straight from seri.db."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return {
            name: conn.execute(sql, (session_id,)).fetchall() for name, sql in SESSION_ROWS.items()
        }
    finally:
        conn.close()


def tool_results(history: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tool messages by the call id they answer."""
    return {m["tool_call_id"]: m for m in history if m["role"] == "tool"}


def system_prompt(request: dict[str, Any]) -> str:
    """The system message of a request body."""
    first = request["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def add_trigger(profile_root: Path, table: str, kind: str) -> None:
    """Make every insert of a `table` row of `kind` fail, as a full disk would."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        conn.execute(
            f"CREATE TRIGGER fail_{table}_{kind} BEFORE INSERT ON {table} "
            f"WHEN NEW.kind = '{kind}' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
    finally:
        conn.close()


def project_rules(workspace: Path, **rules: str) -> Path:
    """Write the project's rules (`name="text"` as `.seri/rules/name.md`); their folder."""
    folder = workspace / ".seri" / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in rules.items():
        (folder / f"{name}.md").write_text(text)
    return folder
