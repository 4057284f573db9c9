"""What fills the context, end to end: `seri.session.context` splits the compaction
trigger's local count into parts that add up to it, each kind of part appearing when the
session holds it; `/context` prints it with a bar per part; and the compaction notice
says in numbers what a compaction did."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.agent_helpers import FILLER, SUMMARY, messages, prompt
from tests.harness import command, shown_messages, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text, usage

SMALL = {"contextWindow": 4000, "keepTokens": 150}


async def context(client: Any, session_id: str | None = None) -> dict[str, Any]:
    args = {"sessionId": session_id} if session_id else {}
    return await command(client, "seri.session.context", args)


def adds_up(result: dict[str, Any]) -> bool:
    return sum(part["tokens"] for part in result["parts"]) == result["localTokens"]


async def test_the_parts_add_up_to_the_count_the_compaction_trigger_uses(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(provider_extra=SMALL)
    before = await context(client)
    assert [part["kind"] for part in before["parts"]] == ["system"] and adds_up(before)

    provider.script(Text(f"one {FILLER}"), Text("two é 😀", usage=usage(1500)))
    await prompt(client, "first")
    await prompt(client, "second")
    first = (await command(client, "seri.session.get", {}))["session"]["id"]

    result = await context(client)
    view = await command(client, "seri.session.get", {})
    assert adds_up(result)
    assert result["lastBilledTokens"] == 1500
    assert result["estimateTokens"] == max(1500, result["localTokens"])
    assert result["estimateTokens"] == view["usage"]["estimateTokens"]
    assert (result["contextWindow"], result["compactAt"], result["keepTokens"]) == (4000, 2000, 150)
    assert [part["kind"] for part in result["parts"]] == ["system", "user", "assistant"]

    # A session that is not open counts the same way.
    await command(client, "seri.session.new", {})
    stored = await context(client, first)
    assert stored["sessionId"] == first and stored["parts"] == result["parts"]
    assert stored["localTokens"] == result["localTokens"] and adds_up(stored)


async def test_each_kind_of_part_appears_when_the_session_holds_it(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    rules = workspace / ".seri" / "rules"
    rules.mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("Build with make.\n")
    (rules / "style.md").write_text("Keep functions short.\n")
    (rules / "python.md").write_text('---\nglobs: "*.py"\n---\nUse type hints.\n')
    (workspace / ".seri" / "memory.md").write_text("The port is 8080.\n")
    profile_root.mkdir()
    (profile_root / "memory.md").write_text("I like tea.\n")
    (workspace / "app.py").write_text("x = 1\n")
    lint = {
        "name": "lint",
        "command": [sys.executable, "-c", "import sys; sys.exit(open('a.txt').read() != 'ok')"],
    }
    client = await agent(
        provider_extra=SMALL,
        init_options={"checks": [lint], "permissions": {"write": "allow", "run": "allow"}},
    )
    for index in range(3):
        provider.script(Text(f"reply {index} {FILLER}"))
        await prompt(client, f"prompt {index}")
    provider.script(Text(SUMMARY))
    assert (await prompt(client, "/compact"))["compacted"] is True
    provider.script(
        Calls(
            [("r", "read_file", {"path": "app.py"}), ("g", "grep", {"pattern": "x"})],
            text="Looking first.",
        ),
        Calls([("w", "write_file", {"path": "a.txt", "content": "no"})]),
        Text("done?"),
        Calls([("w2", "write_file", {"path": "a.txt", "content": "ok"})]),
        Text("fixed"),
    )
    assert (await prompt(client, "work"))["status"] == "done"

    result = await context(client)

    assert adds_up(result)
    parts = [(part["kind"], part["name"]) for part in result["parts"]]
    assert parts == [
        ("system", "<builtin>/system.md"),
        ("agents", str(workspace / "AGENTS.md")),
        ("rule", str(rules / "style.md")),
        ("memory", str(profile_root / "memory.md")),
        ("memory", str(workspace / ".seri" / "memory.md")),
        ("recap", "recap"),
        ("globRules", "glob-rule messages"),
        ("checks", "check results"),
        ("user", "user text"),
        ("assistant", "assistant text"),
        ("toolCalls", "tool calls"),
        ("toolResult", "grep"),
        ("toolResult", "read_file"),
        ("toolResult", "write_file"),
    ]
    assert all(part["tokens"] > 0 for part in result["parts"])


async def test_context_prints_a_bar_per_part(agent, provider: ScriptedProvider) -> None:
    client = await agent(provider_extra=SMALL)
    provider.script(Text(f"answer {FILLER}"))
    await prompt(client, "hello")

    result = await prompt(client, "/context")

    assert result["command"] == "context" and adds_up(result)
    lines = result["text"].splitlines()
    assert lines[0] == (
        f"Context: {result['estimateTokens']:,} of 4,000 tokens; compaction starts at 2,000."
    )
    assert lines[1].startswith("[") and lines[1].count("|") == 1
    assert len(lines) == 2 + len(result["parts"])
    assert lines[-1].endswith("  assistant text") and "█" in lines[-1]
    assert shown_messages(client, types.MessageType.Info, "Context: ") == [result["text"]]


async def test_the_compaction_notice_says_what_happened_in_numbers(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("A\n")
    client = await agent(provider_extra=SMALL)
    provider.script(
        Calls([("r", "read_file", {"path": "a.txt"})]),
        Calls([("e", "edit", {"path": "a.txt", "old_text": "A", "new_text": "B"})]),
        Text(f"edited {FILLER}"),
    )
    await prompt(client, "edit a.txt")
    for index in range(2):
        provider.script(Text(f"reply {index} {FILLER}"))
        await prompt(client, f"prompt {index}")
    before = await command(client, "seri.session.get", {})
    provider.script(Text(SUMMARY))

    result = await prompt(client, "/compact")

    [notice] = await wait_until(lambda: client.seri["seri/compacted"])
    after = await command(client, "seri.session.get", {})
    recap = after["messages"][0]
    assert notice["trigger"] == "manual"
    assert notice["messagesBefore"] == len(before["messages"])
    assert notice["messagesAfter"] == len(after["messages"])
    assert notice["evicted"] == notice["messagesBefore"] - notice["messagesAfter"] + 1
    assert notice["tokensBefore"] == before["usage"]["estimateTokens"]
    assert notice["tokensAfter"] == after["usage"]["estimateTokens"] < notice["tokensBefore"]
    assert (notice["read"], notice["modified"]) == ([], ["a.txt"])
    assert notice["recapId"] == recap["id"] and recap["kind"] == "recap"
    assert {key: result[key] for key in notice} == notice
    assert len(await messages(client)) == notice["messagesAfter"]
