"""Helpers shared by the trajectory tests: reading recordings as a user's tools would."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from tests.harness import command, server_env

SUMMARY = "Goal: g\nProgress: p\nBlockers: none\nNext steps: n"


async def recording(client: LanguageClient, **args: Any) -> dict[str, Any]:
    """`seri.trajectory.get`: the open session's recording by default."""
    return await command(client, "seri.trajectory.get", args)


def kinds(rec: dict[str, Any]) -> list[str]:
    return [event["kind"] for event in rec["events"]]


def of_kind(rec: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [event["data"] for event in rec["events"] if event["kind"] == kind]


def rows(profile_root: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows read straight from seri.db."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def write(profile_root: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    """A write straight into seri.db (to age records, as time would)."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        with conn:
            conn.execute(sql, params)
    finally:
        conn.close()


def recordings_of(profile_root: Path, session_id: str) -> list[str]:
    return [
        row[0]
        for row in rows(
            profile_root,
            "SELECT id FROM trajectories WHERE session_id = ? ORDER BY started_at",
            (session_id,),
        )
    ]


def days_ago(days: float) -> str:
    moment = datetime.now(UTC) - timedelta(days=days)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def age_session(profile_root: Path, session_id: str, days: float) -> None:
    """Make every record of a session's recordings `days` old."""
    when = days_ago(days)
    write(
        profile_root,
        "UPDATE trajectory_events SET created_at = ? WHERE trajectory_id IN"
        " (SELECT id FROM trajectories WHERE session_id = ?)",
        (when, session_id),
    )
    write(
        profile_root,
        "UPDATE trajectories SET started_at = ?, updated_at = ? WHERE session_id = ?",
        (when, when, session_id),
    )


def seri(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The `seri-lsp` command line, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "seri_lsp", *args],
        cwd=cwd,
        env=server_env(env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
