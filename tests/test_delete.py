"""Deleting a session (`seri.session.delete`, `seri-lsp delete`): the session, its
subagents' sessions and every row stored for them go, in one transaction; nothing else.

The store's part runs in this process on a real seri.db; the server's through pytest-lsp
with the scripted provider; the command line as a child process.
"""

from __future__ import annotations

import asyncio
import os
import pty
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from seri_lsp.errors import UnknownSession
from seri_lsp.faults import CRASH_EXIT_CODE
from seri_lsp.store import search
from seri_lsp.store.checkpoints import CheckpointStore
from seri_lsp.store.database import Database
from seri_lsp.store.deletion import SESSION_ROWS, SubagentSession, delete_session
from seri_lsp.store.messages import Message
from seri_lsp.store.sessions import SessionStore
from seri_lsp.store.spend import Spend
from seri_lsp.store.trajectories import TrajectoryStore
from tests.agent_helpers import prompt
from tests.harness import cli_env, command, seri, seri_async, server_env, wait_until
from tests.scripted_provider import Hang, ScriptedProvider, Text
from tests.session_helpers import found, invalid, refused

# --- the store --------------------------------------------------------------------------


def _store(tmp_path: Path) -> SessionStore:
    return SessionStore(Database.open(tmp_path / "seri.db"))


def _fill(store: SessionStore, session_id: str, words: str, content: bytes) -> None:
    """A prompt and a reply with spend, a checkpoint holding a file's contents, and a
    recording with an event: a row in each of the session's tables."""
    checkpoints = CheckpointStore(store.db)
    checkpoint = checkpoints.take(session_id, words)
    checkpoints.record_before(checkpoint.id, "/p/a.py", "a.py", content)
    checkpoints.record_after(checkpoint.id, "/p/a.py", content + b"# changed\n")
    store.write_step(
        session_id,
        (Message(role="user", content=words), Message(role="assistant", content="ok " + words)),
        read=["/p/b.py"],
        modified=["/p/a.py"],
        spend=Spend(kind="turn", input_tokens=10, output_tokens=2),
    )
    recordings = TrajectoryStore(store.db)
    trajectory = recordings.start(session_id, {"sessionId": session_id})
    recordings.append(trajectory, session_id, {}, 1, "opened", {"reason": "new"})


def _rows(db: Database, session_id: str) -> dict[str, int]:
    """How many rows each table holds for a session."""
    counts = {
        table: db.query_one(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (session_id,))[0]
        for table, column in SESSION_ROWS
    }
    counts["sessions"] = db.query_one("SELECT COUNT(*) FROM sessions WHERE id = ?", (session_id,))[
        0
    ]
    return counts


def _subagent(store: SessionStore, parent_id: str, words: str) -> str:
    child = store.create("/p", parent_id=parent_id)
    store.write_step(
        child.id,
        (Message(role="user", content=words),),
        spend=Spend(kind="subagent", input_tokens=5, output_tokens=1),
    )
    return child.id


def test_deleting_a_session_removes_it_its_subagents_and_every_row_they_had(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    doomed = store.create("/p").id
    kept = store.create("/p").id
    _fill(store, doomed, "alpha doomed words", b"only the doomed session has this\n")
    _fill(store, kept, "beta kept words", b"the kept session has this\n")
    child = _subagent(store, doomed, "gamma child words")
    grandchild = _subagent(store, child, "delta grandchild words")
    before_kept = _rows(store.db, kept)

    deletion = delete_session(store.db, doomed)

    assert (deletion.subagent_sessions, deletion.messages, deletion.checkpoints) == (2, 4, 1)
    assert deletion.recordings == 1
    for gone in (doomed, child, grandchild):
        assert set(_rows(store.db, gone).values()) == {0}, gone
    assert _rows(store.db, kept) == before_kept
    assert store.db.query_one("SELECT COUNT(*) FROM trajectory_events")[0] == 1
    assert store.db.query_one("SELECT COUNT(*) FROM checkpoint_files")[0] == 1
    # The doomed session's file contents went; the kept session's stayed.
    blobs = {bytes(row[0]) for row in store.db.query("SELECT content FROM blobs")}
    assert blobs == {b"the kept session has this\n", b"the kept session has this\n# changed\n"}
    assert store.db.query_one("PRAGMA foreign_key_check") is None


def test_file_contents_another_session_refers_to_are_kept(tmp_path: Path) -> None:
    store = _store(tmp_path)
    doomed, kept = store.create("/p").id, store.create("/p").id
    _fill(store, doomed, "one", b"the same contents\n")
    _fill(store, kept, "two", b"the same contents\n")
    delete_session(store.db, doomed)
    blobs = {bytes(row[0]) for row in store.db.query("SELECT content FROM blobs")}
    assert blobs == {b"the same contents\n", b"the same contents\n# changed\n"}


def test_search_no_longer_finds_a_deleted_session(tmp_path: Path) -> None:
    store = _store(tmp_path)
    doomed, kept = store.create("/p").id, store.create("/p").id
    _fill(store, doomed, "zanzibar quokka", b"x")
    _fill(store, kept, "zanzibar kept", b"y")
    list(search.index_backlog(store.db))
    query = search.parse_query("zanzibar")
    assert query is not None
    assert {hit.session_id for hit in search.search(store.db, query, "/p", 10)[0]} == {
        doomed,
        kept,
    }
    delete_session(store.db, doomed)
    assert {hit.session_id for hit in search.search(store.db, query, "/p", 10)[0]} == {kept}
    indexed = {row[0] for row in store.db.query("SELECT rowid FROM message_search")}
    stored = {row[0] for row in store.db.query("SELECT id FROM messages")}
    assert indexed == stored


def test_a_fork_of_a_deleted_session_stays_and_forgets_only_its_source(tmp_path: Path) -> None:
    store = _store(tmp_path)
    source = store.create("/p").id
    _fill(store, source, "the source prompt", b"x")
    fork, _ = store.fork(
        source,
        "fork-id",
        point=lambda outline: len(outline) - 1,
        title=lambda source_title, _by_user, _taken: source_title,
    )
    delete_session(store.db, source)
    after = store.get(fork.id)
    assert (after.forked_from, after.forked_seq, after.message_count) == (None, 2, 2)
    # A rewind there still stops at the fork point.
    forked = CheckpointStore(store.db).session(fork.id).forked
    assert forked == (None, 2)


def test_an_unknown_id_or_a_subagents_session_is_refused_and_nothing_is_deleted(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    parent = store.create("/p").id
    child = _subagent(store, parent, "child words")
    with pytest.raises(UnknownSession):
        delete_session(store.db, "no-such-session")
    with pytest.raises(SubagentSession, match=f"deleted with that session.*{parent}"):
        delete_session(store.db, child)
    assert store.get(child).message_count == 1


def test_every_table_that_names_a_session_is_deleted_from(tmp_path: Path) -> None:
    """A table added with a foreign key to `sessions` must be added to SESSION_ROWS (or
    the deletion fails on its foreign key)."""
    db = Database.open(tmp_path / "seri.db")
    tables = [row[0] for row in db.query("SELECT name FROM sqlite_master WHERE type = 'table'")]
    naming = {
        (table, fk["from"])
        for table in tables
        for fk in db.query(f'PRAGMA foreign_key_list("{table}")')
        if fk["table"] == "sessions" and table != "sessions"
    }
    assert naming <= set(SESSION_ROWS)


# --- the server --------------------------------------------------------------------------


def _changes(client) -> list[tuple[str, str]]:
    return [(p["reason"], p["session"]["id"]) for p in client.seri["seri/sessionChanged"]]


async def test_deleting_another_session_removes_it_from_the_list_and_from_search(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    provider.script(Text("the answer about quokkas"), Text("the answer about wombats"))
    doomed = (await prompt(client, "tell me about quokkas"))["sessionId"]
    await command(client, "seri.session.new")
    kept = (await prompt(client, "tell me about wombats"))["sessionId"]
    assert await found(client, "quokkas")

    result = await command(client, "seri.session.delete", {"sessionId": doomed})

    assert result["deleted"]["sessionId"] == doomed
    assert result["deleted"]["title"] == "tell me about quokkas"
    assert result["deleted"]["messages"] == 2
    assert result["session"] is None  # the open session stays open
    assert _changes(client)[-1][1] == kept
    listed = [s["id"] for s in (await command(client, "seri.session.list"))["sessions"]]
    assert listed == [kept]
    assert await found(client, "quokkas") == []
    message, field = await invalid(client, "seri.session.get", {"sessionId": doomed})
    assert (field, "Unknown session id") == ("sessionId", message[:18])


async def test_deleting_the_open_idle_session_opens_a_new_one(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    provider.script(Text("ok"))
    doomed = (await prompt(client, "the first prompt"))["sessionId"]

    result = await command(client, "seri.session.delete", {"sessionId": doomed})

    fresh = result["session"]
    assert fresh["id"] != doomed and fresh["messageCount"] == 0
    await wait_until(lambda: _changes(client)[-1] == ("new", fresh["id"]))
    view = await command(client, "seri.session.get", {})
    assert (view["session"]["id"], view["messages"]) == (fresh["id"], [])
    listed = [s["id"] for s in (await command(client, "seri.session.list"))["sessions"]]
    assert listed == [fresh["id"]]


async def test_a_fork_of_a_deleted_session_goes_on_and_its_rewind_stops_at_the_fork_point(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    provider.script(Text("one"), Text("two"))
    source = (await prompt(client, "first, in the source"))["sessionId"]
    forked = (await command(client, "seri.session.fork", {}))["session"]["id"]

    await command(client, "seri.session.delete", {"sessionId": source})

    view = await command(client, "seri.session.get", {"sessionId": forked})
    assert (view["session"]["parentId"], view["session"]["forkedAt"] is not None) == (None, True)
    assert len(view["messages"]) == 2
    assert (await prompt(client, "second, in the fork"))["status"] == "done"
    assert (await command(client, "seri.rewind", {}))["prompt"] == "second, in the fork"
    message = await refused(client, "seri.rewind", {})
    assert "none since this session was forked from a session since deleted" in message


async def test_the_open_session_cannot_be_deleted_while_a_task_runs(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    slow = Hang(then=Text("slow answer"))
    provider.script(slow)
    running = asyncio.ensure_future(prompt(client, "a slow prompt"))
    await asyncio.to_thread(provider.wait_for_requests, 1)
    open_id = (await command(client, "seri.session.get", {}))["session"]["id"]

    message = await refused(client, "seri.session.delete", {"sessionId": open_id})

    assert "A task is running" in message
    slow.release.set()
    assert (await running)["status"] == "done"
    assert (await command(client, "seri.session.get", {"sessionId": open_id}))["messages"]


async def test_an_unknown_id_is_refused_with_the_id(agent) -> None:
    client = await agent()
    message, field = await invalid(client, "seri.session.delete", {"sessionId": "nope-123"})
    assert field == "sessionId"
    assert "Unknown session id 'nope-123'" in message
    message, field = await invalid(client, "seri.session.delete", {})
    assert field == "sessionId"


async def test_clear_keeps_the_old_session(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    provider.script(Text("ok"))
    old = (await prompt(client, "remember me"))["sessionId"]
    await prompt(client, "/clear")
    listed = [s["id"] for s in (await command(client, "seri.session.list"))["sessions"]]
    assert old in listed


async def test_a_session_open_in_another_process_is_refused(
    agent, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    client = await agent()
    provider.script(Text("ok"))
    held = (await prompt(client, "held elsewhere"))["sessionId"]
    done = await seri_async(
        "delete", held, "--yes", cwd=workspace, env=cli_env(provider, profile_root)
    )
    assert done.returncode == 1
    assert f"Session {held} is open in another seri process" in done.stderr
    assert (await command(client, "seri.session.get", {"sessionId": held}))["messages"]


# --- the command line ----------------------------------------------------------------


def _seed(profile_root: Path, project: Path, words: str) -> str:
    profile_root.mkdir(parents=True, exist_ok=True)
    store = SessionStore(Database.open(profile_root / "seri.db"))
    session = store.create(str(project.resolve()))
    store.write_step(session.id, (Message(role="user", content=words),))
    store.db.close()
    return session.id


def _ids(profile_root: Path) -> set[str]:
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return {row[0] for row in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()


def _env(profile_root: Path) -> dict[str, Any]:
    return {"SERI_PROFILE_ROOT": str(profile_root)}


def test_cli_delete_with_yes_deletes_and_says_what(profile_root: Path, workspace: Path) -> None:
    doomed = _seed(profile_root, workspace, "a prompt to delete")
    kept = _seed(profile_root, workspace, "a prompt to keep")
    done = seri("delete", doomed[:8], "--yes", cwd=workspace, env=_env(profile_root))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Deleted session {doomed} (a prompt to delete): 1 message.\n"
    assert _ids(profile_root) == {kept}
    # Its lock file goes with it; nothing is left for a session that is no more.
    assert not list((profile_root / "locks").glob(f"{doomed}.*"))


@pytest.mark.parametrize(("answer", "deleted"), [("y", True), ("n", False), ("", False)])
def test_cli_delete_asks_on_a_terminal(
    profile_root: Path, workspace: Path, answer: str, deleted: bool
) -> None:
    doomed = _seed(profile_root, workspace, "ask me first")
    controller, terminal = pty.openpty()
    os.write(controller, answer.encode() + b"\n")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "seri_lsp", "delete", doomed],
            stdin=terminal,
            capture_output=True,
            text=True,
            env=server_env(_env(profile_root)),
            cwd=workspace,
            timeout=60,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    question = f"Delete session {doomed} (ask me first, 1 message) and everything stored with it?"
    assert done.stdout.startswith(question + " [y/N] "), done.stdout
    assert (done.returncode, "Not deleted." in done.stdout) == (
        (0, False) if deleted else (1, True)
    )
    assert _ids(profile_root) == (set() if deleted else {doomed})


def test_cli_delete_without_yes_and_no_terminal_refuses(
    profile_root: Path, workspace: Path
) -> None:
    doomed = _seed(profile_root, workspace, "still here")
    done = seri("delete", doomed, cwd=workspace, env=_env(profile_root))
    assert done.returncode == 1
    assert "--yes" in done.stderr
    assert _ids(profile_root) == {doomed}


def test_cli_delete_of_an_unknown_id_fails_with_the_id(profile_root: Path, workspace: Path) -> None:
    _seed(profile_root, workspace, "x")
    done = seri("delete", "nope-123", "--yes", cwd=workspace, env=_env(profile_root))
    assert done.returncode == 1
    assert done.stderr.startswith("seri-lsp: Unknown session id 'nope-123'")


@pytest.mark.parametrize("point", ["delete.in_transaction", "delete.committed"])
def test_a_kill_during_a_deletion_leaves_all_of_the_session_or_none(
    profile_root: Path, workspace: Path, point: str
) -> None:
    doomed = _seed(profile_root, workspace, "all or nothing")
    env = {**_env(profile_root), "SERI_CRASH_AT": point}
    done = seri("delete", doomed, "--yes", cwd=workspace, env=env)
    assert done.returncode == CRASH_EXIT_CODE
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    finally:
        conn.close()
    assert (sessions, messages) == ((1, 1) if point == "delete.in_transaction" else (0, 0))
