"""What the faster store still promises, seen from outside.

A turn's steps each commit in one transaction (the reply with its usage, billed count
and events; each tool result with its events and paths), and a message the editor was
told about (`seri/message`) is on disk: a real `kill -9` after it, or a crash inside a
step's transaction, leaves the session with all of a step or none of it. Opening a
session reads none of its messages (`SERI_TRACE_SQL` lists every statement the server
runs); the running totals stored with the session give its message count and estimate,
and they stay right through appends, compaction, rewind and an upgrade from an older
database. Nothing here is timed: `bench/` measures speed.
"""

from __future__ import annotations

import asyncio
import math
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from seri_lsp.faults import CRASH_EXIT_CODE
from tests.agent_helpers import events, messages, prompt
from tests.harness import command, stop_server, wait_until
from tests.scripted_provider import Calls, Hang, ScriptedProvider, Text, usage
from tests.session_helpers import older_database

NOTES = "hello from the notes\n"


def acknowledged(client: Any) -> list[dict[str, Any]]:
    """The messages the server told the editor about (`seri/message`), in order."""
    return [params["message"] for params in client.seri["seri/message"]]


def session_row(profile_root: Path, session_id: str) -> tuple[int, int, int | None]:
    """(message_count, total_chars, last_input_tokens) as stored with the session."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        row = conn.execute(
            "SELECT message_count, total_chars, last_input_tokens FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
    finally:
        conn.close()
    return row


def counted(profile_root: Path, session_id: str) -> tuple[int, int]:
    """(messages, their characters) counted from the messages table."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(chars), 0) FROM messages WHERE session_id = ?",
            (session_id,),
        ).fetchone()
    finally:
        conn.close()


# --- durability of the steps -----------------------------------------------------------


async def test_every_message_the_editor_was_told_about_survives_kill_9(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "notes.txt").write_text(NOTES)
    hang = Hang()
    provider.script(Calls([("c1", "read_file", {"path": "notes.txt"})], usage=usage(321)), hang)
    client = await agent()
    pending = asyncio.ensure_future(prompt(client, "What do the notes say?"))
    try:
        # The tool result was told to the editor, and the next model call is out.
        await wait_until(lambda: any(m["role"] == "tool" for m in acknowledged(client)))
        provider.wait_for_requests(2)
        told = acknowledged(client)
        client._server.send_signal(signal.SIGKILL)
        await asyncio.wait_for(client._server.wait(), timeout=20)
    finally:
        pending.cancel()
        hang.release.set()
    assert [m["role"] for m in told] == ["user", "assistant", "tool"]
    session_id = client.seri["seri/sessionChanged"][-1]["session"]["id"]

    survivor = await agent()
    stored = await messages(survivor, session_id)
    # The turn was cut off: its last message says so now.
    assert stored[-1].pop("turnEnded")["status"] == "interrupted"
    assert stored[: len(told)] == told  # each as the editor saw it, ids included
    # The steps' other parts came with them: the billed count, the events, the paths.
    assert session_row(profile_root, session_id)[2] == 321
    assert [e["inputTokens"] for e in events(profile_root, "usage", session_id)] == [321]
    assert [e["id"] for e in events(profile_root, "tool_call", session_id)] == ["c1"]
    [result] = events(profile_root, "tool_result", session_id)
    assert (result["id"], result["content"]) == ("c1", NOTES)
    view = await command(survivor, "seri.session.get", {"sessionId": session_id})
    assert view["paths"]["read"] == ["notes.txt"]
    assert session_row(profile_root, session_id)[:2] == counted(profile_root, session_id)


@pytest.mark.parametrize("step", ["reply", "result"])
async def test_a_kill_inside_a_step_leaves_none_of_it(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path, step: str
) -> None:
    (workspace / "notes.txt").write_text(NOTES)
    provider.script(
        Calls([("c1", "read_file", {"path": "notes.txt"})], usage=usage(321)), Text("Hello.")
    )
    doomed = await agent(env={"SERI_CRASH_AT": f"{step}.in_transaction"})
    pending = asyncio.ensure_future(prompt(doomed, "What do the notes say?"))
    await asyncio.wait_for(doomed._server.wait(), timeout=20)
    pending.cancel()
    assert doomed._server.returncode == CRASH_EXIT_CODE
    session_id = doomed.seri["seri/sessionChanged"][-1]["session"]["id"]

    survivor = await agent(init_options={"resumeOnOpen": False})
    stored = await messages(survivor, session_id)
    usage_events = events(profile_root, "usage", session_id)
    calls = events(profile_root, "tool_call", session_id)
    results = events(profile_root, "tool_result", session_id)
    view = await command(survivor, "seri.session.get", {"sessionId": session_id})
    if step == "reply":
        # Neither the reply nor its usage, billed count or call events.
        assert [m["role"] for m in stored] == ["user"]
        assert (usage_events, calls) == ([], [])
        assert session_row(profile_root, session_id)[2] is None
    else:
        # The reply and all that came with it; none of the result's step.
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert [e["inputTokens"] for e in usage_events] == [321]
        assert [c["id"] for c in calls] == ["c1"]
        assert results == []
        assert view["paths"]["read"] == []
    assert session_row(profile_root, session_id)[:2] == counted(profile_root, session_id)
    assert view["session"]["messageCount"] == len(stored)


# --- opening without reading the history ----------------------------------------------


def statements(trace: Path, start: int) -> list[str]:
    """The statements the server ran since line `start` of its SQL trace."""
    if not trace.exists():
        return []
    return trace.read_text().splitlines()[start:]


def line_count(trace: Path) -> int:
    return len(trace.read_text().splitlines()) if trace.exists() else 0


def reads_messages(statement: str) -> bool:
    return "FROM messages" in statement


async def test_opening_a_session_reads_none_of_its_messages(
    agent, provider: ScriptedProvider, profile_root: Path, tmp_path: Path
) -> None:
    client = await agent()
    for number in range(3):
        provider.script(Text(f"answer {number}", usage=usage(40 + number)))
        assert (await prompt(client, f"prompt {number}"))["status"] == "done"
    whole = await command(client, "seri.session.get", {})
    session_id = whole["session"]["id"]
    await stop_server(client)

    trace = tmp_path / "statements.sql"
    client = await agent(init_options={"resumeOnOpen": False}, env={"SERI_TRACE_SQL": str(trace)})
    assert statements(trace, 0), "the trace lists the statements the server ran"

    start = line_count(trace)
    resumed = await command(client, "seri.session.resume", {"sessionId": session_id})
    listed = await command(client, "seri.session.list", {})
    ran = statements(trace, start)
    assert ran and not [s for s in ran if reads_messages(s)], ran
    assert resumed["session"]["messageCount"] == 6
    assert listed["sessions"][0]["messageCount"] == 6

    # A page of the open session comes from the store: only that page is read.
    start = line_count(trace)
    page = await command(client, "seri.session.get", {"limit": 2})
    assert [m["content"] for m in page["messages"]] == ["prompt 2", "answer 2"]
    assert page["hasMore"] is True
    assert page["usage"] == whole["usage"]  # the estimate from the stored totals
    reads = [s for s in statements(trace, start) if reads_messages(s)]
    assert reads and all("LIMIT" in s for s in reads), reads

    # The first prompt loads the history, once; the model sees all of it.
    start = line_count(trace)
    provider.script(Text("answer 3"), Text("answer 4"))
    assert (await prompt(client, "prompt 3"))["status"] == "done"
    assert (await prompt(client, "prompt 4"))["status"] == "done"
    loads = [s for s in statements(trace, start) if "SELECT * FROM messages" in s]
    assert len(loads) == 1, loads
    sent = provider.chat_requests()[-2]["messages"][1:]
    assert [m["content"] for m in sent] == [m["content"] for m in whole["messages"]] + ["prompt 3"]
    after = await command(client, "seri.session.get", {})
    assert after["session"]["messageCount"] == len(after["messages"]) == 10


# --- the running totals ----------------------------------------------------------------


async def test_the_running_totals_follow_compaction_and_rewind(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "notes.txt").write_text(NOTES * 100)  # a recap is much shorter
    client = await agent(provider_extra={"keepTokens": 1})
    for number in range(3):
        provider.script(
            Calls([(f"r{number}", "read_file", {"path": "notes.txt"})]), Text(f"answer {number}")
        )
        assert (await prompt(client, f"prompt {number}"))["status"] == "done"
    session_id = (await command(client, "seri.session.get", {}))["session"]["id"]

    def agrees() -> None:
        assert session_row(profile_root, session_id)[:2] == counted(profile_root, session_id)

    agrees()
    assert (await prompt(client, "/rewind 1 conversation"))["rewound"] == 1
    agrees()
    summary = "Goal:\nread\n\nProgress:\nread twice\n\nBlockers:\nnone\n\nNext steps:\nnone"
    provider.script(Text(summary))
    assert (await prompt(client, "/compact"))["compacted"] is True
    agrees()
    view = await command(client, "seri.session.get", {})
    assert view["session"]["messageCount"] == len(view["messages"])
    estimate = view["usage"]["estimateTokens"]
    await stop_server(client)

    # A new process, before the history is loaded, estimates the same from the totals.
    client = await agent()
    page = await command(client, "seri.session.get", {"limit": 1})
    assert page["session"]["id"] == session_id
    assert page["usage"]["estimateTokens"] == estimate


async def test_an_older_database_gets_its_running_totals(
    agent, profile_root: Path, workspace: Path
) -> None:
    """A seri.db from before the totals (schema 6): migration 7 counts what is there."""
    project = str(workspace.resolve())
    conn = older_database(profile_root, 6)
    conn.execute(
        "INSERT INTO sessions (id, project, title, created_at, updated_at, last_input_tokens)"
        " VALUES ('old', ?, 'old one', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z', NULL)",
        (project,),
    )
    texts = ["x" * 4000, "y" * 3999, "z" * 1]
    for seq, text in enumerate(texts, start=1):
        conn.execute(
            "INSERT INTO messages (session_id, seq, role, content, chars, created_at)"
            " VALUES ('old', ?, ?, ?, ?, '2025-01-01T00:00:00Z')",
            (seq, "user" if seq % 2 else "assistant", text, len(text)),
        )
    conn.commit()
    conn.close()

    client = await agent(init_options={"resumeOnOpen": False})
    [listed] = (await command(client, "seri.session.list", {}))["sessions"]
    assert listed["messageCount"] == 3
    assert session_row(profile_root, "old")[:2] == (3, 8000)
    await command(client, "seri.session.resume", {"sessionId": "old"})
    page = await command(client, "seri.session.get", {"limit": 1})
    # The estimate counts every message (8000 characters), not only the page.
    assert page["usage"]["estimateTokens"] >= math.ceil(8000 / 4)
    assert len(page["messages"]) == 1 and page["hasMore"] is True


CHECKPOINT = "PRAGMA wal_checkpoint(PASSIVE)"


async def test_the_write_ahead_log_is_folded_in_after_a_task_not_during_it(
    agent, provider: ScriptedProvider, tmp_path: Path
) -> None:
    """SQLite folds its write-ahead log into the database file inside whichever commit
    finds it long; seri does it once a task has ended, so a turn's commits do not stop
    for it (a few milliseconds every few hundred steps otherwise)."""
    trace = tmp_path / "statements.sql"
    client = await agent(env={"SERI_TRACE_SQL": str(trace)})
    start = line_count(trace)
    provider.script(
        Calls([("c1", "list_dir", {"path": "."})]),
        Calls([("c2", "list_dir", {"path": "."})]),
        Text("Two folders listed."),
    )
    assert (await prompt(client, "list the folder twice"))["status"] == "done"
    await wait_until(lambda: CHECKPOINT in statements(trace, start))
    ran = statements(trace, start)
    at = ran.index(CHECKPOINT)
    # Every step of the task committed before it (the prompt, three replies, two
    # results, the task's end); none after.
    assert ran[:at].count("COMMIT") >= 7, ran
    assert ran.count(CHECKPOINT) == 1
    assert "COMMIT" not in ran[at:]
