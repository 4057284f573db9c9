"""What a chat panel needs from the server: questions with what they are about
(`seri/approve`), what a running task waits for (`seri/status`), why a task failed
(`seri/turnEnded`), where compaction starts (`usage.compactAt`) and context attached to
a prompt (`seri.prompt {context}`). Each test drives the real server process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from tests.agent_helpers import events, messages, prompt, tool_results
from tests.harness import HOLD, approval_capabilities, command, open_document, wait_until
from tests.scripted_provider import Calls, Error, ScriptedProvider, Text

ASK = {"permissions": {"write": "ask"}}


async def ask_in_chat(agent, **init):
    """A server whose editor shows questions in its chat (and asks before writes)."""
    options = {**ASK, **init}
    return await agent(init_options=options, capabilities=approval_capabilities())


async def test_a_write_is_asked_in_the_chat_with_the_change_to_review(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("a = 1\nb = 2\n")
    edit = {"path": "app.py", "old_text": "b = 2", "new_text": "b = 3"}
    provider.script(Calls([("e", "edit", edit)]), Text("done"))
    client = await ask_in_chat(agent)
    client.approvals.append({"choice": "Allow"})

    result = await prompt(client, "change b")

    assert result["status"] == "done"
    [question] = client.approve_requests
    assert question["sessionId"] == result["sessionId"]
    assert question["kind"] == "write"
    assert question["message"] == "seri wants to edit app.py."
    assert question["choices"] == ["Allow", "Allow for this session", "Deny"]
    assert question["tool"] == "edit" and question["path"] == "app.py"
    assert question["action"] == "edit" and question["line"] == 2
    assert question["oldText"] == "b = 2" and question["newText"] == "b = 3"
    assert question["current"] == "a = 1\nb = 2\n"
    assert question["proposed"] == "a = 1\nb = 3\n"
    assert client.message_requests == []  # no toast besides
    assert (workspace / "app.py").read_text() == "a = 1\nb = 3\n"


async def test_a_new_file_is_asked_with_nothing_before_it(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    write = {"path": "notes.md", "content": "# Notes\n"}
    provider.script(Calls([("w", "write_file", write)]), Text("done"))
    client = await ask_in_chat(agent)
    client.approvals.append({"choice": "Allow for this session"})

    await prompt(client, "write notes")

    [question] = client.approve_requests
    assert question["action"] == "create" and question["current"] is None
    assert question["proposed"] == "# Notes\n"
    assert "oldText" not in question
    assert (workspace / "notes.md").read_text() == "# Notes\n"


async def test_a_deny_with_a_note_tells_the_model_why(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    edit = {"path": "app.py", "old_text": "x = 1", "new_text": "x=1"}
    provider.script(Calls([("e", "edit", edit)]), Text("understood"))
    client = await ask_in_chat(agent)
    client.approvals.append({"choice": "Deny", "note": "keep the spaces\naround =  please"})

    assert (await prompt(client, "reformat"))["status"] == "done"

    result = tool_results(await messages(client))["e"]
    assert result["isError"] is True
    assert result["content"] == (
        "Denied: the user denied this write: keep the spaces around = please."
    )
    assert (workspace / "app.py").read_text() == "x = 1\n"
    [denial] = events(profile_root, "denial")
    assert denial["reason"] == "the user denied this write: keep the spaces around = please"
    # The model reads the note with the refusal.
    sent = provider.requests[-1]["messages"][-1]
    assert "keep the spaces around = please" in sent["content"]


async def test_an_answer_that_is_not_a_choice_counts_as_no_answer(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    write = {"path": "a.txt", "content": "a\n"}
    provider.script(Calls([("w", "write_file", write)]), Text("ok"))
    client = await ask_in_chat(agent)
    client.approvals.append({"choice": "Sure"})

    await prompt(client, "write")

    result = tool_results(await messages(client))["w"]
    assert result["content"] == "Denied: the user did not answer the permission request."
    assert not (workspace / "a.txt").exists()


async def test_a_cancelled_task_takes_its_question_back(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    write = {"path": "a.txt", "content": "a\n"}
    provider.script(Calls([("w", "write_file", write)]))
    client = await ask_in_chat(agent)
    client.approvals.append(HOLD)
    task = asyncio.ensure_future(prompt(client, "write"))
    await wait_until(lambda: client.approve_requests)

    assert (await command(client, "seri.cancel", {}))["cancelled"] is True

    assert (await task)["status"] == "cancelled"
    await wait_until(lambda: client.withdrawn)
    assert client.withdrawn[0]["path"] == "a.txt"
    # The params name the request, for a client whose handlers do not see its id.
    assert client.withdrawn[0]["requestId"] == client.approve_ids[0]
    assert not (workspace / "a.txt").exists()


async def test_an_editor_without_the_capability_is_asked_with_show_message_request(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    write = {"path": "a.txt", "content": "a\n"}
    provider.script(Calls([("w", "write_file", write)]), Text("ok"))
    client = await agent(init_options=ASK)
    client.answers.append("Allow")

    await prompt(client, "write")

    assert [r.message for r in client.message_requests] == ["seri wants to create a.txt."]
    assert client.approve_requests == []
    assert (workspace / "a.txt").read_text() == "a\n"


async def test_memory_and_checks_are_asked_with_what_they_are_about(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / ".git").mkdir()
    provider.script(
        Calls([("m", "remember", {"text": "Tests run with  pytest -q"})]),
        Calls([("w", "write_file", {"path": "a.txt", "content": "a\n"})]),
        Text("done"),
    )
    client = await ask_in_chat(
        agent,
        permissions={"write": "allow", "run": "ask"},
        checks=[{"name": "lint", "command": "true"}],
    )
    client.approvals.extend([{"choice": "Remember"}, {"choice": "Allow for this session"}])

    assert (await prompt(client, "note it"))["status"] == "done"

    memory, checks = client.approve_requests
    assert memory["kind"] == "memory" and memory["choices"] == ["Remember", "Don't remember"]
    assert memory["text"] == "Tests run with pytest -q"
    assert memory["path"].endswith(".seri/memory.md")
    assert checks["kind"] == "checks" and checks["choices"] == ["Allow for this session", "Deny"]
    assert checks["checks"] == [{"name": "lint", "command": "true"}]
    assert checks["cwd"] == str(workspace)
    assert "- Tests run with pytest -q" in (workspace / ".seri" / "memory.md").read_text()


async def test_the_status_says_what_the_task_waits_for(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    provider.script(
        Error(503, {"error": {"message": "busy"}}),
        Calls([("r", "read_file", {"path": "app.py"})]),
        Calls([("w", "write_file", {"path": "b.txt", "content": "b\n"})]),
        Text("done"),
    )
    client = await ask_in_chat(agent)
    client.approvals.append({"choice": "Allow"})

    result = await prompt(client, "go")

    statuses = [s for s in client.seri["seri/status"] if s["sessionId"] == result["sessionId"]]
    states = [s["state"] for s in statuses]
    assert states == ["model", "retrying", "tool", "model", "tool", "approval", "tool", "model"]
    retry = statuses[1]
    assert retry["attempt"] == 1 and retry["maxAttempts"] == 2
    assert "busy" in retry["detail"] and retry["delay"] >= 0
    assert statuses[2]["detail"] == "read_file app.py"
    assert statuses[5]["detail"] == "write b.txt"
    assert statuses[6]["detail"] == "write_file b.txt"


async def test_a_failed_task_says_why_when_it_ends(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(Error(401, {"error": {"message": "User not found."}}))
    client = await agent()

    result = await prompt(client, "hello")

    assert result["status"] == "failed"
    [ended] = client.seri["seri/turnEnded"]
    assert ended["status"] == "failed" and ended["error"] == result["error"]
    assert "User not found." in ended["error"]


async def test_the_usage_says_where_compaction_starts(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await agent(provider_extra={"contextWindow": 1001})

    usage = (await command(client, "seri.session.get", {}))["usage"]

    assert usage["contextWindow"] == 1001 and usage["compactAt"] == 501


async def test_attached_context_is_written_into_the_prompt(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "src").mkdir()
    provider.script(Text("seen"))
    client = await agent()
    context = [
        {"path": "src/app.py", "startLine": 2, "endLine": 3, "text": "b = 2\nc = 3\n"},
        {"path": str(workspace / "README.md")},
        {"path": "src/util.py", "startLine": 7},
        {"path": "/elsewhere/notes.txt", "text": "outside"},
    ]

    result = await command(client, "seri.prompt", {"text": "Explain this", "context": context})

    assert result["status"] == "done"
    stored = (await messages(client))[0]["content"]
    assert stored == (
        "Explain this\n\n"
        "Attached: @README.md, @src/util.py (lines 7)\n\n"
        '<context path="src/app.py" lines="2-3">\nb = 2\nc = 3\n</context>\n\n'
        '<context path="/elsewhere/notes.txt">\noutside\n</context>'
    )
    assert provider.requests[0]["messages"][-1]["content"] == stored
    # The session is titled by the prompt's own words, not by what was attached.
    assert (await command(client, "seri.session.get", {}))["session"]["title"] == "Explain this"


async def test_a_mention_already_in_the_text_is_not_repeated(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(Text("seen"))
    client = await agent()

    args = {"text": "Look at @app.py please", "context": [{"path": "app.py"}]}
    await command(client, "seri.prompt", args)

    assert (await messages(client))[0]["content"] == "Look at @app.py please"


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ("app.py", "context"),
        ([5], "context[0]"),
        ([{"startLine": 1}], "context[0].path"),
        ([{"path": "a.py", "startLine": 0}], "context[0].startLine"),
        ([{"path": "a.py", "startLine": 5, "endLine": 4}], "context[0].endLine"),
        ([{"path": "a.py"}, {"path": "b.py", "text": 7}], "context[1].text"),
        ([{"path": "a.py"}] * 51, "context"),
    ],
)
async def test_bad_context_is_refused_naming_the_entry(
    agent, provider: ScriptedProvider, workspace: Path, context: object, field: str
) -> None:
    client = await agent()

    with pytest.raises(JsonRpcInvalidParams) as refused:
        await command(client, "seri.prompt", {"text": "hi", "context": context})

    assert refused.value.data == {"field": field}
    assert provider.requests == []


async def test_an_open_buffer_edit_is_proposed_against_the_buffer(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "app.py"
    path.write_text("on disk\n")
    edit = {"path": "app.py", "old_text": "unsaved", "new_text": "saved"}
    provider.script(Calls([("e", "edit", edit)]), Text("done"))
    client = await ask_in_chat(agent)
    open_document(client, path, "unsaved text\n")
    client.approvals.append({"choice": "Allow"})

    await prompt(client, "edit the buffer")

    [question] = client.approve_requests
    assert question["current"] == "unsaved text\n"
    assert question["proposed"] == "saved text\n"
