"""`seri-lsp acp` forks and spend end to end: `session/fork` (advertised, at the last
message or at `_meta.seri.messageId`), `/fork` typed in a session, and `/cost` and
`/context` as notes; the real agent process against the scripted provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from seri_lsp.profile import DB_NAME
from seri_lsp.store.database import Database
from seri_lsp.store.sessions import SessionStore
from tests.acp_client import start_acp, within, write_config
from tests.harness import provider_config
from tests.scripted_provider import ScriptedProvider, Text, usage


@pytest.fixture
def configured(profile_root: Path, provider: ScriptedProvider) -> Path:
    write_config(profile_root, {"provider": provider_config(provider)})
    return profile_root


def stored_contents(profile_root: Path, session_id: str) -> list[tuple[str, str]]:
    db = Database.open(profile_root / DB_NAME)
    try:
        return [(m.role, m.content) for m in SessionStore(db).messages(session_id)]
    finally:
        db.close()


async def test_session_fork_opens_a_copy_that_the_next_prompts_go_to(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        assert agent.info is not None
        assert agent.info.agent_capabilities.session_capabilities.fork is not None
        source = await agent.new()
        provider.script(Text("one"), Text("two"))
        await agent.prompt(source, "first")
        await agent.prompt(source, "second")

        forked = await within(agent.conn.fork_session(session_id=source, cwd=str(workspace)))
        fork = forked.session_id
        provider.script(Text("in the fork"))
        response = await agent.prompt(fork, "third, in the fork")
        provider.script(Text("in the source"))
        await agent.prompt(source, "third, in the source")
        commands = agent.client.of(fork, "available_commands_update")

    assert fork != source and response.stop_reason == "end_turn"
    assert forked.field_meta["seri"]["parentId"] == source
    assert isinstance(forked.field_meta["seri"]["forkedAt"], int)
    assert commands, "the fork is greeted with the slash commands"
    sent = [m["content"] for m in provider.chat_requests()[2]["messages"][1:]]
    assert sent == ["first", "one", "second", "two", "third, in the fork"]
    assert stored_contents(configured, fork)[-1] == ("assistant", "in the fork")
    assert stored_contents(configured, source) == [
        ("user", "first"),
        ("assistant", "one"),
        ("user", "second"),
        ("assistant", "two"),
        ("user", "third, in the source"),
        ("assistant", "in the source"),
    ]


async def test_session_fork_at_a_message_given_in_meta(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        source = await agent.new()
        provider.script(Text("one"), Text("two"))
        await agent.prompt(source, "first")
        await agent.prompt(source, "second")
        first = _message_ids(configured, source)[0]
        forked = await within(
            agent.conn.fork_session(
                session_id=source, cwd=str(workspace), seri={"messageId": first}
            )
        )
        with pytest.raises(RequestError) as caught:
            await within(
                agent.conn.fork_session(
                    session_id=source, cwd=str(workspace), seri={"messageId": "first"}
                )
            )
    assert forked.field_meta["seri"]["forkedAt"] == first
    assert stored_contents(configured, forked.session_id) == [("user", "first")]
    assert caught.value.code == -32602
    assert caught.value.data == {"field": "_meta.seri.messageId"}


async def test_fork_typed_in_a_session_goes_on_in_the_fork(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        provider.script(Text("one"))
        await agent.prompt(session_id, "first")
        await agent.prompt(session_id, "/fork")
        [note] = [n.strip() for n in agent.client.notes(session_id, "command")]
        provider.script(Text("two"))
        await agent.prompt(session_id, "second")
    fork = note.split()[3]
    assert note.startswith(f"Forked into session {fork} at message ")
    assert f"session {session_id} stays as it was" in note
    assert stored_contents(configured, session_id) == [("user", "first"), ("assistant", "one")]
    assert stored_contents(configured, fork)[-2:] == [("user", "second"), ("assistant", "two")]


async def test_cost_and_context_are_notes_that_keep_their_lines(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        provider.script(Text("one", usage=usage(100, 10, cost=0.5)))
        await agent.prompt(session_id, "first")
        await agent.prompt(session_id, "/cost")
        await agent.prompt(session_id, "/context")
        notes = [n.strip() for n in agent.client.notes(session_id, "info")]
    cost, shown = notes
    assert cost.startswith("```\nSpend: $0.5000 over 1 model call.\n") and cost.endswith("\n```")
    assert shown.startswith("```\nContext: ") and "user text" in shown


def _message_ids(profile_root: Path, session_id: str) -> list[int]:
    db = Database.open(profile_root / DB_NAME)
    try:
        return [m.id for m in SessionStore(db).messages(session_id) if m.id is not None]
    finally:
        db.close()
