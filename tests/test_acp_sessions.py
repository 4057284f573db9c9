"""`seri-lsp acp` sessions end to end: compaction, load and replay, rewind, one session
per process, listing, resuming, clearing and settings from `_meta`.

Each test drives the real agent process with the client side of agent-client-protocol,
against the scripted provider on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError

from seri_lsp.context.pairing import INTERRUPTED
from seri_lsp.profile import DB_NAME
from seri_lsp.store.database import Database
from seri_lsp.store.messages import Message
from seri_lsp.store.sessions import SessionStore
from tests.acp_client import HOLD, start_acp, until, within, write_config
from tests.agent_helpers import FILLER, SUMMARY
from tests.harness import command, provider_config
from tests.scripted_provider import Calls, ScriptedProvider, Text


@pytest.fixture
def configured(profile_root: Path, provider: ScriptedProvider) -> Path:
    """A profile with a small window (4000) and keep budget (150 tokens); writes allowed."""
    write_config(
        profile_root,
        {
            "provider": provider_config(provider, contextWindow=4000, keepTokens=150),
            "permissions": {"write": "allow"},
        },
    )
    return profile_root


async def build_history(agent, session_id: str, provider: ScriptedProvider, prompts: int) -> None:
    """`prompts` exchanges of a short prompt and a 400-character reply."""
    for index in range(prompts):
        provider.script(Text(f"reply {index} {FILLER}"))
        response = await agent.prompt(session_id, f"prompt {index}")
        assert response.stop_reason == "end_turn"


# --- compaction ---------------------------------------------------------------------------


async def test_compact_with_focus_shows_the_recap_as_a_note(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await build_history(agent, session_id, provider, 3)
        provider.script(Text(SUMMARY))
        response = await agent.prompt(session_id, "/compact keep the parser decisions")
        notes = agent.client.notes(session_id, "compaction")
    assert response.stop_reason == "end_turn"
    summariser = provider.chat_requests(with_tools=False)[0]["messages"][-1]["content"]
    focus = "Focus instructions from the user for this recap: keep the parser decisions"
    assert focus in summariser
    [note] = notes
    assert "compacted" in note.lower() and "manual" in note and "4 earlier messages" in note
    assert "Goal:\nrename foo to bar across the project" in note


async def test_compact_without_enough_history_says_so_once(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await build_history(agent, session_id, provider, 1)
        response = await agent.prompt(session_id, "/compact")
        notes = agent.client.notes(session_id)
    assert response.stop_reason == "end_turn"
    assert [n for n in notes if "Not enough history to compact" in n] == notes[-1:]
    assert len(notes) == 1


async def test_load_replays_a_compacted_session_recap_first(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    (workspace / "notes.md").write_text("milk\n")
    async with start_acp(configured, workspace) as first:
        session_id = await first.new()
        await build_history(first, session_id, provider, 3)
        provider.script(Text(SUMMARY))
        await first.prompt(session_id, "/compact")
        provider.script(
            Calls([("c1", "read_file", {"path": "notes.md"})]),
            Text("It says milk.", thinking="Read it first."),
        )
        await first.prompt(session_id, "what do the notes say?")
    async with start_acp(configured, workspace) as second:
        await second.load(session_id)
        replay = list(second.client.of(session_id))
        answer, updates = second.client.answer_and_updates("session/load")
    assert max(updates) < answer  # the whole replay came before the answer
    kinds = [u.session_update for u in replay]
    first_update = replay[0]
    assert first_update.session_update == "agent_message_chunk"
    assert first_update.field_meta["seri"]["kind"] == "recap"
    assert "Goal:\nrename foo to bar" in first_update.content.text
    users = [u.content.text for u in replay if u.session_update == "user_message_chunk"]
    assert users[-1] == "what do the notes say?" and "prompt 0" not in users
    start, done = [u for u in replay if getattr(u, "tool_call_id", None) == "c1"]
    assert start.session_update == "tool_call" and start.kind == "read"
    assert start.locations[0].path == str(workspace / "notes.md")
    assert done.status == "completed" and "milk" in done.content[-1].content.text
    thought = kinds.index("agent_thought_chunk")
    assert kinds.index("tool_call") < thought < len(kinds) - 1
    assert replay[thought].content.text == "Read it first."
    said = [u.content.text for u in replay if u.session_update == "agent_message_chunk"]
    assert "It says milk." in said
    assert kinds[-1] == "available_commands_update"


async def test_loading_an_open_session_again_replays_it_afresh(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("hi there"))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "hello")
        agent.client.forget()
        await agent.load(session_id)
        users = agent.client.prompts(session_id)
        reply = agent.client.text(session_id)
    assert users == ["hello"] and reply == "hi there"


async def test_load_closes_a_tool_call_that_never_got_its_result(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    settings = {"provider": provider_config(provider), "permissions": {"write": "ask"}}
    write_config(profile_root, settings)
    provider.script(Calls([("w1", "write_file", {"path": "a.txt", "content": "A"})]))
    async with start_acp(profile_root, workspace) as killed:
        killed.client.answers.append(HOLD)
        session_id = await killed.new()
        running = asyncio.ensure_future(killed.prompt(session_id, "write a"))
        await until(lambda: killed.client.questions)
        killed.process.kill()  # while the write waits for its answer
        await within(killed.process.wait())
    with pytest.raises((ConnectionError, RequestError)):
        await running
    async with start_acp(profile_root, workspace) as second:
        await second.load(session_id)
        start, final = second.client.tool_updates(session_id, "w1")
    assert start.status == "pending"
    assert final.status == "failed" and final.content[-1].content.text == INTERRUPTED
    assert not (workspace / "a.txt").exists()


# --- /rewind -------------------------------------------------------------------------------


@pytest.mark.parametrize("through_editor", [False, True], ids=["disk", "editor"])
async def test_rewind_goes_back_one_prompt_with_its_files(
    configured: Path, workspace: Path, provider: ScriptedProvider, through_editor: bool
) -> None:
    path = workspace / "a.txt"
    path.write_text("v1\n")
    provider.script(
        Text("one"),
        Calls([("w1", "write_file", {"path": "a.txt", "content": "v2\n"})]),
        Text("changed"),
    )
    async with start_acp(configured, workspace, fs=through_editor) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "first")
        await agent.prompt(session_id, "change a")
        response = await agent.prompt(session_id, "/rewind")
        notes = agent.client.notes(session_id, "command")
        text = agent.client.buffers.get(str(path)) if through_editor else path.read_text()
        agent.client.forget()
        await agent.load(session_id)
        users = agent.client.prompts(session_id)
    assert response.stop_reason == "end_turn"
    [note] = notes
    assert "Rewound 1 prompt." in note and "Files restored: a.txt." in note
    assert "> change a" in note  # the prompt that was taken back, to send again
    assert text == "v1\n"
    assert path.read_text() == "v1\n"  # through the editor, the disk was never touched
    assert users == ["first"]


async def test_rewind_is_offered_with_its_arguments(configured: Path, workspace: Path) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        commands = await until(lambda: agent.client.of(session_id, "available_commands_update"))
    advertised = {c.name: c for c in commands[0].available_commands}
    assert advertised["rewind"].input.root.hint == "[n] [both|conversation|files] [force]"
    assert advertised["trajectory"].input.root.hint == "on | off (optional)"


# --- one session, one window ------------------------------------------------------------------


async def test_a_session_open_in_another_acp_process_is_refused_naming_it(
    configured: Path, workspace: Path
) -> None:
    async with start_acp(configured, workspace) as first:
        session_id = await first.new()
        async with start_acp(configured, workspace) as second:
            with pytest.raises(RequestError) as refused:
                await second.load(session_id)
            sessions = second.client.of(session_id)
    message = str(refused.value)
    assert f"Session {session_id} is open in another seri process (pid {first.pid})" in message
    assert refused.value.data["holder"] == f"pid {first.pid}"
    assert sessions == []  # nothing was replayed


async def test_a_session_open_in_a_language_server_is_refused_naming_it(
    configured: Path, workspace: Path, lsp
) -> None:
    editor = await lsp(init_options={"resumeOnOpen": False})
    session_id = (await command(editor, "seri.session.new"))["session"]["id"]
    async with start_acp(configured, workspace) as agent:
        with pytest.raises(RequestError) as refused:
            await agent.load(session_id)
    assert f"pid {editor._server.pid}" in str(refused.value)


async def test_closing_a_session_lets_another_process_open_it(
    configured: Path, workspace: Path
) -> None:
    async with start_acp(configured, workspace) as first:
        session_id = await first.new()
        await first.request("session/close", {"sessionId": session_id})
        async with start_acp(configured, workspace) as second:
            await second.load(session_id)
        with pytest.raises(RequestError) as gone:
            await first.prompt(session_id, "hello")
    assert gone.value.data == {"field": "sessionId"}


# --- listing, resuming, clearing ---------------------------------------------------------------


async def test_sessions_are_listed_by_project(
    configured: Path, workspace: Path, tmp_path: Path, provider: ScriptedProvider
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    provider.script(Text("one"), Text("two"), Text("three"))
    async with start_acp(configured, workspace) as agent:
        here = {await agent.new(), await agent.new()}
        there = await agent.new(elsewhere)
        for session_id in (*here, there):  # an empty session is not listed
            await agent.prompt(session_id, "hello")
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        everything = await agent.conn.list_sessions()
    assert {s.session_id for s in listed.sessions} == here
    assert {s.cwd for s in listed.sessions} == {str(workspace)}
    assert {s.session_id for s in everything.sessions} == here | {there}


async def test_the_session_list_comes_in_pages_newest_first(
    configured: Path, workspace: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    db = Database.open(configured / DB_NAME)
    store = SessionStore(db)
    here = [store.create(str(workspace.resolve()), title=f"here {n}").id for n in range(130)]
    there = [store.create(str(elsewhere.resolve())).id for _ in range(5)]
    for session_id in here + there:  # an empty session is not listed
        store.append(session_id, Message(role="user", content="hello"))
    db.close()
    async with start_acp(configured, workspace) as agent:
        first = await agent.conn.list_sessions(cwd=str(workspace))
        second = await agent.conn.list_sessions(cwd=str(workspace), cursor=first.next_cursor)
        everything = await agent.conn.list_sessions()
        rest = await agent.conn.list_sessions(cursor=everything.next_cursor)
        for cursor in ("-1", "x", "\u00b2", "9" * 40):
            with pytest.raises(RequestError) as bad:
                await agent.conn.list_sessions(cursor=cursor)
            assert bad.value.data == {"field": "cursor"}
    newest_first = list(reversed(here))
    assert [s.session_id for s in first.sessions] == newest_first[:100]
    assert first.next_cursor is not None
    assert [s.session_id for s in second.sessions] == newest_first[100:]
    assert second.next_cursor is None
    assert [s.title for s in second.sessions][-1] == "here 0"
    assert len(everything.sessions) == 100 and rest.next_cursor is None
    listed = [s.session_id for s in everything.sessions + rest.sessions]
    assert listed == list(reversed(here + there))


async def test_resume_opens_a_session_without_replaying_it(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("first answer"))
    async with start_acp(configured, workspace) as first:
        session_id = await first.new()
        await first.prompt(session_id, "first question")
    provider.script(Text("second answer"))
    async with start_acp(configured, workspace) as second:
        await second.conn.resume_session(cwd=str(workspace), session_id=session_id)
        response = await second.prompt(session_id, "second question")
        updates = second.client.of(session_id)
    assert response.stop_reason == "end_turn"
    assert not [u for u in updates if u.session_update == "user_message_chunk"]
    sent = [(m["role"], m["content"]) for m in provider.requests[-1]["messages"][1:]]
    assert sent == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
    ]


async def test_clear_goes_on_in_a_new_seri_session(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("hi"), Text("fresh"))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "hello")
        cleared = await agent.prompt(session_id, "/clear")
        await agent.prompt(session_id, "again")
        [note] = agent.client.notes(session_id, "command")
        async with start_acp(configured, workspace) as other:
            await other.load(session_id)  # the earlier session, no longer held
            earlier = other.client.prompts(session_id)
    assert cleared.stop_reason == "end_turn"
    assert "Started a new session" in note and session_id not in note
    assert [m["content"] for m in provider.requests[-1]["messages"][1:]] == ["again"]
    assert earlier == ["hello"]


async def test_the_session_a_clear_started_can_be_loaded_from_the_list(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("hi"), Text("fresh"), Text("still here"))
    async with start_acp(configured, workspace) as agent:
        first = await agent.new()
        await agent.prompt(first, "hello")
        await agent.prompt(first, "/clear")
        await agent.prompt(first, "again")
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        [cleared] = {s.session_id for s in listed.sessions} - {first}
        agent.client.forget()
        await agent.load(cleared)
        users = agent.client.prompts(cleared)
        response = await agent.prompt(cleared, "and now?")
    assert users == ["again"]
    assert response.stop_reason == "end_turn"
    sent = [m["content"] for m in provider.requests[-1]["messages"][1:]]
    assert sent == ["again", "fresh", "and now?"]


async def test_the_session_a_clear_started_can_be_resumed_by_its_own_id(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("fresh"), Text("answered under the new id"))
    async with start_acp(configured, workspace) as agent:
        first = await agent.new()
        cleared = (await agent.prompt(first, "/clear")).field_meta["seri"]
        assert cleared["command"] == "clear"
        await agent.prompt(first, "again")
        [listed] = [
            s.session_id
            for s in (await agent.conn.list_sessions(cwd=str(workspace))).sessions
            if s.session_id != first
        ]
        await agent.conn.resume_session(cwd=str(workspace), session_id=listed)
        response = await agent.prompt(listed, "and now?")
        reply = agent.client.text(listed)
    assert response.stop_reason == "end_turn"
    assert reply == "answered under the new id"


async def test_loading_the_session_a_clear_left_replays_it_not_the_new_one(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("hi"), Text("fresh"))
    async with start_acp(configured, workspace) as agent:
        first = await agent.new()
        await agent.prompt(first, "hello")
        await agent.prompt(first, "/clear")
        await agent.prompt(first, "again")
        agent.client.forget()
        await agent.load(first)
        users = agent.client.prompts(first)
    assert users == ["hello"]


async def test_a_session_open_here_loads_by_a_unique_prefix_of_its_id(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("hi there"), Text("again"))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "hello")
        prefix = session_id[:8]
        agent.client.forget()
        await agent.load(prefix)
        users = agent.client.prompts(prefix)
        response = await agent.prompt(prefix, "more")
    assert users == ["hello"]
    assert response.stop_reason == "end_turn"
    sent = [m["content"] for m in provider.requests[-1]["messages"][1:]]
    assert sent == ["hello", "hi there", "more"]


# --- settings -----------------------------------------------------------------------------------


async def test_settings_in_initialize_meta_are_used(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    meta = {"provider": provider_config(provider), "permissions": {"write": "deny"}}
    provider.script(Calls([("w1", "write_file", {"path": "a.txt", "content": "A"})]), Text("ok"))
    async with start_acp(profile_root, workspace, meta=meta) as agent:
        session_id = await agent.new()
        response = await agent.prompt(session_id, "write")
        final = agent.client.tool_updates(session_id, "w1")[-1]
    assert response.stop_reason == "end_turn"  # the provider came from _meta
    assert final.status == "failed"
    assert "permissions.write is 'deny'" in final.content[-1].content.text
    assert not (workspace / "a.txt").exists()
