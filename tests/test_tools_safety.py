"""The workspace boundary, the write permission, and tools that respect the editor."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from seri_lsp.agent.disk import ToolThreads
from seri_lsp.agent.tools import Toolbox, WriteGate
from seri_lsp.agent.workspace import Workspace
from seri_lsp.host import Host
from seri_lsp.store.messages import ToolCall
from tests.agent_helpers import events, messages, prompt, tool_results
from tests.harness import CLIENTS, open_document
from tests.scripted_provider import Calls, ScriptedProvider, Text


async def test_every_path_escape_is_denied_with_a_reason(
    agent, provider: ScriptedProvider, workspace: Path, tmp_path: Path, profile_root: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    os.symlink(outside, workspace / "link")
    os.symlink(outside / "secret.txt", workspace / "innocent.txt")
    provider.script(
        Calls(
            [
                ("rel", "read_file", {"path": "../outside/secret.txt"}),
                ("abs", "read_file", {"path": str(outside / "secret.txt")}),
                ("dir", "read_file", {"path": "link/secret.txt"}),
                ("file", "read_file", {"path": "innocent.txt"}),
                ("write", "write_file", {"path": "link/new.txt", "content": "x"}),
                ("list", "list_dir", {"path": ".."}),
                ("grep", "grep", {"pattern": "secret", "path": "/etc"}),
            ]
        ),
        Text("denied everywhere"),
    )
    client = await agent()
    await prompt(client, "read the secret")
    results = tool_results(await messages(client))
    for call_id in ("rel", "abs", "dir", "file", "write", "list", "grep"):
        assert results[call_id]["isError"], call_id
        assert results[call_id]["content"].startswith("Denied:"), call_id
        assert "top secret" not in results[call_id]["content"]
    assert "outside the workspace" in results["rel"]["content"]
    assert "absolute path" in results["abs"]["content"]
    assert "symbolic link" in results["dir"]["content"]
    assert "symbolic link" in results["file"]["content"]
    assert not (outside / "new.txt").exists()
    denials = events(profile_root, "denial")
    assert {d["tool"] for d in denials} == {"read_file", "write_file", "list_dir", "grep"}
    assert len(denials) == 7 and all(d["reason"] for d in denials)


async def test_grep_does_not_follow_links_out_of_the_workspace(
    agent, provider: ScriptedProvider, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle outside\n")
    (workspace / "inside.txt").write_text("needle inside\n")
    os.symlink(outside / "secret.txt", workspace / "leak.txt")
    provider.script(Calls([("g", "grep", {"pattern": "needle"})]), Text("found"))
    client = await agent()
    await prompt(client, "search")
    found = tool_results(await messages(client))["g"]["content"]
    assert found == "inside.txt:1: needle inside"


@pytest.mark.parametrize("answer, written", [("Allow", True), ("Deny", False)])
async def test_ask_permission_is_answered_by_the_user(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path, answer, written
) -> None:
    provider.script(
        Calls([("w", "write_file", {"path": "new.txt", "content": "hello"})]), Text("ok")
    )
    client = await agent(init_options={"permissions": {"write": "ask"}})
    client.answers.append(answer)
    await prompt(client, "write new.txt")
    request = client.message_requests[0]
    assert "create new.txt" in request.message
    assert [a.title for a in request.actions] == ["Allow", "Allow for this session", "Deny"]
    assert (workspace / "new.txt").exists() is written
    result = tool_results(await messages(client))["w"]
    assert result.get("isError", False) is not written
    if not written:
        assert "the user denied this write" in result["content"]
        assert events(profile_root, "denial")[0]["reason"] == "the user denied this write"


async def test_allow_for_this_session_stops_asking(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        Calls([("a", "write_file", {"path": "a.txt", "content": "a"})]),
        Calls([("b", "write_file", {"path": "b.txt", "content": "b"})]),
        Text("both"),
    )
    client = await agent(init_options={"permissions": {"write": "ask"}})
    client.answers.append("Allow for this session")
    await prompt(client, "write two files")
    assert len(client.message_requests) == 1
    assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()


async def test_write_permission_deny_refuses_every_write(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("keep me")
    provider.script(
        Calls(
            [
                ("w", "write_file", {"path": "a.txt", "content": "gone"}),
                ("e", "edit", {"path": "a.txt", "old_text": "keep", "new_text": "lose"}),
            ]
        ),
        Text("could not"),
    )
    client = await agent(init_options={"permissions": {"write": "deny"}})
    await prompt(client, "overwrite")
    results = tool_results(await messages(client))
    assert all("permissions.write is 'deny'" in r["content"] for r in results.values())
    assert (workspace / "a.txt").read_text() == "keep me"
    assert client.message_requests == []


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_read_file_sees_the_unsaved_buffer(
    agent, provider: ScriptedProvider, workspace: Path, client_name: str
) -> None:
    (workspace / "app.py").write_text("saved = 1\n")
    provider.script(Calls([("r", "read_file", {"path": "app.py"})]), Text("read"))
    client = await agent(client_name=client_name)
    open_document(client, workspace / "app.py", "unsaved = 2\n")
    await prompt(client, "read app.py")
    assert tool_results(await messages(client))["r"]["content"] == "unsaved = 2\n"


async def test_read_file_follows_buffers_as_they_open_and_close(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    """A buffer opened through a symbolic link is the file it leads to; once closed the
    disk is read again, and a buffer opened again is read with its new text."""
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("saved = 1\n")
    os.symlink(workspace / "src", workspace / "alias")
    provider.script(
        *(
            reply
            for number in (1, 2, 3)
            for reply in (Calls([(f"r{number}", "read_file", {"path": "src/app.py"})]), Text("ok"))
        )
    )
    client = await agent()

    uri = open_document(client, workspace / "alias" / "app.py", "unsaved = 2\n")
    await prompt(client, "read it")
    assert tool_results(await messages(client))["r1"]["content"] == "unsaved = 2\n"

    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await prompt(client, "read it again")
    assert tool_results(await messages(client))["r2"]["content"] == "saved = 1\n"

    open_document(client, workspace / "alias" / "app.py", "unsaved = 3\n")
    await prompt(client, "and again")
    assert tool_results(await messages(client))["r3"]["content"] == "unsaved = 3\n"


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_edits_to_an_open_buffer_go_through_apply_edit(
    agent, provider: ScriptedProvider, workspace: Path, client_name: str, profile_root: Path
) -> None:
    path = workspace / "app.py"
    path.write_text("x = 1\ny = 2\n")
    provider.script(
        Calls([("e", "edit", {"path": "app.py", "old_text": "y = 2", "new_text": "y = 3"})]),
        Calls([("r", "read_file", {"path": "app.py"})]),
        Text("edited"),
    )
    client = await agent(client_name=client_name)
    uri = open_document(client, path, "x = 1\ny = 2\nz = 0\n")  # unsaved third line
    await prompt(client, "set y to 3")

    assert len(client.applied_edits) == 1
    edit = client.applied_edits[0].edit
    if client_name == "visual-studio-code":  # documentChanges, with the buffer's version
        change = edit.document_changes[0]
        assert (change.text_document.uri, change.text_document.version) == (uri, 1)
        text_edit = change.edits[0]
    else:  # Neovim 0.11 does not announce documentChanges: plain `changes`
        text_edit = edit.changes[uri][0]
    assert text_edit.range == types.Range(
        start=types.Position(line=1, character=0), end=types.Position(line=1, character=5)
    )
    assert text_edit.new_text == "y = 3"
    assert client.documents[uri][1] == "x = 1\ny = 3\nz = 0\n"
    # The buffer is the user's: the disk keeps the saved text until they save.
    assert path.read_text() == "x = 1\ny = 2\n"
    assert tool_results(await messages(client))["r"]["content"] == "x = 1\ny = 3\nz = 0\n"
    assert events(profile_root, "edit")[0]["via"] == "editor"


async def test_a_file_not_open_is_edited_through_the_editor_and_saved(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    path = workspace / "lib.py"
    path.write_text("a = 1\n")
    provider.script(
        Calls([("w", "write_file", {"path": "lib.py", "content": "a = 2\n"})]), Text("done")
    )
    client = await agent()
    await prompt(client, "rewrite lib.py")
    assert len(client.applied_edits) == 1
    assert path.read_text() == "a = 2\n"
    assert events(profile_root, "edit")[0]["via"] == "editor+disk"


async def test_an_edit_the_editor_refuses_is_an_error_and_changes_nothing(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "lib.py"
    path.write_text("a = 1\n")
    provider.script(
        Calls([("e", "edit", {"path": "lib.py", "old_text": "1", "new_text": "2"})]), Text("no")
    )
    client = await agent()
    client.refuse_edits = True
    await prompt(client, "edit")
    result = tool_results(await messages(client))["e"]
    assert result["isError"] and "the editor refused the change" in result["content"]
    assert "read-only" in result["content"]
    assert path.read_text() == "a = 1\n"


async def test_new_files_are_created_on_disk(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        Calls([("w", "write_file", {"path": "deep/er/new.txt", "content": "fresh"})]), Text("ok")
    )
    client = await agent()
    await prompt(client, "create")
    assert (workspace / "deep" / "er" / "new.txt").read_text() == "fresh"
    assert client.applied_edits == []


# --- in process: where the work runs ---------------------------------------------------


class _Buffers(Host):
    """A host whose editor has documents open (their text, by real path)."""

    def __init__(self, buffers: dict[Path, str]) -> None:
        self.buffers = buffers

    def document_text(self, path: Path) -> str | None:
        return self.buffers.get(path)


def _toolbox(workspace: Path, host: Host) -> Toolbox:
    return Toolbox(Workspace([workspace]), host, WriteGate("allow", host), ToolThreads())


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=json.dumps(arguments))


async def test_a_path_is_resolved_off_the_event_loop(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following a path's symbolic links reads the disk (a hung network mount blocks
    it): the event loop goes on while it waits."""
    (workspace / "slow.txt").write_text("worth the wait\n")
    entered, release = threading.Event(), threading.Event()
    realpath = os.path.realpath

    def hanging_realpath(path: Any, *args: Any, **kwargs: Any) -> str:
        if str(path).endswith("slow.txt"):
            entered.set()
            release.wait(3)
        return realpath(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", hanging_realpath)
    toolbox = _toolbox(workspace, Host())
    call = asyncio.create_task(toolbox.run(_call("read_file", path="slow.txt")))
    try:
        assert await asyncio.to_thread(entered.wait, 3)
        for _ in range(5):
            await asyncio.sleep(0.01)  # the loop turns while the path is being resolved
        assert not call.done()
    finally:
        release.set()
    assert (await call).content == "worth the wait\n"
    toolbox.threads.shutdown()


async def test_an_open_buffer_stands_in_for_a_file_the_disk_cannot_give(workspace: Path) -> None:
    """The disk read done with the path's resolution may fail (no such file yet, not a
    regular file): the editor's buffer, when it has one, is what the tools see."""
    os.mkfifo(workspace / "pipe.txt")
    host = _Buffers(
        {workspace / "unsaved.txt": "only in the editor\n", workspace / "pipe.txt": "a buffer\n"}
    )
    toolbox = _toolbox(workspace, host)
    try:
        read = await toolbox.run(_call("read_file", path="unsaved.txt"))
        assert (read.content, read.is_error) == ("only in the editor\n", False)
        edited = await toolbox.run(
            _call("edit", path="pipe.txt", old_text="a buffer", new_text="an edit")
        )
        assert not edited.is_error, edited.content
        missing = await toolbox.run(_call("read_file", path="nowhere.txt"))
        assert missing.is_error and "nowhere.txt does not exist" in missing.content
    finally:
        toolbox.threads.shutdown()
