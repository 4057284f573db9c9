"""`seri.cancel` stops a running task promptly and keeps what was said so far."""

from __future__ import annotations

import asyncio
import time

import pytest
from pygls.exceptions import JsonRpcException

from tests.agent_helpers import messages, prompt, tool_results
from tests.harness import HOLD, command, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text


async def test_cancel_mid_stream_stores_the_partial_reply(
    agent, provider: ScriptedProvider
) -> None:
    stalled = Text(
        "The first words arrive, then the stream stalls forever.", chunk_size=10, stall_after=2
    )
    provider.script(stalled)
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "long answer please"))
    await wait_until(lambda: len(client.seri["seri/delta"]) >= 2)
    started = time.monotonic()
    assert await command(client, "seri.cancel", {}) == {"cancelled": True}
    result = await asyncio.wait_for(running, timeout=5)
    assert time.monotonic() - started < 3
    stalled.release.set()
    assert result["status"] == "cancelled"
    history = await messages(client)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[-1]["content"] == "The first words arri"  # two chunks of ten
    ended = await wait_until(lambda: client.seri["seri/turnEnded"])
    assert ended[-1]["status"] == "cancelled"


async def test_cancel_while_a_tool_waits_answers_every_call(
    agent, provider: ScriptedProvider, workspace
) -> None:
    provider.script(
        Calls(
            [
                ("w", "write_file", {"path": "a.txt", "content": "x"}),
                ("r", "read_file", {"path": "a.txt"}),
            ]
        )
    )
    # The write waits for the user's permission; nobody answers before the cancel.
    client = await agent(init_options={"permissions": {"write": "ask"}})
    client.answers.append(HOLD)
    running = asyncio.ensure_future(prompt(client, "write it"))
    await wait_until(lambda: client.message_requests)
    await command(client, "seri.cancel", {})
    result = await asyncio.wait_for(running, timeout=5)
    assert result["status"] == "cancelled"
    results = tool_results(await messages(client))
    assert sorted(results) == ["r", "w"]
    assert all(r["isError"] and "Cancelled" in r["content"] for r in results.values())
    assert not (workspace / "a.txt").exists()


async def test_cancel_with_nothing_running_says_so(agent) -> None:
    client = await agent()
    assert await command(client, "seri.cancel", {}) == {"cancelled": False}


async def test_a_second_prompt_while_one_runs_is_refused(agent, provider: ScriptedProvider) -> None:
    stalled = Text("stalling here", chunk_size=4, stall_after=1)
    provider.script(stalled, Text("after"))
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "first"))
    await wait_until(lambda: client.seri["seri/delta"])
    with pytest.raises(JsonRpcException, match="A task is running"):
        await prompt(client, "second")
    with pytest.raises(JsonRpcException, match="A task is running"):
        await command(client, "seri.clear", {})
    await command(client, "seri.cancel", {})
    assert (await running)["status"] == "cancelled"
    stalled.release.set()
    assert (await prompt(client, "third"))["status"] == "done"
