"""What happened before a compaction stays findable: the recap message keeps what the
chat's divider tells (messages, tool calls, tokens before and after, paths), and
`seri.trajectory.get {compacted: true}` answers the record of the turns it replaced, from
every recording that holds them, on the real server with a real seri.db."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from tests.agent_helpers import messages, prompt
from tests.harness import command, stop_server, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text, usage
from tests.test_compaction import COMPACT_SETTINGS, FILLER, SUMMARY


async def start(agent: Any) -> Any:
    return await agent(provider_extra=dict(COMPACT_SETTINGS))


async def a_turn_with_a_read(client: Any, provider: ScriptedProvider, n: int) -> None:
    provider.script(
        Calls([(f"r{n}", "read_file", {"path": "a.txt"})], usage=usage(100)),
        Text(f"reply {n} {FILLER}", usage=usage(100)),
    )
    assert (await prompt(client, f"prompt {n}"))["status"] == "done"


async def test_the_recap_keeps_what_the_divider_tells_and_the_record_of_what_it_replaced(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    client = await start(agent)
    await a_turn_with_a_read(client, provider, 0)
    await stop_server(client)
    # A second run: a second recording of the same session.
    client = await start(agent)
    for n in (1, 2):
        await a_turn_with_a_read(client, provider, n)
    provider.script(Text(SUMMARY))
    assert (await prompt(client, "/compact"))["status"] == "done"
    [notice] = await wait_until(lambda: client.seri["seri/compacted"])

    history = await messages(client)
    kept = [m["content"] for m in history if m["role"] == "user" and m.get("kind") is None]
    [recap] = [m for m in history if m.get("kind") == "recap"]
    assert recap["id"] == notice["recapId"]
    shown = recap["recap"]
    assert shown["evicted"] == notice["evicted"] >= 4
    assert shown["toolCalls"] >= 2  # the reads of the turns it replaced
    assert (shown["tokensBefore"], shown["tokensAfter"]) == (
        notice["tokensBefore"],
        notice["tokensAfter"],
    )
    assert shown["read"] == notice["read"] == ["a.txt"]

    provider.script(Text("after the recap"))
    assert (await prompt(client, "prompt 3"))["status"] == "done"
    record = await command(client, "seri.trajectory.get", {"compacted": True})
    events = record["events"]
    assert events[-1]["kind"] == "compaction" and events[-1]["data"]["outcome"] == "compacted"
    # The turns it replaced, not those the conversation kept (nor any after it).
    prompts = [e["data"]["prompt"] for e in events if e["kind"] == "task_started"]
    assert kept and prompts  # the test compacts some turns and keeps some
    assert prompts + kept == ["prompt 0", "prompt 1", "prompt 2"]
    calls = [e["data"]["id"] for e in events if e["kind"] == "tool_call"]
    assert calls == [f"r{p.split()[-1]}" for p in prompts]
    # From both runs' recordings, oldest first, each event naming its recording.
    recordings = {e["trajectoryId"] for e in events}
    assert len(recordings) == 2 and record["id"] in recordings
    assert events[0]["trajectoryId"] != record["id"]
    assert len(record["recordings"]) == 2
    # A plain get is as it was: one recording, events without `trajectoryId`.
    plain = await command(client, "seri.trajectory.get", {})
    assert all("trajectoryId" not in e for e in plain["events"])


async def test_a_session_never_compacted_has_no_such_record(
    agent, provider: ScriptedProvider
) -> None:
    client = await start(agent)
    provider.script(Text("hi"))
    await prompt(client, "hello")
    record = await command(client, "seri.trajectory.get", {"compacted": True})
    assert (record["id"], record["events"]) == (None, [])
    try:
        await command(client, "seri.trajectory.get", {"compacted": True, "trajectoryId": "x"})
    except JsonRpcInvalidParams as exc:
        assert "sessionId, not trajectoryId" in str(exc)
    else:
        raise AssertionError("compacted with trajectoryId was accepted")


async def test_a_forks_divider_opens_its_sources_record(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    client = await start(agent)
    for n in (0, 1, 2):
        await a_turn_with_a_read(client, provider, n)
    provider.script(Text(SUMMARY))
    assert (await prompt(client, "/compact"))["status"] == "done"
    source = (await command(client, "seri.session.get", {}))["session"]["id"]
    forked = (await command(client, "seri.session.fork", {}))["session"]["id"]
    assert forked != source
    record = await command(client, "seri.trajectory.get", {"sessionId": forked, "compacted": True})
    assert record["id"] is not None and record["sessionId"] == source
    assert any(e["kind"] == "tool_call" for e in record["events"])
    assert forked in record["note"] and source in record["note"]
    # An import holds no recordings: the answer says where the record stays.
    bundle = await command(client, "seri.session.export", {"format": "json", "sessionId": source})
    imported = (await command(client, "seri.session.import", {"text": bundle["text"]}))["session"]
    record = await command(
        client, "seri.trajectory.get", {"sessionId": imported["id"], "compacted": True}
    )
    assert record["id"] is None and record["events"] == []
    assert "imported" in record["note"] and "exported" in record["note"]
