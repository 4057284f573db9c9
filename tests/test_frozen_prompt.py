"""What is frozen at session open: system prompt, AGENTS.md, rules, memory."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.agent_helpers import (
    events,
    messages,
    project_rules,
    prompt,
    system_prompt,
    tool_results,
)
from tests.harness import command, open_document, stop_server
from tests.scripted_provider import Calls, ScriptedProvider, Text


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_prompt_files_are_read_at_open_not_mid_session_but_again_after_reopen(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    agents = workspace / "AGENTS.md"
    agents.write_text("Use tabs. (version one)\n")
    rules = workspace / ".seri" / "rules"
    rules.mkdir(parents=True)
    (rules / "style.md").write_text("Always write docstrings. (rule one)\n")
    provider.script(Text("a"), Text("b"), Text("c"))

    client = await agent()
    session = (await command(client, "seri.session.new", {}))["session"]
    await prompt(client, "first")
    agents.write_text("Use spaces. (version two)\n")
    (rules / "style.md").write_text("Never write docstrings. (rule two)\n")
    await prompt(client, "second")
    first, second = provider.requests[0], provider.requests[1]
    assert "version one" in system_prompt(first) and "rule one" in system_prompt(first)
    assert system_prompt(second) == system_prompt(first)  # byte-for-byte the same prefix

    await stop_server(client)
    again = await agent()  # resume on open re-opens the session, so it reads the files again
    assert (await command(again, "seri.session.get", {}))["session"]["id"] == session["id"]
    await prompt(again, "third")
    third = system_prompt(provider.requests[2])
    assert "version two" in third and "rule two" in third and "version one" not in third

    opened = events(profile_root, "opened", session["id"])
    hashes = opened[-1]["promptFiles"]
    assert hashes[str(agents)] == sha(agents)
    assert hashes[str(rules / "style.md")] == sha(rules / "style.md")
    assert "<builtin>/system.md" in hashes
    assert opened[0]["promptFiles"][str(agents)] != hashes[str(agents)]


async def test_a_glob_rule_arrives_once_when_a_tool_first_touches_a_match(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    project_rules(workspace, python='---\nglobs: "*.py, tests/**"\n---\nUse type hints.\n')
    (workspace / "a.py").write_text("a = 1\n")
    (workspace / "b.py").write_text("b = 2\n")
    (workspace / "notes.txt").write_text("n\n")
    provider.script(
        Calls([("n", "read_file", {"path": "notes.txt"})]),
        Calls([("a", "read_file", {"path": "a.py"})]),
        Calls([("b", "read_file", {"path": "b.py"})]),
        Text("done"),
    )
    client = await agent()
    await prompt(client, "read things")
    history = await messages(client)
    rule_messages = [m for m in history if m.get("kind") == "rule"]
    assert len(rule_messages) == 1
    assert "Use type hints." in rule_messages[0]["content"]
    assert "a.py" in rule_messages[0]["content"]
    # It came right after the result that fired it, and the model saw it.
    position = history.index(rule_messages[0])
    assert history[position - 1]["tool_call_id"] == "a"
    third_request = provider.requests[2]["messages"]
    assert third_request[-1] == {"role": "user", "content": rule_messages[0]["content"]}
    # Not part of the frozen system prompt.
    assert "Use type hints." not in system_prompt(provider.requests[0])


async def test_brace_and_class_globs_fire_their_rules_and_a_broken_header_is_named(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    rules = project_rules(
        workspace,
        web='---\nglobs: "**/*.{ts,tsx}"\n---\nUse strict types.\n',
        c="---\nglobs:\n  - 'src/*.[ch]'\n---\nNo malloc.\n",
        broken="---\nglobs: *.md\n---\nNever sent.\n",
    )
    for name in ("README.md", "web/app.tsx", "src/main.c"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("x\n")
    provider.script(
        Calls([("r", "read_file", {"path": "README.md"})]),
        Calls([("w", "read_file", {"path": "web/app.tsx"})]),
        Calls([("c", "read_file", {"path": "src/main.c"})]),
        Text("done"),
    )
    client = await agent()
    await prompt(client, "read things")
    fired = [m["content"] for m in await messages(client) if m.get("kind") == "rule"]
    assert [text.split(" applies to ")[1].split(" ")[0] for text in fired] == [
        "web/app.tsx",
        "src/main.c",
    ]
    assert "Use strict types." in fired[0] and "No malloc." in fired[1]
    assert not any("Never sent." in str(request) for request in provider.requests)
    shown = [m.message for m in client.messages if str(rules / "broken.md") in m.message]
    assert shown and "front matter is not valid YAML" in shown[0]


async def test_an_approved_memory_is_written_and_reaches_the_prompt_at_the_next_open(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        Calls([("m", "remember", {"text": "The project uses pnpm, not npm."})]),
        Text("noted"),
        Text("next"),
        Text("after reopen"),
    )
    client = await agent()
    client.answers.append("Remember")
    await prompt(client, "remember that we use pnpm")
    assert "The project uses pnpm, not npm." in client.message_requests[0].message
    memory = workspace / ".seri" / "memory.md"
    assert memory.read_text() == "- The project uses pnpm, not npm.\n"
    result = tool_results(await messages(client))["m"]
    assert "next session open" in result["content"]

    await prompt(client, "and now?")
    assert "pnpm" not in system_prompt(provider.requests[2])  # frozen: not now

    await stop_server(client)
    again = await agent()
    await prompt(again, "after restart")
    assert "The project uses pnpm, not npm." in system_prompt(provider.requests[3])


async def test_an_approved_memory_goes_into_the_open_buffer_of_the_memory_file(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    memory = workspace / ".seri" / "memory.md"
    memory.parent.mkdir()
    memory.write_text("- on disk\n")
    provider.script(Calls([("m", "remember", {"text": "Use tabs."})]), Text("noted"))
    client = await agent()
    uri = open_document(client, memory, "- on disk\n- typed, not saved yet")
    client.answers.append("Remember")
    await prompt(client, "remember tabs")
    # As the write tools change an open file: the buffer (unsaved text kept), not the disk.
    assert client.documents[uri][1] == "- on disk\n- typed, not saved yet\n- Use tabs.\n"
    assert memory.read_text() == "- on disk\n"
    assert "Saved to" in tool_results(await messages(client))["m"]["content"]


async def test_a_declined_memory_is_not_written(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    provider.script(Calls([("m", "remember", {"text": "Deploy on Fridays."})]), Text("ok"))
    client = await agent()
    client.answers.append("Don't remember")
    await prompt(client, "remember this")
    assert not (workspace / ".seri" / "memory.md").exists()
    assert "did not approve" in tool_results(await messages(client))["m"]["content"]
    assert events(profile_root, "memory")[0]["approved"] is False


async def test_user_rules_and_memory_from_the_profile_are_always_on(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    (profile_root / "rules").mkdir(parents=True)
    (profile_root / "rules" / "me.md").write_text("Answer in British English.\n")
    (profile_root / "memory.md").write_text("- My name is Ada.\n")
    provider.script(Text("hello Ada"))
    client = await agent()
    await prompt(client, "hi")
    system = system_prompt(provider.requests[0])
    assert "Answer in British English." in system and "My name is Ada." in system
