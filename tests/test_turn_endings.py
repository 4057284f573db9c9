"""How each turn ended is stored with it, so a reopened chat can say it: a failed prompt
keeps its error, a cancelled turn says so, and a turn cut off by seri stopping (politely,
or killed mid-stream) is marked interrupted."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from seri_lsp.export.bundle import export_session, import_bundle, read_bundle
from seri_lsp.profile import DB_NAME
from seri_lsp.store.database import Database
from seri_lsp.store.sessions import SessionStore
from tests.agent_helpers import messages, prompt
from tests.ending_seeds import ENDINGS, seed_turn_endings
from tests.harness import command, stop_server, wait_until
from tests.scripted_provider import Error, ScriptedProvider, Text


async def reopened(agent: Any, session_id: str) -> list[dict[str, Any]]:
    """The session's messages as a fresh server (a restart) answers them."""
    client = await agent()
    await command(client, "seri.session.resume", {"sessionId": session_id})
    return await messages(client)


async def session_id(client: LanguageClient) -> str:
    return str((await command(client, "seri.session.get", {}))["session"]["id"])


async def test_only_the_last_message_of_a_done_turn_says_it_ended(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Text("Hello there."))
    client = await agent()
    assert (await prompt(client, "hi"))["status"] == "done"
    history = await messages(client)
    assert [m.get("turnEnded") for m in history] == [None, {"status": "done"}]
    # As stored, and as the open session (its history in memory) serves it.
    sid = await session_id(client)
    await stop_server(client)
    assert [m.get("turnEnded") for m in await reopened(agent, sid)] == [
        None,
        {"status": "done"},
    ]


async def test_a_failed_prompt_keeps_its_error_after_a_restart(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Error(400, {"error": {"message": "model not found: gpt-9"}}))
    client = await agent()
    result = await prompt(client, "explain this")
    assert result["status"] == "failed"
    sid = await session_id(client)
    await stop_server(client)
    [stored_prompt] = await reopened(agent, sid)
    assert stored_prompt["content"] == "explain this"
    ended = stored_prompt["turnEnded"]
    assert ended["status"] == "failed"
    assert ended["error"] == result["error"] and "model not found: gpt-9" in ended["error"]


async def test_a_cancelled_turn_says_so_after_a_restart(agent, provider: ScriptedProvider) -> None:
    stalled = Text("The first words arrive, then it stalls.", chunk_size=10, stall_after=2)
    provider.script(stalled)
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "long answer please"))
    await wait_until(lambda: len(client.seri["seri/delta"]) >= 2)
    await command(client, "seri.cancel", {})
    assert (await asyncio.wait_for(running, timeout=5))["status"] == "cancelled"
    stalled.release.set()
    sid = await session_id(client)
    await stop_server(client)
    history = await reopened(agent, sid)
    assert [(m["role"], m.get("turnEnded")) for m in history] == [
        ("user", None),
        ("assistant", {"status": "cancelled", "error": "Cancelled by the user."}),
    ]
    assert history[-1]["content"] == "The first words arri"


async def test_a_reply_cut_by_a_stop_is_kept_and_marked_interrupted(
    agent, provider: ScriptedProvider
) -> None:
    stalled = Text("Half of a sentence and then", chunk_size=10, stall_after=2)
    provider.script(stalled)
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "tell me"))
    await wait_until(lambda: len(client.seri["seri/delta"]) >= 2)
    sid = await session_id(client)
    await stop_server(client)  # the editor quits mid-stream
    stalled.release.set()
    # Answered before the server went: seri stopped it, the user did not.
    assert (await running)["status"] == "interrupted"
    history = await reopened(agent, sid)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[-1]["content"] == "Half of a sentence a"
    ended = history[-1]["turnEnded"]
    assert ended["status"] == "interrupted"
    assert "cut off" in ended["error"] and "stopped" in ended["error"]


async def test_a_turn_killed_mid_stream_is_found_interrupted_at_the_next_start(
    agent, provider: ScriptedProvider
) -> None:
    stalled = Text("These words never get stored", chunk_size=10, stall_after=2)
    provider.script(stalled)
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "write the report"))
    await wait_until(lambda: len(client.seri["seri/delta"]) >= 2)
    sid = await session_id(client)
    client._server.send_signal(signal.SIGKILL)  # kill -9: nothing closes the turn
    await asyncio.wait_for(client._server.wait(), timeout=10)
    running.cancel()  # never answered
    stalled.release.set()
    # The next start continues the session (nobody holds it) and finds the turn open.
    restarted = await agent()
    change = await wait_until(lambda: restarted.seri["seri/sessionChanged"])
    assert change[0]["session"]["id"] == sid
    [stored_prompt] = await messages(restarted)
    assert stored_prompt["content"] == "write the report"
    ended = stored_prompt["turnEnded"]
    assert ended["status"] == "interrupted"
    assert "cut off" in ended["error"] and "killed" in ended["error"]
    # The next turn runs and ends as usual; the old mark stays where it was.
    provider.script(Text("Here it is."))
    assert (await prompt(restarted, "go on"))["status"] == "done"
    assert [m.get("turnEnded", {}).get("status") for m in await messages(restarted)] == [
        "interrupted",
        None,
        "done",
    ]


def test_an_export_carries_how_turns_ended_and_an_import_keeps_it(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    profile = tmp_path / "profile"
    seed_turn_endings(profile, workspace)
    db = Database.open(profile / DB_NAME)
    try:
        store = SessionStore(db)
        session = store.latest(str(workspace))
        assert session is not None
        # The seeded third turn is still marked running: the open that finds it says so.
        assert store.close_interrupted_turn(session.id)
        text = export_session(store, session.id, "markdown", secrets=[]).text
        assert f"_The task failed: {ENDINGS['failedError']}_" in text
        assert "_Cancelled._" in text
        assert "_The reply was cut off: seri stopped before this turn ended" in text
        exported = export_session(store, session.id, "json", secrets=[]).text
        ended = [m.get("turnEnded") for m in json.loads(exported)["messages"]]
        assert [e and e["status"] for e in ended] == [
            "failed",
            None,
            "cancelled",
            None,
            "interrupted",
        ]
        imported, _ = import_bundle(store, read_bundle(exported), str(tmp_path / "elsewhere"))
        again = json.loads(export_session(store, imported.id, "json", secrets=[]).text)
        assert [m.get("turnEnded") for m in again["messages"]] == ended
    finally:
        db.close()
