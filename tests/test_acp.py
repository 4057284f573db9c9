"""`seri-lsp acp` end to end: sessions, prompts, tool calls, files and permissions.

Each test drives the real agent process with the client side of agent-client-protocol
(a client this project did not write), against the scripted provider on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import (
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextResourceContents,
)

from seri_lsp import __version__
from tests.acp_client import HOLD, start_acp, until, within, write_config
from tests.agent_helpers import events
from tests.harness import provider_config, server_env
from tests.scripted_provider import Calls, Error, Hang, Raw, ScriptedProvider, Text

COMMANDS = {
    "compact",
    "clear",
    "rewind",
    "max-turns",
    "model",
    "trajectory",
    "fork",
    "cost",
    "context",
}


@pytest.fixture
def configured(profile_root: Path, provider: ScriptedProvider) -> Path:
    """A profile whose config.json points at the scripted provider; writes allowed."""
    write_config(
        profile_root, {"provider": provider_config(provider), "permissions": {"write": "allow"}}
    )
    return profile_root


def chunk(delta: dict) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


# --- initialize and sessions ------------------------------------------------------------


async def test_initialize_advertises_load_prompt_content_and_the_version(
    configured: Path, workspace: Path
) -> None:
    async with start_acp(configured, workspace) as agent:
        info = agent.info
    assert info is not None
    capabilities = info.agent_capabilities
    assert capabilities.load_session is True
    assert capabilities.prompt_capabilities.embedded_context is True
    assert capabilities.prompt_capabilities.image is False
    assert capabilities.session_capabilities.list is not None
    assert capabilities.session_capabilities.resume is not None
    assert info.auth_methods == []
    assert info.agent_info.name == "seri-lsp" and info.agent_info.version == __version__


async def test_a_new_session_is_a_seri_session_of_the_cwd_with_the_slash_commands(
    configured: Path, workspace: Path
) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        commands = await until(lambda: agent.client.of(session_id, "available_commands_update"))
        answer, updates = agent.client.answer_and_updates("session/new")
    assert updates and answer < min(updates)  # the client knows the session before its updates
    names = {command.name for command in commands[0].available_commands}
    assert names == COMMANDS
    hints = {c.name: c.input for c in commands[0].available_commands}
    assert hints["compact"] is not None and hints["clear"] is None
    conn = sqlite3.connect(configured / "seri.db")
    try:
        row = conn.execute("SELECT project FROM sessions WHERE id = ?", (session_id,)).fetchone()
    finally:
        conn.close()
    assert row == (str(workspace),)


async def test_a_prompt_streams_its_reply_thinking_and_a_tool_call_with_its_location(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    provider.script(
        Calls([("c1", "read_file", {"path": "src/app.py"})]),
        Text("The app prints hi.", thinking="It reads the file.", chunk_size=4),
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        response = await agent.prompt(session_id, "what does the app do?")
        client = agent.client
        answer, updates = client.answer_and_updates("session/prompt")
    assert response.stop_reason == "end_turn"
    assert max(updates) < answer  # every update came before the stop reason
    assert client.text(session_id) == "The app prints hi."
    assert len(client.of(session_id, "agent_message_chunk")) > 1  # it streamed
    assert client.text(session_id, "agent_thought_chunk") == "It reads the file."
    start, *progress = client.tool_updates(session_id, "c1")
    assert start.session_update == "tool_call" and start.status == "pending"
    assert start.kind == "read" and "src/app.py" in start.title
    assert [loc.path for loc in start.locations] == [str(workspace / "src" / "app.py")]
    assert start.raw_input == {"path": "src/app.py"}
    assert [u.status for u in progress] == ["in_progress", "completed"]
    assert "print('hi')" in progress[-1].content[-1].content.text
    kinds = [u.session_update for u in client.of(session_id)]
    # The thinking streams before the reply it leads to, after the tool call.
    assert kinds.index("tool_call") < kinds.index("agent_thought_chunk")
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")


async def test_an_edit_goes_through_fs_write_text_file_with_its_diff(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    path = workspace / "app.py"
    path.write_text("x = 1\n")
    provider.script(
        Calls([("e1", "edit", {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"})]),
        Text("done"),
    )
    async with start_acp(configured, workspace) as agent:
        client = agent.client
        client.buffers[str(path)] = "x = 1  # unsaved\n"  # the editor holds unsaved text
        session_id = await agent.new()
        response = await agent.prompt(session_id, "set x to 2")
    assert response.stop_reason == "end_turn"
    assert client.writes == [(str(path), "x = 2  # unsaved\n")]
    assert path.read_text() == "x = 1\n"  # the editor has the change; seri left the disk alone
    final = client.tool_updates(session_id, "e1")[-1]
    assert final.status == "completed"
    diff = final.content[0]
    assert diff.type == "diff" and diff.path == str(path)
    assert (diff.old_text, diff.new_text) == ("x = 1  # unsaved\n", "x = 2  # unsaved\n")
    assert final.locations[0].path == str(path) and final.locations[0].line == 0


async def test_a_new_file_is_created_through_the_editor(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("w1", "write_file", {"path": "pkg/new.py", "content": "y = 1\n"})]), Text("ok")
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "create it")
        client = agent.client
    target = workspace / "pkg" / "new.py"
    assert client.writes == [(str(target), "y = 1\n")]
    assert not target.exists() and target.parent.is_dir()  # the editor holds the new file
    diff = client.tool_updates(session_id, "w1")[-1].content[0]
    assert (diff.path, diff.old_text, diff.new_text) == (str(target), None, "y = 1\n")


async def test_a_file_the_editor_holds_unsaved_is_read_and_edited_through_it(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("w1", "write_file", {"path": "new.txt", "content": "N\n"})]),
        Calls([("r1", "read_file", {"path": "new.txt"})]),
        Calls([("e1", "edit", {"path": "new.txt", "old_text": "N", "new_text": "M"})]),
        Text("done"),
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "create, read, edit")
        client = agent.client
    # The test editor keeps writes in its buffers: the disk never has the file.
    new = str(workspace / "new.txt")
    assert not (workspace / "new.txt").exists()
    for call_id in ("w1", "r1", "e1"):
        assert client.tool_updates(session_id, call_id)[-1].status == "completed", call_id
    assert client.reads == [new, new]
    assert client.buffers[new] == "M\n"


async def test_an_editor_that_refuses_a_write_fails_the_tool_call(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    provider.script(
        Calls([("e1", "edit", {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"})]),
        Text("could not"),
    )
    async with start_acp(configured, workspace) as agent:
        agent.client.refuse_writes = True
        session_id = await agent.new()
        await agent.prompt(session_id, "set x to 2")
        final = agent.client.tool_updates(session_id, "e1")[-1]
    assert final.status == "failed"
    assert "the editor refused to write app.py" in final.content[-1].content.text
    assert "read-only" in final.content[-1].content.text
    assert (workspace / "app.py").read_text() == "x = 1\n"


async def test_without_the_fs_capability_tools_use_the_disk(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("w1", "write_file", {"path": "new.txt", "content": "hi\n"})]), Text("ok")
    )
    async with start_acp(configured, workspace, fs=False) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "write it")
        client = agent.client
    assert (workspace / "new.txt").read_text() == "hi\n"
    assert client.reads == [] and client.writes == []
    diff = client.tool_updates(session_id, "w1")[-1].content[0]
    assert (diff.old_text, diff.new_text) == (None, "hi\n")


async def test_paths_outside_the_workspace_never_reach_the_editor(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("w1", "write_file", {"path": "../outside.txt", "content": "x"})]), Text("ok")
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "write outside")
        client = agent.client
    assert client.writes == [] and client.reads == []
    assert not (workspace.parent / "outside.txt").exists()
    final = client.tool_updates(session_id, "w1")[-1]
    assert final.status == "failed" and "outside the workspace" in final.content[-1].content.text


async def test_prompt_resources_become_text_the_model_reads_with_their_paths(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    (workspace / "notes.md").write_text("remember the milk\n")
    provider.script(Text("ok"))
    link = ResourceContentBlock(
        type="resource_link", name="notes.md", uri=(workspace / "notes.md").as_uri()
    )
    embedded = EmbeddedResourceContentBlock(
        type="resource",
        resource=TextResourceContents(uri=(workspace / "lib.py").as_uri(), text="def f(): pass"),
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "look at", link, "and", embedded)
    sent = provider.requests[-1]["messages"][-1]["content"]
    assert sent.startswith("look at @notes.md and @lib.py")
    assert '<context path="lib.py">\ndef f(): pass\n</context>' in sent


# --- permissions --------------------------------------------------------------------------


@pytest.fixture
def asking(profile_root: Path, provider: ScriptedProvider) -> Path:
    """A profile whose writes ask first (permissions.write: ask)."""
    write_config(
        profile_root, {"provider": provider_config(provider), "permissions": {"write": "ask"}}
    )
    return profile_root


@pytest.mark.parametrize("answer, written", [("allow_once", True), ("reject_once", False)])
async def test_a_write_asks_permission_about_its_tool_call(
    asking: Path, workspace: Path, provider: ScriptedProvider, answer: str, written: bool
) -> None:
    provider.script(Calls([("w1", "write_file", {"path": "a.txt", "content": "A"})]), Text("ok"))
    async with start_acp(asking, workspace, fs=False) as agent:
        agent.client.answers.append(answer)
        session_id = await agent.new()
        response = await agent.prompt(session_id, "write a")
        client = agent.client
    assert response.stop_reason == "end_turn"
    [question] = client.questions
    assert question.tool_call.tool_call_id == "w1"
    assert [(o.option_id, o.kind) for o in question.options] == [
        ("allow", "allow_once"),
        ("allow-for-this-session", "allow_always"),
        ("deny", "reject_once"),
    ]
    assert (workspace / "a.txt").exists() is written
    final = client.tool_updates(session_id, "w1")[-1]
    assert final.status == ("completed" if written else "failed")
    if not written:
        assert "denied" in final.content[-1].content.text


async def test_allow_always_holds_for_the_rest_of_the_session(
    asking: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("w1", "write_file", {"path": "a.txt", "content": "A"})]),
        Calls([("w2", "write_file", {"path": "b.txt", "content": "B"})]),
        Text("ok"),
    )
    async with start_acp(asking, workspace, fs=False) as agent:
        agent.client.answers.append("allow_always")
        session_id = await agent.new()
        await agent.prompt(session_id, "write both")
        questions = agent.client.questions
    assert len(questions) == 1
    assert (workspace / "a.txt").read_text() == "A" and (workspace / "b.txt").read_text() == "B"


async def test_a_memory_to_keep_is_asked_about_its_remember_call(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Calls([("m1", "remember", {"text": "use tabs"})]), Text("ok"))
    async with start_acp(configured, workspace) as agent:
        agent.client.answers.append("allow_once")
        session_id = await agent.new()
        await agent.prompt(session_id, "remember tabs")
        client = agent.client
    [question] = client.questions
    assert question.tool_call.tool_call_id == "m1"
    assert {(o.option_id, o.name, o.kind) for o in question.options} == {
        ("remember", "Remember", "allow_once"),
        ("dont-remember", "Don't remember", "reject_once"),
    }
    # Written as the other tools write: through the editor (fs/write_text_file).
    memory = workspace / ".seri" / "memory.md"
    assert client.writes == [(str(memory), "- use tabs\n")]
    assert client.buffers[str(memory)] == "- use tabs\n"


async def test_a_question_outside_a_running_call_gets_a_tool_call_of_its_own(
    asking: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("t1", "task", {"prompt": "write a.txt"})]),
        Calls([("w1", "write_file", {"path": "a.txt", "content": "A"})]),  # the subagent's
        Text("wrote it"),
        Text("done"),
    )
    async with start_acp(asking, workspace, fs=False) as agent:
        agent.client.answers.append("allow_once")
        session_id = await agent.new()
        await agent.prompt(session_id, "delegate the write")
        client = agent.client
    [question] = client.questions
    call_id = question.tool_call.tool_call_id
    assert call_id not in ("t1", "w1")  # the subagent's call is not in this transcript
    start, final = client.tool_updates(session_id, call_id)
    assert start.session_update == "tool_call" and start.title == "seri wants to create a.txt."
    assert final.status == "completed" and final.content[0].content.text == "Answer: Allow"
    assert (workspace / "a.txt").read_text() == "A"


@pytest.mark.parametrize("answer, runs", [("allow_always", 2), ("reject_always", 0)])
async def test_running_checks_is_asked_once_as_execute_and_the_answer_holds_for_the_session(
    profile_root: Path, workspace: Path, provider: ScriptedProvider, answer: str, runs: int
) -> None:
    write_config(
        profile_root,
        {
            "provider": provider_config(provider),
            "permissions": {"write": "allow", "run": "ask"},
            "checks": [{"name": "lint", "command": "touch ran-$$"}],
        },
    )
    provider.script(
        Calls([("w1", "write_file", {"path": "a.txt", "content": "A"})]),
        Text("one"),
        Calls([("w2", "write_file", {"path": "b.txt", "content": "B"})]),
        Text("two"),
    )
    async with start_acp(profile_root, workspace, fs=False) as agent:
        agent.client.answers.append(answer)
        session_id = await agent.new()
        first = await agent.prompt(session_id, "write a")
        second = await agent.prompt(session_id, "write b")
        questions = agent.client.questions
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    [question] = questions
    assert question.tool_call.kind == "execute"
    assert question.tool_call.title.startswith("seri wants to run the checks")
    assert [(o.option_id, o.kind) for o in question.options] == [
        ("allow-for-this-session", "allow_always"),
        ("deny", "reject_always"),
    ]
    assert len(list(workspace.glob("ran-*"))) == runs


# --- slash commands ---------------------------------------------------------------------------


async def test_trajectory_says_its_answer_once(configured: Path, workspace: Path) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        response = await agent.prompt(session_id, "/trajectory")
        notes = agent.client.notes(session_id)
        info = agent.client.notes(session_id, "info")
    assert response.stop_reason == "end_turn"
    assert notes == info
    [note] = notes
    assert "Trajectory recording is" in note


async def test_trajectory_on_then_a_prompt_leaves_a_recording_with_its_events(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    write_config(profile_root, {"provider": provider_config(provider), "trajectory": False})
    provider.script(Calls([("l1", "list_dir", {"path": "."})]), Text("listed"))
    async with start_acp(profile_root, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "/trajectory on")
        response = await agent.prompt(session_id, "list the files")
        notes = agent.client.notes(session_id)
    assert response.stop_reason == "end_turn"
    assert [n for n in notes if "Trajectory recording is on" in n] == notes
    [started] = events(profile_root, "task_started", session_id)
    assert started["prompt"] == "list the files"
    [call] = events(profile_root, "tool_call", session_id)
    [result] = events(profile_root, "tool_result", session_id)
    [ended] = events(profile_root, "task_ended", session_id)
    assert (call["id"], call["name"]) == ("l1", "list_dir")
    assert result["id"] == "l1" and not result["isError"]
    assert ended["status"] == "done"


# --- cancel ---------------------------------------------------------------------------------


async def test_cancel_mid_task_stops_it_and_every_tool_call_gets_its_result(
    asking: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls(
            [
                ("w1", "write_file", {"path": "a.txt", "content": "A"}),
                ("r1", "read_file", {"path": "a.txt"}),
            ]
        )
    )
    async with start_acp(asking, workspace, fs=False) as agent:
        agent.client.answers.append(HOLD)
        session_id = await agent.new()
        task = asyncio.ensure_future(agent.prompt(session_id, "write then read"))
        await until(lambda: agent.client.questions)
        await agent.conn.cancel(session_id=session_id)
        response = await task
        client = agent.client
    assert response.stop_reason == "cancelled"
    for call_id in ("w1", "r1"):
        assert client.tool_updates(session_id, call_id)[-1].status == "failed"
    assert not (workspace / "a.txt").exists()


# --- stop reasons ---------------------------------------------------------------------------


async def test_the_turn_budget_ends_with_max_turn_requests(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Calls([("l1", "list_dir", {"path": "."})]))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        budget = await agent.prompt(session_id, "/max-turns 1")
        response = await agent.prompt(session_id, "list and go on")
        client = agent.client
    assert budget.stop_reason == "end_turn"
    assert response.stop_reason == "max_turn_requests"
    assert any("Turn budget: 1" in note for note in client.notes(session_id, "command"))
    assert any("turn budget" in note for note in client.notes(session_id, "warning"))
    assert client.tool_updates(session_id, "l1")[-1].status == "completed"


async def test_max_turns_on_the_command_line_caps_every_prompt(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Calls([("l1", "list_dir", {"path": "."})]))
    async with start_acp(configured, workspace, args=("--max-turns", "1")) as agent:
        session_id = await agent.new()
        response = await agent.prompt(session_id, "list and go on")
    assert response.stop_reason == "max_turn_requests"


async def test_a_provider_failure_ends_with_refusal_and_says_why(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Error(400, {"error": {"message": "model not found"}}))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        response = await agent.prompt(session_id, "hello")
        client = agent.client
    assert response.stop_reason == "refusal"
    assert response.field_meta["seri"]["status"] == "failed"
    assert any("model not found" in note for note in client.notes(session_id, "error"))


async def test_a_retried_reply_starts_as_a_new_message(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Raw(
            [chunk({"content": "Hello, wor"}), {"error": {"message": "overloaded", "code": 502}}],
            end="done",
        ),
        Text("Hello, world."),
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "hello")
        client = agent.client
    chunks = client.of(session_id, "agent_message_chunk")
    replies = [c for c in chunks if not (c.field_meta or {}).get("seri")]
    assert "".join(c.content.text for c in replies) == "Hello, worHello, world."
    first, second = replies[0].message_id, replies[-1].message_id
    assert first != second  # the retry streams as a message of its own
    assert client.notes(session_id, "retry")


# --- bad requests -----------------------------------------------------------------------------


async def test_bad_requests_are_answered_with_acp_errors(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        with pytest.raises(RequestError) as unknown:
            await agent.prompt("no-such-session", "hello")
        with pytest.raises(RequestError) as relative:
            await agent.request("session/new", {"cwd": "relative/path", "mcpServers": []})
        with pytest.raises(RequestError) as malformed:
            await agent.request("session/new", {"cwd": 5})
        with pytest.raises(RequestError) as nul:
            await agent.request("session/new", {"cwd": f"{workspace}\x00x", "mcpServers": []})
        with pytest.raises(RequestError) as nul_listed:
            await agent.request("session/list", {"cwd": f"{workspace}\x00x"})
        with pytest.raises(RequestError) as missing:
            await agent.load("00000000-0000-0000-0000-000000000000")
        with pytest.raises(RequestError) as command:
            session_id = await agent.new()
            await agent.prompt(session_id, "/frobnicate")
        with pytest.raises(RequestError) as surrogate:
            await agent.prompt(session_id, "half a character: \ud83d")
        provider.script(Text("still here"))
        response = await agent.prompt(session_id, "hello")
    assert unknown.value.code == -32602 and "no-such-session" in str(unknown.value)
    assert unknown.value.data == {"field": "sessionId"}
    assert relative.value.code == -32602 and relative.value.data == {"field": "cwd"}
    assert malformed.value.code == -32602
    for refused in (nul, nul_listed):
        assert refused.value.code == -32602 and refused.value.data == {"field": "cwd"}
        assert "NUL" in str(refused.value)
    assert missing.value.code == -32602 and "Unknown session id" in str(missing.value)
    assert command.value.code == -32602 and "/frobnicate" in str(command.value)
    assert surrogate.value.code == -32602 and surrogate.value.data == {"field": "prompt"}
    assert response.stop_reason == "end_turn"


async def test_a_resource_link_holding_a_nul_is_refused_naming_the_prompt(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        link = ResourceContentBlock(type="resource_link", name="n", uri="file:///tmp/a%00b")
        with pytest.raises(RequestError) as refused:
            await agent.prompt(session_id, "look", link)
    assert refused.value.code == -32602 and refused.value.data == {"field": "prompt"}
    assert "NUL" in str(refused.value)


@pytest.mark.parametrize(
    ("line", "code"),
    [("5", -32600), ("[]", -32600), ('"text"', -32600), ("null", -32600), ("{not json", -32700)],
)
async def test_a_message_that_is_not_a_json_object_is_answered_and_the_agent_goes_on(
    configured: Path, workspace: Path, line: str, code: int
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "seri_lsp", "acp", "--profile-root", str(configured),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=server_env(),
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None

    async def send(message: str) -> None:
        process.stdin.write(message.encode() + b"\n")  # type: ignore[union-attr]
        await process.stdin.drain()  # type: ignore[union-attr]

    async def answer() -> dict:
        return json.loads(await within(process.stdout.readline()))  # type: ignore[union-attr]

    try:
        await send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                               "params": {"protocolVersion": 1}}))  # fmt: skip
        assert (await answer())["id"] == 0
        await send(line)
        error = await answer()
        assert error["id"] is None and error["error"]["code"] == code
        await send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}))
        listed = await answer()
        assert listed["id"] == 1 and listed["result"]["sessions"] == []
    finally:
        process.stdin.close()
        await within(process.wait())
    assert process.returncode == 0


async def test_a_cancel_right_after_the_prompt_cancels_it(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("a long reply " * 40, chunk_size=4, chunk_delay=0.02))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        prompting = asyncio.ensure_future(agent.prompt(session_id, "hello"))
        # The cancel follows the prompt on the wire (a bare `sleep(0)` could let it go
        # first, and a cancel before the prompt does not cancel it).
        await until(
            lambda: any(
                way == "outgoing" and message.get("method") == "session/prompt"
                for way, message in agent.client.wire
            )
        )
        await agent.conn.cancel(session_id=session_id)
        response = await prompting
    assert response.stop_reason == "cancelled"
    assert len(agent.client.text(session_id)) < len("a long reply " * 40)


async def test_two_loads_of_one_session_at_once_both_replay_it(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("first answer"))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "first")
    async with start_acp(configured, workspace) as agent:
        await asyncio.gather(agent.load(session_id), agent.load(session_id))
        provider.script(Text("again"))
        assert (await agent.prompt(session_id, "again")).stop_reason == "end_turn"


# --- subagents and the end of the connection ---------------------------------------------------


async def test_a_subagent_shows_as_a_think_call_with_its_answer(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("t1", "task", {"prompt": "Look around the project.\nReport back."})]),
        Text("The subagent's own words."),
        Text("Main answer."),
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "delegate")
        client = agent.client
    start, *_, final = client.tool_updates(session_id, "t1")
    assert start.kind == "think" and start.title == "Subagent: Look around the project."
    assert final.status == "completed"
    assert "The subagent's own words." in final.content[-1].content.text
    assert client.text(session_id) == "Main answer."  # the child's stream stays in its call


async def test_when_the_editor_goes_mid_task_the_agent_ends_it_and_exits(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    stalled = Hang()
    provider.script(stalled)
    try:
        async with start_acp(configured, workspace) as agent:
            session_id = await agent.new()
            running = asyncio.ensure_future(agent.prompt(session_id, "hang on"))
            await until(lambda: provider.requests)
        with pytest.raises((ConnectionError, RequestError)):
            await running
        assert agent.process.returncode == 0  # it left on its own, in time
        async with start_acp(configured, workspace) as again:
            await again.load(session_id)  # no longer held
            users = again.client.prompts(session_id)
    finally:
        stalled.release.set()
    assert users == ["hang on"]
    ended = events(configured, "task_ended", session_id)
    assert [e["status"] for e in ended] == ["cancelled"]  # the task ended in order


async def test_a_rule_that_comes_into_force_shows_as_a_note(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    rules = workspace / ".seri" / "rules"
    rules.mkdir(parents=True)
    (rules / "python.md").write_text('---\nglobs: "*.py"\n---\nUse type hints.\n')
    (workspace / "app.py").write_text("x = 1\n")
    provider.script(Calls([("r1", "read_file", {"path": "app.py"})]), Text("ok"))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "read app.py")
        live = agent.client.notes(session_id, "rule")
        agent.client.forget()
        await agent.load(session_id)
        replayed = agent.client.notes(session_id, "rule")
        users = agent.client.prompts(session_id)
    assert len(live) == 1 and "applies to app.py" in live[0]
    assert replayed == live
    assert users == ["read app.py"]  # the rule is seri's words, not the user's


async def test_an_unusable_profile_is_answered_at_initialize(
    tmp_path: Path, workspace: Path
) -> None:
    not_a_folder = tmp_path / "profile"
    not_a_folder.write_text("a file where the profile folder should be")
    async with start_acp(not_a_folder, workspace, initialize=False) as agent:
        with pytest.raises(RequestError) as refused:
            await agent.conn.initialize(protocol_version=1)
    assert refused.value.code == -32603
    assert "seri cannot use its store" in str(refused.value) and str(not_a_folder) in str(
        refused.value
    )


async def test_sigterm_stops_the_agent_cleanly_mid_task(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    stalled = Hang()
    provider.script(stalled)
    try:
        async with start_acp(configured, workspace) as agent:
            session_id = await agent.new()
            running = asyncio.ensure_future(agent.prompt(session_id, "hang on"))
            await until(lambda: provider.requests)
            agent.process.send_signal(signal.SIGTERM)
            assert await within(agent.process.wait()) == 0
        with pytest.raises((ConnectionError, RequestError)):
            await running
    finally:
        stalled.release.set()
    ended = events(configured, "task_ended", session_id)
    assert [e["status"] for e in ended] == ["cancelled"]


async def test_a_run_call_streams_its_output_as_tool_call_update_content(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    write_config(
        profile_root,
        {"provider": provider_config(provider), "permissions": {"write": "allow", "run": "allow"}},
    )
    configured = profile_root
    script = "for i in 1 2 3; do echo step $i; sleep 0.2; done"
    provider.script(Calls([("r1", "run", {"command": script})]), Text("ran"))
    async with start_acp(configured, workspace, fs=False) as agent:
        session_id = await agent.new()
        await agent.prompt(session_id, "run it")
        client = agent.client
    updates = client.tool_updates(session_id, "r1")
    live = [u.content[0].content.text for u in updates if u.content and u.status is None]
    assert live and live[-1] == "step 1\nstep 2\nstep 3\n"
    assert len(live) >= 2
    final = updates[-1]
    assert final.status == "completed"
    assert final.content[-1].content.text.startswith("exit code 0\nstep 1")
