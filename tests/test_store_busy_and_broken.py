"""The store under pressure: one session per window, a busy seri.db, broken files.

Every test drives the real server process (or the `seri-lsp` command) on a real profile
root, several processes at once where that is the point.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from seri_lsp.store.database import Database, StoreError
from seri_lsp.store.locks import SessionLocks
from tests import profile_race
from tests.agent_helpers import prompt
from tests.harness import (
    cli_env,
    command,
    initialize_client,
    seri_async,
    server_env,
    shown_messages,
    start_server,
    stop_server,
    wait_until,
)
from tests.scripted_provider import Calls, Hang, ScriptedProvider, Text
from tests.test_legacy import good_session, write_legacy

REQUEST_FAILED = -32803


def pid_of(client: LanguageClient) -> int:
    return client._server.pid  # the server process pytest-lsp started


def logged(client: LanguageClient) -> list[str]:
    return [m.message for m in client.log_messages]


async def refused(client: LanguageClient, name: str, args: dict[str, Any]) -> str:
    """Run a command that must answer RequestFailed; returns its message."""
    with pytest.raises(JsonRpcException) as caught:
        await command(client, name, args)
    assert caught.value.code == REQUEST_FAILED, caught.value
    return caught.value.message


def snapshot(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- one session, one window ----------------------------------------------------------


async def test_a_second_window_never_continues_the_session_the_first_holds(
    lsp, profile_root: Path
) -> None:
    first = await lsp()
    held = (await command(first, "seri.session.new", {}))["session"]["id"]

    # Resume on open: the only session is held, so the second window starts a new one
    # and says so in its log, naming the holder.
    second = await lsp()
    change = await wait_until(lambda: second.seri["seri/sessionChanged"])
    assert change[0]["reason"] == "new"
    own = change[0]["session"]["id"]
    assert own != held
    note = next(m for m in logged(second) if "Started a new session" in m)
    assert own in note and held in note and f"pid {pid_of(first)}" in note

    # Resuming the held session is refused, naming the process that holds it.
    expected = (
        f"Session {held} is open in another seri process (pid {pid_of(first)}); "
        "close it there, or start a new session."
    )
    assert await refused(second, "seri.session.resume", {"sessionId": held}) == expected
    assert await refused(second, "seri.session.resume", {"sessionId": held[:8]}) == expected
    assert await refused(second, "seri.prompt", {"text": f"/resume {held}"}) == expected
    # The refusal changed nothing: the second window still has its own session open.
    assert (await command(second, "seri.session.get", {}))["session"]["id"] == own
    assert (await command(first, "seri.session.get", {}))["session"]["id"] == held

    # Beside the lock, a private record names its holder.
    record = profile_root / "locks" / f"{held}.holder"
    assert mode(record) == 0o600 and mode(record.parent) == 0o700
    assert json.loads(record.read_text())["pid"] == pid_of(first)

    # kill -9: the kernel lets the session go, and the second window may resume it.
    first._server.send_signal(signal.SIGKILL)
    await asyncio.wait_for(first._server.wait(), timeout=10)
    resumed = await command(second, "seri.session.resume", {"sessionId": held})
    assert resumed["session"]["id"] == held
    # Switching let the second window's own session go: a third window continues it.
    third = await lsp()
    change = await wait_until(lambda: third.seri["seri/sessionChanged"])
    assert (change[0]["reason"], change[0]["session"]["id"]) == ("continued", own)


async def test_resume_on_open_continues_the_latest_session_nobody_holds(lsp) -> None:
    setup = await lsp()
    older = (await command(setup, "seri.session.new", {}))["session"]["id"]
    newer = (await command(setup, "seri.session.new", {}))["session"]["id"]
    await stop_server(setup)

    first = await lsp()
    change = await wait_until(lambda: first.seri["seri/sessionChanged"])
    assert (change[0]["reason"], change[0]["session"]["id"]) == ("continued", newer)
    # The log line saying why goes out before the notification: it is in hand already.
    assert [m for m in logged(first) if f"Continued session {newer}" in m]

    second = await lsp()
    change = await wait_until(lambda: second.seri["seri/sessionChanged"])
    assert (change[0]["reason"], change[0]["session"]["id"]) == ("continued", older)
    [note] = [m for m in logged(second) if f"Continued session {older}" in m]
    assert newer in note and f"pid {pid_of(first)}" in note

    third = await lsp()
    change = await wait_until(lambda: third.seri["seri/sessionChanged"])
    assert change[0]["reason"] == "new"
    assert change[0]["session"]["id"] not in (older, newer)

    # /continue and seri.session.continue pick the latest session nobody else holds.
    # In the third window that is its own (new) session; with every session of the
    # project held elsewhere, a fourth window's continue is refused, naming a holder.
    own = change[0]["session"]["id"]
    assert (await command(third, "seri.session.continue", {}))["session"]["id"] == own
    fourth = await lsp(init_options={"resumeOnOpen": False})
    message = await refused(fourth, "seri.session.continue", {})
    assert "open in another seri process" in message and f"pid {pid_of(third)}" in message
    assert await refused(fourth, "seri.prompt", {"text": "/continue"}) == message
    assert (await command(fourth, "seri.session.get", {}))["session"] is None

    # Closing a window (shutdown) lets its session go at once.
    await stop_server(first)
    assert (await command(fourth, "seri.session.continue", {}))["session"]["id"] == newer


async def test_clearing_lets_the_previous_session_go(lsp) -> None:
    first = await lsp()
    old = (await command(first, "seri.session.new", {}))["session"]["id"]
    second = await lsp(init_options={"resumeOnOpen": False})
    await refused(second, "seri.session.resume", {"sessionId": old})
    await command(first, "seri.clear", {})
    assert (await command(second, "seri.session.resume", {"sessionId": old}))["session"][
        "id"
    ] == old
    # And now the first window cannot go back to it.
    message = await refused(first, "seri.session.resume", {"sessionId": old})
    assert f"pid {pid_of(second)}" in message


async def test_the_command_line_respects_a_session_held_by_an_editor(
    lsp, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    editor = await lsp()
    held = (await command(editor, "seri.session.new", {}))["session"]["id"]
    env = cli_env(provider, profile_root)

    resumed = await seri_async("run", "--resume", held, "hello", cwd=workspace, env=env)
    assert resumed.returncode == 1
    assert f"Session {held} is open in another seri process (pid {pid_of(editor)})" in (
        resumed.stderr
    )
    assert "Traceback" not in resumed.stderr
    assert provider.requests == []
    assert (await command(editor, "seri.session.get", {}))["messages"] == []

    # run --continue behaves as resume on open: the held session is left alone and the
    # prompt runs in a new session, which the command line says.
    provider.script(Text("Hi from a new session."))
    continued = await seri_async("run", "--continue", "hello", cwd=workspace, env=env)
    assert continued.returncode == 0, continued.stderr
    assert "Started a new session" in continued.stderr and held in continued.stderr
    assert "Hi from a new session." in continued.stdout
    assert (await command(editor, "seri.session.get", {}))["messages"] == []
    # The command line let its session go when it ended: the editor may open it.
    sessions = (await command(editor, "seri.session.list", {}))["sessions"]
    other = next(s["id"] for s in sessions if s["id"] != held)
    assert (await command(editor, "seri.session.resume", {"sessionId": other}))["session"]


# --- a busy database ------------------------------------------------------------------


async def test_a_busy_database_is_a_refusal_not_an_internal_error(lsp, profile_root: Path) -> None:
    client = await lsp(env={"SERI_BUSY_TIMEOUT_MS": "300"})
    first = (await command(client, "seri.session.new", {}))["session"]["id"]

    # Another process holds a write transaction open on seri.db.
    other = sqlite3.connect(profile_root / "seri.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        busy = "seri.db is busy: another seri process is writing; try again."
        assert await refused(client, "seri.session.new", {}) == busy
        assert await refused(client, "seri.clear", {}) == busy
        assert await refused(client, "seri.prompt", {"text": "hello"}) == busy
        # Reads go on, and nothing half-done was left behind.
        listed = (await command(client, "seri.session.list", {}))["sessions"]
        assert [s["id"] for s in listed] == [first]
        assert (await command(client, "seri.session.get", {}))["session"]["id"] == first
    finally:
        other.execute("ROLLBACK")
        other.close()
    second = (await command(client, "seri.session.new", {}))["session"]["id"]
    assert second != first
    # The failed attempts released the session locks they took.
    holders = sorted(p.name for p in (profile_root / "locks").glob("*.holder"))
    assert holders == [f"{second}.holder"]


async def test_a_database_busy_as_a_task_ends_still_ends_the_turn_for_the_editor(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    stalled = Text("a long reply " * 5, stall_after=1)
    provider.script(stalled, Text("ok"))
    client = await agent(env={"SERI_BUSY_TIMEOUT_MS": "300"})
    running = asyncio.ensure_future(command(client, "seri.prompt", {"text": "hello"}))
    await wait_until(lambda: client.seri["seri/delta"])
    other = sqlite3.connect(profile_root / "seri.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process writes while the reply ends
        stalled.release.set()
        with pytest.raises(Exception, match="busy"):
            await running
        # The editor still hears that the task ended (it drops the unstored text there).
        ended = await wait_until(lambda: client.seri["seri/turnEnded"])
        assert ended[-1]["status"] == "failed"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert (await command(client, "seri.prompt", {"text": "again"}))["status"] == "done"


def test_processes_opening_a_new_profile_at_once_all_succeed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    together = context.Barrier(6)
    with context.Pool(6, profile_race.wait_together, (together,)) as pool:
        for trial in range(3):
            folder = tmp_path / f"profile-{trial}"
            folder.mkdir()
            # One task per process (each waits at the barrier until all six hold one).
            paths = [str(folder / "seri.db")] * 6
            assert pool.map(profile_race.open_and_close, paths, chunksize=1) == ["ok"] * 6


# --- broken files ---------------------------------------------------------------------


async def test_a_config_json_that_is_not_utf8_is_warned_about_and_ignored(
    lsp, profile_root: Path, workspace: Path
) -> None:
    profile_root.mkdir()
    config = profile_root / "config.json"
    config.write_bytes(b'{"maxTurns": 7, "note": "caf\xe9"}\n')
    before = snapshot(config)

    client = await lsp()
    warning = await wait_until(
        lambda: shown_messages(client, types.MessageType.Warning, "config.json")
    )
    assert "not UTF-8" in warning[0] and "provider settings it may hold" in warning[0]
    # The server works, with the defaults (prompts wait until the file is fixed).
    assert (await command(client, "seri.session.new", {}))["session"]["maxTurns"] == 500
    assert snapshot(config) == before

    listed = await seri_async(
        "sessions", "--json", "--profile-root", str(profile_root), cwd=workspace
    )
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert len(json.loads(listed.stdout)) == 1
    assert snapshot(config) == before


@pytest.mark.parametrize(
    "content",
    [b'{"maxTurns": ' + b"9" * 5000 + b"}", b"[" * 100_000, b'{"maxTurns": 7,'],
    ids=["number too long", "nested too deeply", "cut short"],
)
async def test_a_config_json_that_cannot_be_read_is_warned_about_and_ignored(
    lsp, profile_root: Path, content: bytes
) -> None:
    profile_root.mkdir()
    config = profile_root / "config.json"
    config.write_bytes(content)
    before = snapshot(config)
    client = await lsp()
    warning = await wait_until(
        lambda: shown_messages(client, types.MessageType.Warning, "config.json")
    )
    assert "provider settings it may hold" in warning[0]
    assert (await command(client, "seri.session.new", {}))["session"]["maxTurns"] == 500
    assert snapshot(config) == before


def test_the_command_line_sends_nothing_past_a_config_json_that_is_not_utf8(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    profile_root.mkdir()
    config = profile_root / "config.json"
    config.write_bytes(b"\xff\xfe{}")
    before = snapshot(config)
    provider.script(Text("fine"))
    result = subprocess.run(
        [sys.executable, "-m", "seri_lsp", "run", "hello"],
        cwd=workspace,
        env=server_env(cli_env(provider, profile_root)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    # It may hold the provider settings: nothing goes to a provider it may not name.
    assert result.returncode == 1, result.stderr
    assert "config.json is not UTF-8 text" in result.stderr
    assert "Nothing was sent to the model" in result.stderr and provider.requests == []
    assert "Traceback" not in result.stderr
    assert snapshot(config) == before


async def test_a_legacy_line_with_a_lone_surrogate_is_skipped_and_reported(
    lsp, profile_root: Path, workspace: Path
) -> None:
    lines = good_session("legacy-surrogate", workspace)
    # Line 3: an escape that decodes to a lone surrogate, which no UTF-8 store can hold.
    lines.insert(2, '{"type": "message", "role": "assistant", "content": "smile \\ud83d"}')
    broken = write_legacy(profile_root, "broken.jsonl", lines)
    fine = write_legacy(profile_root, "fine.jsonl", good_session("legacy-fine", workspace))
    before = {path: snapshot(path) for path in (broken, fine)}

    client = await lsp()
    await command(client, "seri.session.list", {})  # start-up (the import) has finished
    kept = await command(client, "seri.session.get", {"sessionId": "legacy-surrogate"})
    assert [m["content"] for m in kept["messages"]] == [
        "Rename foo to bar in app.py",
        "",
        "def foo(): ...",
        "Done: foo is now bar.",
    ]
    other = await command(client, "seri.session.get", {"sessionId": "legacy-fine"})
    assert len(other["messages"]) == 4
    report = next(m for m in logged(client) if "broken.jsonl line 3 skipped" in m)
    assert "lone surrogate" in report
    assert shown_messages(client, types.MessageType.Warning, "skipped 1 bad line")
    assert {path: snapshot(path) for path in (broken, fine)} == before
    await stop_server(client)

    # Imported once: the next start neither imports nor warns again.
    again = await lsp()
    result = await command(again, "seri.legacy.import", {})
    assert result["imported"] == 0 and result["alreadyImported"] == 2
    assert not shown_messages(again, types.MessageType.Warning, "legacy")


def make_foreign_db(path: Path, statements: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


FOREIGN_DATABASES = {
    "unrelated tables": [
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
        "INSERT INTO notes (body) VALUES ('my notes')",
    ],
    "a conflicting sessions table": [
        "CREATE TABLE sessions (id INTEGER PRIMARY KEY, user TEXT, expires INTEGER)",
        "INSERT INTO sessions (user, expires) VALUES ('ann', 0)",
    ],
    "another tool's schema_migrations": [
        "CREATE TABLE schema_migrations (version TEXT PRIMARY KEY)",
        "INSERT INTO schema_migrations VALUES ('20240101000000')",
        "CREATE TABLE users (id INTEGER PRIMARY KEY)",
    ],
}


@pytest.mark.parametrize("kind", list(FOREIGN_DATABASES))
async def test_a_sqlite_file_that_is_not_seris_is_refused_byte_for_byte(
    kind: str, profile_root: Path, workspace: Path
) -> None:
    db = profile_root / "seri.db"
    make_foreign_db(db, FOREIGN_DATABASES[kind])
    probe = sqlite3.connect(db)
    assert probe.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    probe.close()
    before = snapshot(db)

    client = await start_server(profile_root, workspace, initialize=False)
    try:
        with pytest.raises(JsonRpcException, match="seri did not create") as caught:
            await initialize_client(client, workspace)
        assert "left untouched" in str(caught.value)
        await asyncio.wait_for(client._server.wait(), timeout=10)
    finally:
        await stop_server(client)
    assert snapshot(db) == before
    assert sorted(p.name for p in profile_root.iterdir()) == ["seri.db"]

    listed = await seri_async("sessions", "--profile-root", str(profile_root), cwd=workspace)
    assert listed.returncode == 1
    assert "seri did not create" in listed.stderr and "Traceback" not in listed.stderr
    assert snapshot(db) == before


async def test_a_seri_db_with_a_table_of_another_shape_is_refused_untouched(
    profile_root: Path, workspace: Path
) -> None:
    # Looks like seri's (its schema_migrations), but its sessions table is not.
    db = profile_root / "seri.db"
    make_foreign_db(
        db,
        [
            "CREATE TABLE schema_migrations"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
            "INSERT INTO schema_migrations VALUES (1, 'sessions_and_messages', 'x')",
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, owner TEXT)",
        ],
    )
    before = snapshot(db)
    result = await seri_async("sessions", "--profile-root", str(profile_root), cwd=workspace)
    assert result.returncode == 1
    assert "sessions table has the columns id, owner" in result.stderr
    assert snapshot(db) == before


async def test_loose_permissions_are_tightened_before_use(
    lsp, profile_root: Path, workspace: Path
) -> None:
    setup = await lsp()
    session = (await command(setup, "seri.session.new", {}))["session"]["id"]
    await stop_server(setup)

    db = profile_root / "seri.db"
    locks = profile_root / "locks"
    lock = locks / f"{session}.holder"
    lock.write_text('{"pid": 1, "host": "gone"}')  # left by a process that died
    # Keep a connection open so seri.db-wal and seri.db-shm exist, as while another
    # window is working.
    other = sqlite3.connect(db)
    try:
        other.execute("SELECT COUNT(*) FROM sessions").fetchone()
        wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
        assert wal.exists() and shm.exists()
        for path in (db, wal, shm, lock):
            path.chmod(0o644)
        for folder in (profile_root, locks):
            folder.chmod(0o755)

        client = await lsp()
        change = await wait_until(lambda: client.seri["seri/sessionChanged"])
        assert change[0]["session"]["id"] == session
        assert {p.name: mode(p) for p in (db, wal, shm, lock)} == {
            p.name: 0o600 for p in (db, wal, shm, lock)
        }
        assert mode(profile_root) == 0o700 and mode(locks) == 0o700
    finally:
        other.close()

    # The command line tightens them too.
    db.chmod(0o644)
    profile_root.chmod(0o755)
    result = await seri_async("sessions", "--profile-root", str(profile_root), cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert mode(db) == 0o600 and mode(profile_root) == 0o700


async def test_run_continue_then_prompt_in_the_editor(
    agent, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    """A session the command line left is the editor's to continue (and to write to)."""
    provider.script(Text("from the terminal"), Text("from the editor"))
    result = await seri_async("run", "hi", cwd=workspace, env=cli_env(provider, profile_root))
    assert result.returncode == 0, result.stderr
    client = await agent()
    change = await wait_until(lambda: client.seri["seri/sessionChanged"])
    assert change[0]["reason"] == "continued"
    assert (await prompt(client, "again"))["status"] == "done"
    holders = [p.name for p in (profile_root / "locks").glob("*.holder")]
    assert holders == [f"{change[0]['session']['id']}.holder"]


async def test_a_legacy_fifo_is_reported_and_does_not_stall_the_start(
    lsp, profile_root: Path, workspace: Path
) -> None:
    write_legacy(profile_root, "fine.jsonl", good_session("legacy-fine", workspace))
    os.mkfifo(profile_root / "sessions" / "pipe.jsonl")
    client = await lsp()
    listed = await asyncio.wait_for(command(client, "seri.session.list", {}), timeout=20)
    assert [s["id"] for s in listed["sessions"]] == ["legacy-fine"]
    assert any("pipe.jsonl was not imported: it is not a regular file" in m for m in logged(client))


def test_a_foreign_wal_database_is_refused_and_its_folder_left_as_found(tmp_path: Path) -> None:
    db = tmp_path / "seri.db"
    make_foreign_db(db, ["PRAGMA journal_mode=WAL", "CREATE TABLE notes (body TEXT)"])
    before = snapshot(db)
    with pytest.raises(StoreError, match="seri did not create"):
        Database.open(db)
    assert snapshot(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seri.db"]


def test_session_locks_are_exclusive_and_name_their_holder(tmp_path: Path) -> None:
    mine, theirs = SessionLocks(tmp_path), SessionLocks(tmp_path)
    assert mine.acquire("s-1") is None
    assert mine.acquire("s-1") is None  # already ours
    holder = theirs.acquire("s-1")
    assert holder is not None and holder.pid == os.getpid()
    assert holder.describe() == f"pid {os.getpid()}"
    mine.release("s-1")
    assert not (tmp_path / "locks" / "s-1.holder").exists()
    assert theirs.acquire("s-1") is None
    assert mine.acquire("s-1") is not None
    # An id that is not a safe file name is hashed, never used as a path.
    assert mine.acquire("../../escape") is None
    hashed = {p.stem for p in (tmp_path / "locks").iterdir() if p.name.startswith("sha256-")}
    assert len(hashed) == 1
    assert not (tmp_path.parent / "escape.lock").exists()
    mine.release_all()
    theirs.release_all()
    # No holder is named any more (the empty lock files stay, as the lock library's do).
    assert list((tmp_path / "locks").glob("*.holder")) == []


def test_a_project_folder_whose_name_is_not_utf8_is_refused_with_a_clear_error(
    provider: ScriptedProvider, profile_root: Path, tmp_path: Path
) -> None:
    # Linux allows any bytes in a name; such a path cannot be stored as the project.
    folder = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9"))
    os.mkdir(folder)
    result = subprocess.run(
        [sys.executable, "-m", "seri_lsp", "run", "hello", "--workspace", folder],
        cwd=tmp_path,
        env=server_env(cli_env(provider, profile_root)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "not valid UTF-8" in result.stderr and "Rename the folder" in result.stderr
    assert "Traceback" not in result.stderr
    assert provider.requests == []


async def test_a_running_subagents_session_cannot_be_opened_in_another_window(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    stalled = Hang()
    provider.script(Calls([("t", "task", {"prompt": "look around"})]), stalled)
    first = await agent()
    running = asyncio.ensure_future(command(first, "seri.prompt", {"text": "delegate"}))
    await wait_until(lambda: len(provider.requests) >= 2)  # the subagent's model call
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        [(child,)] = conn.execute("SELECT id FROM sessions WHERE parent_id IS NOT NULL")
    finally:
        conn.close()
    second = await agent()
    message = await refused(second, "seri.session.resume", {"sessionId": child})
    assert message.startswith(f"Session {child} is open in another seri process")
    await command(first, "seri.cancel", {})
    stalled.release.set()
    await running
