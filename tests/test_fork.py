"""Forks end to end: `seri.session.fork` and `/fork` on the real server, the scripted
provider and a real seri.db: every kind of fork point, what a fork keeps (the recap, the
path lists and glob rules of the part it copies, the turn budget) and what it does not
(checkpoints, the frozen prompt), and the source left exactly as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from tests.agent_helpers import (
    FILLER,
    SUMMARY,
    messages,
    prompt,
    session_rows,
    system_prompt,
)
from tests.harness import command, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text, usage


async def fork(client: Any, **args: Any) -> dict[str, Any]:
    return await command(client, "seri.session.fork", args)


def contents(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in history]


def read(call_id: str, path: str) -> tuple[str, str, dict[str, str]]:
    return (call_id, "read_file", {"path": path})


async def two_prompts(client: Any, provider: ScriptedProvider) -> list[dict[str, Any]]:
    """Prompts `first` and `second`, answered `one` and `two`; the history."""
    provider.script(Text("one"), Text("two"))
    await prompt(client, "first")
    await prompt(client, "second")
    return await messages(client)


async def test_a_fork_at_the_last_message_is_opened_named_and_listed_under_its_parent(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    history = await two_prompts(client, provider)
    source = (await command(client, "seri.session.get", {}))["session"]

    result = await fork(client)

    session = result["session"]
    assert session["id"] != source["id"]
    assert session["parentId"] == source["id"]
    assert result["forkedAt"] == session["forkedAt"] == history[-1]["id"]
    assert session["title"] == "first (fork)"
    assert session["messageCount"] == 4
    changed = await wait_until(lambda: client.seri["seri/sessionChanged"])
    assert changed[-1]["reason"] == "forked" and changed[-1]["session"]["id"] == session["id"]
    assert contents(await messages(client)) == contents(history)
    listed = (await command(client, "seri.session.list", {}))["sessions"]
    assert [(s["id"], s["parentId"]) for s in listed] == [
        (session["id"], source["id"]),
        (source["id"], None),
    ]
    # The next prompt goes to the fork, with the copied conversation in front of it.
    provider.script(Text("in the fork"))
    assert (await prompt(client, "third"))["sessionId"] == session["id"]
    sent = provider.chat_requests()[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first", "one", "second", "two", "third"]
    assert len(await messages(client, source["id"])) == 4


async def test_a_fork_at_a_prompt_copies_up_to_and_including_it(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    history = await two_prompts(client, provider)

    result = await fork(client, messageId=history[2]["id"])

    assert result["forkedAt"] == history[2]["id"]
    copied = contents(await messages(client))
    assert copied == [("user", "first"), ("assistant", "one"), ("user", "second")]


@pytest.mark.parametrize("at", ["the calls", "the first result"])
async def test_a_fork_inside_a_tool_call_moves_forward_to_its_last_result(
    agent, provider: ScriptedProvider, workspace: Path, at: str
) -> None:
    (workspace / "a.txt").write_text("A\n")
    (workspace / "b.txt").write_text("B\n")
    client = await agent()
    provider.script(Calls([read("c1", "a.txt"), read("c2", "b.txt")]), Text("read both"))
    await prompt(client, "read them")
    history = await messages(client)
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
    asked = history[1] if at == "the calls" else history[2]

    result = await fork(client, messageId=asked["id"])

    assert result["forkedAt"] == history[3]["id"]
    copied = await messages(client)
    assert [m["role"] for m in copied] == ["user", "assistant", "tool", "tool"]
    assert [m.get("tool_call_id") for m in copied[2:]] == ["c1", "c2"]


async def test_a_fork_keeps_the_glob_rules_delivered_in_the_part_it_copies(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    rules = workspace / ".seri" / "rules"
    rules.mkdir(parents=True)
    (rules / "python.md").write_text('---\nglobs: "*.py"\n---\nUse type hints.\n')
    (workspace / "app.py").write_text("x = 1\n")
    client = await agent()
    provider.script(Calls([read("c1", "app.py")]), Text("read it"))
    await prompt(client, "read app.py")
    history = await messages(client)
    assert history[3]["kind"] == "rule"
    source = history[0]

    # At the result: the rule message comes with it, and the rule counts as delivered.
    after = await fork(client, messageId=history[2]["id"])
    assert after["forkedAt"] == history[3]["id"]
    provider.script(Calls([read("c2", "app.py")]), Text("read again"))
    await prompt(client, "read it again")
    assert sum("Use type hints." in m["content"] for m in await messages(client)) == 1

    # At the prompt, before the rule: touching the file delivers it in the fork.
    await fork(client, sessionId=after["session"]["parentId"], messageId=source["id"])
    provider.script(Calls([read("c3", "app.py")]), Text("read once more"))
    await prompt(client, "read app.py here")
    assert sum("Use type hints." in m["content"] for m in await messages(client)) == 1


async def test_a_fork_lists_the_paths_of_the_part_it_copies(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("A\n")
    client = await agent()
    provider.script(Calls([read("c1", "a.txt")]), Text("read"))
    await prompt(client, "read a.txt")
    provider.script(
        Calls([("c2", "edit", {"path": "a.txt", "old_text": "A", "new_text": "B"})]),
        Text("edited"),
    )
    await prompt(client, "edit a.txt")
    history = await messages(client)
    source = (await command(client, "seri.session.get", {}))["session"]["id"]

    await fork(client, messageId=history[3]["id"])  # the end of the first prompt's task
    assert (await command(client, "seri.session.get", {}))["paths"] == {
        "read": ["a.txt"],
        "modified": [],
    }
    await fork(client, sessionId=source)
    assert (await command(client, "seri.session.get", {}))["paths"] == {
        "read": [],
        "modified": ["a.txt"],
    }


async def test_a_fork_after_a_recap_keeps_the_recap(agent, provider: ScriptedProvider) -> None:
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    for index in range(3):
        billed = 2000 if index == 2 else 100
        provider.script(Text(f"reply {index} {FILLER}", usage=usage(billed)))
        await prompt(client, f"prompt {index}")
    provider.script(Text(SUMMARY), Text("after the recap"))
    await prompt(client, "prompt 3")
    history = await messages(client)
    assert history[0]["kind"] == "recap"

    result = await fork(client, messageId=history[-1]["id"])

    copied = await messages(client)
    assert copied[0]["kind"] == "recap" and copied[0]["recap"] == history[0]["recap"]
    assert contents(copied) == contents(history)
    assert result["session"]["messageCount"] == len(history)


async def test_a_fork_keeps_the_turn_budget_and_reads_the_prompt_files_afresh(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    client = await agent()
    await prompt(client, "/max-turns 7")
    provider.script(Text("ok"))
    await prompt(client, "hello")
    (workspace / "AGENTS.md").write_text("Use spaces.\n")

    result = await prompt(client, "/fork")

    assert result["command"] == "fork" and result["session"]["maxTurns"] == 7
    provider.script(Text("ok again"))
    await prompt(client, "hello again")
    assert "Use tabs." in system_prompt(provider.chat_requests()[0])
    assert "Use spaces." in system_prompt(provider.chat_requests()[-1])


async def test_a_rewind_in_a_fork_stops_at_the_fork_point_and_says_so(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    await two_prompts(client, provider)
    source = (await command(client, "seri.session.get", {}))["session"]["id"]
    await fork(client)
    assert (await command(client, "seri.checkpoints", {}))["checkpoints"] == []
    provider.script(Text("three"))
    await prompt(client, "third, in the fork")

    rewound = await command(client, "seri.rewind", {})
    assert rewound["prompt"] == "third, in the fork"
    with pytest.raises(JsonRpcException) as caught:
        await command(client, "seri.rewind", {})
    assert f"none since this session was forked from session {source}" in caught.value.message
    assert len(await messages(client)) == 4


async def test_the_source_is_left_exactly_as_it_was_whatever_happens_in_the_fork(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "a.txt").write_text("A\n")
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    provider.script(Calls([read("c1", "a.txt")], usage=usage(100)), Text("read", usage=usage(150)))
    await prompt(client, "read a.txt")
    source = (await command(client, "seri.session.get", {}))["session"]["id"]
    before = session_rows(profile_root, source)

    await fork(client)
    provider.script(
        Calls([("c2", "edit", {"path": "a.txt", "old_text": "A", "new_text": "B"})]),
        Text(f"edited {FILLER}"),
        Text(f"more {FILLER}"),
        Text(SUMMARY),
        Text("after compaction"),
    )
    await prompt(client, "edit a.txt")
    await prompt(client, "more")
    await prompt(client, "/compact")
    await prompt(client, "/max-turns 3")
    await command(client, "seri.rewind", {})
    await fork(client)

    assert session_rows(profile_root, source) == before


async def test_forking_refuses_what_it_cannot_do(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    empty = (await command(client, "seri.session.new", {}))["session"]["id"]
    with pytest.raises(JsonRpcException) as caught:
        await fork(client)
    assert f"Session {empty} has no messages to fork" in caught.value.message
    provider.script(Text("one"))
    await prompt(client, "first")
    with pytest.raises(JsonRpcInvalidParams) as invalid:
        await fork(client, messageId=999_999)
    assert invalid.value.data == {"field": "messageId"}
    with pytest.raises(JsonRpcInvalidParams) as invalid:
        await fork(client, messageId="3")
    assert invalid.value.data == {"field": "messageId"}
    with pytest.raises(JsonRpcInvalidParams) as invalid:
        await prompt(client, "/fork now")
    assert invalid.value.data == {"field": "text"}
    listed = (await command(client, "seri.session.list", {}))["sessions"]
    assert [s["parentId"] for s in listed] == [None]


async def test_forks_get_titles_distinct_from_their_source_and_from_each_other(
    agent, provider: ScriptedProvider
) -> None:
    """The session pickers list titles: a fork never reads as its source or as another
    fork; a fork of a fork is numbered rather than marked twice; a title the user gave
    is kept whole as the base."""
    client = await agent()
    await two_prompts(client, provider)
    source = (await command(client, "seri.session.get", {}))["session"]

    first = (await fork(client, sessionId=source["id"]))["session"]
    second = (await fork(client, sessionId=source["id"]))["session"]
    of_fork = (await fork(client, sessionId=first["id"]))["session"]

    assert first["title"] == "first (fork)"
    assert second["title"] == "first (fork 2)"
    assert of_fork["title"] == "first (fork 3)"
    await command(client, "seri.session.rename", {"sessionId": first["id"], "title": "a (fork)"})
    renamed = (await fork(client, sessionId=first["id"]))["session"]
    assert renamed["title"] == "a (fork) (fork)"
    listed = (await command(client, "seri.session.list", {}))["sessions"]
    titles = [s["title"] for s in listed]
    assert len(titles) == len(set(titles)) == 5
