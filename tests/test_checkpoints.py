"""Checkpoints and `/rewind` end to end: the real server, the scripted provider, real
files in a temporary workspace and a real seri.db read back directly."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient, client_capabilities

from seri_lsp.waits import WAITS_ENV
from tests.agent_helpers import add_trigger, messages, project_rules, prompt
from tests.harness import command, open_document, shown_messages, stop_server, wait_until
from tests.scripted_provider import Calls, Hang, ScriptedProvider, Text, usage

REQUEST_FAILED = -32803


def write(call_id: str, path: str, content: str) -> tuple[str, str, dict[str, str]]:
    return (call_id, "write_file", {"path": path, "content": content})


def edit(call_id: str, path: str, old: str, new: str) -> tuple[str, str, dict[str, str]]:
    return (call_id, "edit", {"path": path, "old_text": old, "new_text": new})


def task(provider: ScriptedProvider, *calls: tuple[str, str, Any], answer: str = "done") -> None:
    """Script one task: a turn making `calls` (if any), then a final answer."""
    if calls:
        provider.script(Calls(list(calls)))
    provider.script(Text(answer))


async def run(client: LanguageClient, text: str) -> dict[str, Any]:
    result = await prompt(client, text)
    assert result["status"] == "done", result
    return result


async def refused(client: LanguageClient, name: str, args: dict[str, Any]) -> str:
    """Run a command that must answer RequestFailed; returns its message."""
    with pytest.raises(JsonRpcException) as caught:
        await command(client, name, args)
    assert caught.value.code == REQUEST_FAILED, caught.value
    return caught.value.message


def user_texts(history: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in history if m["role"] == "user" and not m.get("kind")]


def db_rows(profile_root: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def two_prompts(client: LanguageClient, provider: ScriptedProvider, workspace: Path) -> None:
    """Prompt one creates notes.txt and edits app.py; prompt two edits both and creates
    src/new.py (in a folder it makes)."""
    task(
        provider,
        write("w1", "notes.txt", "first notes\n"),
        edit("e1", "app.py", "value = 1", "value = 2"),
    )
    await run(client, "first prompt\nwith a second line")
    task(
        provider,
        edit("e2", "app.py", "value = 2", "value = 3"),
        edit("e3", "notes.txt", "first", "second"),
        write("w2", "src/new.py", "print('new')\n"),
    )
    await run(client, "second prompt")
    assert (workspace / "app.py").read_text() == "value = 3\n"


async def test_rewind_one_prompt_restores_the_conversation_and_the_files(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    client = await agent()
    await two_prompts(client, provider, workspace)
    paths_before = (await command(client, "seri.session.get", {}))["paths"]
    assert paths_before["modified"] == ["notes.txt", "app.py", "src/new.py"]
    session_id = (await command(client, "seri.session.get", {}))["session"]["id"]

    result = await command(client, "seri.rewind", {})
    assert result["rewound"] == 1
    assert result["prompt"] == "second prompt"
    assert result["restoredFiles"] == ["app.py", "notes.txt", "src/new.py"]
    assert result["conflicts"] == []
    assert "recapKept" not in result  # no compaction since that prompt
    assert result["session"]["id"] == session_id
    assert result["session"]["messageCount"] == 5

    # The files are as the first prompt left them; the file the second created is gone.
    assert (workspace / "app.py").read_text() == "value = 2\n"
    assert (workspace / "notes.txt").read_text() == "first notes\n"
    assert not (workspace / "src" / "new.py").exists()
    # The conversation continues from before the second prompt.
    history = await messages(client)
    assert user_texts(history) == ["first prompt\nwith a second line"]
    assert len(history) == 5
    view = await command(client, "seri.session.get", {})
    assert view["paths"] == {"read": [], "modified": ["notes.txt", "app.py"]}
    changed = await wait_until(lambda: client.seri["seri/sessionChanged"][-1:])
    assert changed[0]["reason"] == "rewound" and changed[0]["session"]["id"] == session_id

    # The next request carries the shortened history, in memory as in the store.
    task(provider, answer="third answer")
    await run(client, "third prompt")
    sent = provider.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        "first prompt\nwith a second line",
        "third prompt",
    ]
    assert user_texts(await messages(client)) == [
        "first prompt\nwith a second line",
        "third prompt",
    ]


async def test_rewind_n_prompts_restores_the_files_before_the_earliest(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    client = await agent()
    await two_prompts(client, provider, workspace)

    result = await prompt(client, "/rewind 2")
    assert result["command"] == "rewind" and result["status"] == "done"
    assert result["rewound"] == 2
    assert result["prompt"] == "first prompt\nwith a second line"
    assert result["restoredFiles"] == ["app.py", "notes.txt", "src/new.py"]
    assert (workspace / "app.py").read_text() == "value = 1\n"
    assert not (workspace / "notes.txt").exists()
    assert not (workspace / "src" / "new.py").exists()
    assert await messages(client) == []
    session = (await command(client, "seri.session.get", {}))["session"]
    assert session["title"] == "" and session["messageCount"] == 0
    assert (await command(client, "seri.checkpoints", {}))["checkpoints"] == []
    # Nothing is left to rewind.
    message = await refused(client, "seri.rewind", {})
    assert message.startswith("Cannot rewind 1 prompt: session ")
    # The next prompt names the session again.
    task(provider, answer="fresh")
    await run(client, "a fresh start")
    assert (await command(client, "seri.session.get", {}))["session"]["title"] == "a fresh start"


async def test_rewind_the_conversation_only_keeps_the_files(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    client = await agent()
    await two_prompts(client, provider, workspace)

    result = await prompt(client, "/rewind conversation")
    assert result["rewound"] == 1 and result["prompt"] == "second prompt"
    assert result["restoredFiles"] == [] and result["conflicts"] == []
    assert user_texts(await messages(client)) == ["first prompt\nwith a second line"]
    assert (workspace / "app.py").read_text() == "value = 3\n"
    assert (workspace / "src" / "new.py").exists()

    # The files the removed prompt wrote are still seri's own last write: rewinding the
    # first prompt now restores app.py (no conflict) and deletes what both created.
    result = await command(client, "seri.rewind", {"steps": 1})
    assert result["conflicts"] == []
    assert result["restoredFiles"] == ["app.py", "notes.txt"]
    assert (workspace / "app.py").read_text() == "value = 1\n"
    assert not (workspace / "notes.txt").exists()
    # src/new.py was the removed prompt's alone; the conversation rewind left it be.
    assert (workspace / "src" / "new.py").read_text() == "print('new')\n"


async def test_rewind_the_files_only_keeps_the_conversation(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    client = await agent()
    await two_prompts(client, provider, workspace)
    before = await messages(client)

    result = await command(client, "seri.rewind", {"steps": 2, "restore": "files"})
    assert result["rewound"] == 2
    assert "prompt" not in result
    assert result["restoredFiles"] == ["app.py", "notes.txt", "src/new.py"]
    assert result["conflicts"] == []
    assert (workspace / "app.py").read_text() == "value = 1\n"
    assert not (workspace / "notes.txt").exists()
    assert not (workspace / "src" / "new.py").exists()
    assert await messages(client) == before
    changed = await wait_until(lambda: client.seri["seri/sessionChanged"][-1:])
    assert changed[0]["reason"] == "rewound"

    # The checkpoints stay with their prompts, and the restored contents count as seri's
    # last write: going to before the second prompt now is no conflict.
    listed = await command(client, "seri.checkpoints", {})
    assert [c["steps"] for c in listed["checkpoints"]] == [1, 2]
    assert all(c["conflicts"] == [] for c in listed["checkpoints"])
    result = await prompt(client, "/rewind 1 files")
    assert result["conflicts"] == []
    assert result["restoredFiles"] == ["app.py", "notes.txt", "src/new.py"]
    assert (workspace / "app.py").read_text() == "value = 2\n"
    assert (workspace / "notes.txt").read_text() == "first notes\n"
    assert not (workspace / "src" / "new.py").exists()
    # And the conversation can still be rewound afterwards.
    result = await prompt(client, "/rewind 1 conversation")
    assert result["prompt"] == "second prompt"
    assert user_texts(await messages(client)) == ["first prompt\nwith a second line"]


async def test_an_open_buffer_is_restored_through_the_editor(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "open.py"
    path.write_text("on disk\n")
    client = await agent()
    uri = open_document(client, path, "unsaved = 1\n")
    task(provider, edit("e", "open.py", "unsaved = 1", "unsaved = 2"))
    await run(client, "change the open file")
    assert client.documents[uri][1] == "unsaved = 2\n"
    edits_before = len(client.applied_edits)

    result = await command(client, "seri.rewind", {})
    assert result["restoredFiles"] == ["open.py"] and result["conflicts"] == []
    # Through workspace/applyEdit: the buffer holds its unsaved text again, the disk is
    # as it was all along.
    assert len(client.applied_edits) == edits_before + 1
    assert client.documents[uri][1] == "unsaved = 1\n"
    assert path.read_text() == "on disk\n"


async def test_an_open_file_the_task_created_is_deleted_through_the_editor(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "made.py"
    client = await agent()
    task(provider, write("w", "made.py", "made = 1\n"))
    await run(client, "make a file")
    uri = open_document(client, path, "made = 1\n")
    edits_before = len(client.applied_edits)

    result = await command(client, "seri.rewind", {"restore": "files"})
    assert result["restoredFiles"] == ["made.py"] and result["conflicts"] == []
    # One DeleteFile through workspace/applyEdit: the editor closed the buffer and
    # removed the file.
    [applied] = client.applied_edits[edits_before:]
    [delete] = applied.edit.document_changes
    assert isinstance(delete, types.DeleteFile) and delete.uri == uri
    assert uri not in client.documents and not path.exists()


async def test_an_open_created_file_an_editor_cannot_delete_goes_on_disk_with_a_warning(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "made.py"
    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.workspace and capabilities.workspace.workspace_edit
    capabilities.workspace.workspace_edit.resource_operations = [types.ResourceOperationKind.Create]
    client = await agent(capabilities=capabilities)
    task(provider, write("w", "made.py", "made = 1\n"))
    await run(client, "make a file")
    open_document(client, path, "made = 1\n")
    edits_before = len(client.applied_edits)

    result = await command(client, "seri.rewind", {"restore": "files"})
    assert result["restoredFiles"] == ["made.py"]
    assert len(client.applied_edits) == edits_before and not path.exists()
    shown = await wait_until(lambda: shown_messages(client, containing="still has it open"))
    assert "made.py" in shown[0] and "close that buffer without saving" in shown[0]


async def test_a_file_changed_since_is_a_conflict_left_alone_until_forced(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "mine.txt").write_text("original\n")
    (workspace / "other.txt").write_text("other\n")
    client = await agent()
    task(
        provider,
        edit("e1", "mine.txt", "original", "by seri"),
        edit("e2", "other.txt", "other", "also by seri"),
    )
    await run(client, "change both")
    (workspace / "mine.txt").write_text("by the user\n")

    # The picker knows beforehand.
    listed = await command(client, "seri.checkpoints", {})
    assert listed["checkpoints"][0]["files"] == ["mine.txt", "other.txt"]
    assert listed["checkpoints"][0]["conflicts"] == ["mine.txt"]

    result = await command(client, "seri.rewind", {"restore": "files"})
    assert result["conflicts"] == ["mine.txt"]
    assert result["restoredFiles"] == ["other.txt"]
    assert (workspace / "mine.txt").read_text() == "by the user\n"
    assert (workspace / "other.txt").read_text() == "other\n"

    result = await command(client, "seri.rewind", {"restore": "files", "force": True})
    assert result["conflicts"] == []
    assert result["restoredFiles"] == ["mine.txt", "other.txt"]
    assert (workspace / "mine.txt").read_text() == "original\n"


async def test_a_conflict_is_left_alone_by_a_rewind_of_both(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await agent()
    task(provider, write("w1", "made.txt", "seri made this\n"), write("w2", "b.txt", "b\n"))
    await run(client, "make files")
    (workspace / "made.txt").write_text("the user changed it\n")

    result = await prompt(client, "/rewind")
    assert result["conflicts"] == ["made.txt"] and result["restoredFiles"] == ["b.txt"]
    assert (workspace / "made.txt").read_text() == "the user changed it\n"
    assert not (workspace / "b.txt").exists()
    assert await messages(client) == []
    # Its checkpoint went with the prompt: the warning says force was the only way back.
    [warning] = await wait_until(
        lambda: [m.message for m in client.log_messages if "Left alone" in m.message]
    )
    assert "made.txt" in warning and "no longer kept after this rewind" in warning
    assert "force has to be used in the same rewind" in warning


async def test_force_overwrites_a_file_changed_since(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await agent()
    task(provider, write("w1", "made.txt", "seri made this\n"))
    await run(client, "make a file")
    (workspace / "made.txt").write_text("the user changed it\n")
    result = await prompt(client, "/rewind force")
    assert result["conflicts"] == [] and result["restoredFiles"] == ["made.txt"]
    assert not (workspace / "made.txt").exists()


async def test_subagent_edits_are_part_of_the_prompts_checkpoint(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "lib.py").write_text("x = 1\n")
    client = await agent()
    provider.script(
        Calls([("t", "task", {"prompt": "edit lib.py and add a test"})]),  # the parent
        Calls([edit("e", "lib.py", "x = 1", "x = 2"), write("w", "test_lib.py", "ok\n")]),
        Text("child done"),  # the subagent's answer
        Text("parent done"),
    )
    await run(client, "delegate it")
    assert (workspace / "lib.py").read_text() == "x = 2\n"
    listed = await command(client, "seri.checkpoints", {})
    assert listed["checkpoints"][0]["files"] == ["lib.py", "test_lib.py"]

    result = await command(client, "seri.rewind", {})
    assert result["restoredFiles"] == ["lib.py", "test_lib.py"]
    assert (workspace / "lib.py").read_text() == "x = 1\n"
    assert not (workspace / "test_lib.py").exists()


async def test_rewind_works_after_a_restart(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    client = await agent()
    await two_prompts(client, provider, workspace)
    session_id = (await command(client, "seri.session.get", {}))["session"]["id"]
    await stop_server(client)

    restarted = await agent()  # resume on open continues the session
    listed = await command(restarted, "seri.checkpoints", {})
    assert (await command(restarted, "seri.session.get", {}))["session"]["id"] == session_id
    assert [(c["steps"], c["prompt"]) for c in listed["checkpoints"]] == [
        (1, "second prompt"),
        (2, "first prompt"),
    ]
    result = await command(restarted, "seri.rewind", {"steps": 2})
    assert result["session"]["id"] == session_id
    assert result["restoredFiles"] == ["app.py", "notes.txt", "src/new.py"]
    assert (workspace / "app.py").read_text() == "value = 1\n"
    assert await messages(restarted) == []


async def test_a_cancelled_task_keeps_its_checkpoint_for_what_it_changed(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await agent()
    hang = Hang()
    provider.script(Calls([write("w", "half.txt", "half done\n")]), hang)
    running = asyncio.ensure_future(prompt(client, "start something"))
    await wait_until(lambda: (workspace / "half.txt").exists())
    await wait_until(lambda: len(provider.requests) >= 2)
    # A rewind is refused while the task runs, and changes nothing.
    message = await refused(client, "seri.rewind", {})
    assert "A task is running" in message
    assert (workspace / "half.txt").exists()
    await command(client, "seri.cancel", {})
    assert (await asyncio.wait_for(running, timeout=5))["status"] == "cancelled"
    hang.release.set()

    result = await command(client, "seri.rewind", {})
    assert result["restoredFiles"] == ["half.txt"] and result["prompt"] == "start something"
    assert not (workspace / "half.txt").exists()
    assert await messages(client) == []


async def test_slash_commands_take_no_checkpoint(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await agent()
    task(provider, write("w", "a.txt", "a\n"))
    await run(client, "write a")
    await prompt(client, "/max-turns 7")
    listed = await command(client, "seri.checkpoints", {})
    assert [c["prompt"] for c in listed["checkpoints"]] == ["write a"]
    result = await command(client, "seri.rewind", {})
    assert result["prompt"] == "write a"


async def test_bad_rewind_arguments_answer_invalid_params_naming_the_field(agent) -> None:
    client = await agent()
    cases = [
        ({"steps": 0}, "steps"),
        ({"steps": "2"}, "steps"),
        ({"steps": 1.5}, "steps"),
        ({"steps": 10_001}, "steps"),
        ({"restore": "both" * 100}, "restore"),
        ({"restore": "everything"}, "restore"),
        ({"restore": 3}, "restore"),
        ({"force": "yes"}, "force"),
    ]
    for args, field in cases:
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await command(client, "seri.rewind", args)
        assert caught.value.data == {"field": field}, args
    for text in (
        "/rewind 0",
        "/rewind two",
        "/rewind 1 2",
        "/rewind files both",
        "/rewind -1",
        "/rewind 99999999999999999999",
        "/rewind ²",
    ):
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await prompt(client, text)
        assert caught.value.data == {"field": "text"}, text
        assert "/rewind [n] [both|conversation|files]" in caught.value.message
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await command(client, "seri.checkpoints", {"sessionId": 5})
    assert caught.value.data == {"field": "sessionId"}


async def test_the_billed_count_and_delivered_rules_go_back_with_the_conversation(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    project_rules(workspace, python='---\nglobs: "*.py"\n---\nUse type hints.\n')
    filler = "x" * 400
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    for index in range(3):
        provider.script(Text(f"reply {index} {filler}", usage=usage(100)))
        await run(client, f"prompt {index}")
    # This prompt is billed past half the window and delivers the glob rule.
    provider.script(
        Calls([write("w", "a.py", "x: int = 1\n")], usage=usage(100)),
        Text("wrote a.py", usage=usage(3000)),
    )
    await run(client, "write a.py")
    assert any("Use type hints." in m["content"] for m in await messages(client))
    view = await command(client, "seri.session.get", {})
    assert view["usage"]["estimateTokens"] == 3000

    await command(client, "seri.rewind", {})
    view = await command(client, "seri.session.get", {})
    assert view["usage"]["estimateTokens"] < 2000
    # In the store as in memory: after a restart too, the next prompt does not compact,
    # and the rule arrives again when a.py is touched once more.
    await stop_server(client)
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    view = await command(client, "seri.session.get", {})
    assert view["usage"]["estimateTokens"] < 2000
    provider.script(Calls([write("w", "a.py", "y: int = 2\n")]), Text("again"))
    await run(client, "write a.py again")
    assert provider.chat_requests(with_tools=False) == []
    assert sum("Use type hints." in m["content"] for m in await messages(client)) == 1


async def test_a_file_the_editor_will_not_put_back_keeps_the_conversation_and_its_checkpoint(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "open.py").write_text("a = 1\n")
    (workspace / "app.py").write_text("value = 1\n")
    client = await agent()
    uri = open_document(client, workspace / "open.py", "a = 1\n")
    task(provider, edit("e1", "open.py", "a = 1", "a = 2"), edit("e2", "app.py", "1", "2"))
    await run(client, "change both")
    client.refuse_edits = True

    result = await command(client, "seri.rewind", {})
    # What could be put back was; the file the editor refused is named, and the
    # conversation (with the checkpoint holding that file's earlier content) stays.
    assert result["conversationKept"] is True and "prompt" not in result
    assert result["restoredFiles"] == ["app.py"]
    assert [f["path"] for f in result["failed"]] == ["open.py"]
    assert "the editor refused" in result["failed"][0]["reason"]
    assert (workspace / "app.py").read_text() == "value = 1\n"
    assert user_texts(await messages(client)) == ["change both"]
    assert shown_messages(client, types.MessageType.Warning, "Only files were rewound")

    # The same rewind, tried again once the editor lets it, finishes the job.
    client.refuse_edits = False
    again = await command(client, "seri.rewind", {})
    assert again["prompt"] == "change both" and "conversationKept" not in again
    assert again["restoredFiles"] == ["app.py", "open.py"] and again["conflicts"] == []
    assert client.documents[uri][1] == "a = 1\n"
    assert user_texts(await messages(client)) == []


async def test_a_rewind_that_cannot_reach_a_file_outside_the_workspace_changes_nothing(
    agent, provider: ScriptedProvider, workspace: Path, tmp_path: Path
) -> None:
    client = await agent()
    task(provider, write("w", "notes.txt", "the task's notes\n"))
    await run(client, "write notes")
    # The workspace folder is now a link elsewhere: notes.txt's real path lies outside.
    moved = tmp_path / "moved"
    workspace.rename(moved)
    workspace.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()

    message = await refused(client, "seri.rewind", {})
    assert message.startswith("Cannot rewind 1 prompt: notes.txt is outside the workspace")
    assert "nothing was changed" in message and "/rewind 1 conversation" in message
    assert user_texts(await messages(client)) == ["write notes"]
    assert (moved / "notes.txt").read_text() == "the task's notes\n"
    # The conversation alone may still go back (its checkpoint goes with it, by choice).
    alone = await command(client, "seri.rewind", {"restore": "conversation"})
    assert alone["prompt"] == "write notes"


async def test_an_approved_memory_is_part_of_the_prompts_checkpoint(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    memory = workspace / ".seri" / "memory.md"
    memory.parent.mkdir()
    memory.write_text("- Use tabs.")  # no final newline
    task(provider, ("m", "remember", {"text": "The project uses pnpm."}))
    client = await agent()
    client.answers.append("Remember")
    await run(client, "remember pnpm")
    assert memory.read_text() == "- Use tabs.\n- The project uses pnpm.\n"
    [checkpoint] = (await command(client, "seri.checkpoints", {}))["checkpoints"]
    assert checkpoint["files"] == [".seri/memory.md"]

    result = await command(client, "seri.rewind", {})
    assert result["restoredFiles"] == [".seri/memory.md"]
    assert memory.read_text() == "- Use tabs."

    # A memory file the task created is deleted again.
    memory.unlink()
    task(provider, ("m2", "remember", {"text": "Deploy on Mondays."}))
    client.answers.append("Remember")
    await run(client, "remember deploys")
    assert memory.read_text() == "- Deploy on Mondays.\n"
    await command(client, "seri.rewind", {})
    assert not memory.exists()


async def test_an_editor_that_never_answers_does_not_hang_the_rewind(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "open.py").write_text("a = 1\n")
    # The editor's time (10 s) shortened to 1 s: the same bound, proven sooner.
    client = await agent(env={WAITS_ENV: "EDITOR_ANSWER_SECONDS=1"})
    uri = open_document(client, workspace / "open.py", "a = 1\n")
    task(provider, edit("e", "open.py", "a = 1", "a = 2"))
    await run(client, "change it")
    client.hold_edits = True

    rewinding = asyncio.ensure_future(command(client, "seri.rewind", {}))
    # Meanwhile the server answers; the rewind ends once the editor's time is up.
    assert (await command(client, "seri.session.get", {}))["session"] is not None
    result = await asyncio.wait_for(rewinding, timeout=30)
    assert result["conversationKept"] is True
    assert result["failed"] == [
        {"path": "open.py", "reason": "the editor did not answer within 1 s"}
    ]
    assert user_texts(await messages(client)) == ["change it"]
    assert client.documents[uri][1] == "a = 2\n"


async def test_a_store_that_will_not_record_a_done_rewind_or_task_does_not_undo_its_answer(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    client = await agent()
    add_trigger(profile_root, "trajectory_events", "task_ended")
    add_trigger(profile_root, "trajectory_events", "rewind")
    task(provider, write("w", "notes.txt", "notes\n"))
    await run(client, "write notes")  # done, though its last record failed
    result = await command(client, "seri.rewind", {})
    assert result["prompt"] == "write notes" and result["restoredFiles"] == ["notes.txt"]
    assert not (workspace / "notes.txt").exists()
