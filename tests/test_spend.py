"""Spend end to end: every model call's usage stored (input, cached input, output,
reasoning tokens, cost when the provider reports it), labelled by what it was for, with
totals on the session that only grow: across compaction, rewind, a restart and a fork,
a subagent's counted in its parent's. `seri.session.usage`, `/cost`, `seri.session.list`
and `seri-lsp sessions` show them."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from seri_lsp.faults import CRASH_EXIT_CODE
from tests.agent_helpers import FILLER, SUMMARY, messages, prompt
from tests.harness import command, seri_async, shown_messages, stop_server
from tests.scripted_provider import Calls, ScriptedProvider, Text, usage

ZERO = {
    "inputTokens": 0,
    "cachedInputTokens": 0,
    "outputTokens": 0,
    "reasoningTokens": 0,
    "cost": None,
    "calls": 0,
}


async def spend(client: Any, session_id: str | None = None) -> dict[str, Any]:
    args = {"sessionId": session_id} if session_id else {}
    return await command(client, "seri.session.usage", args)


def calls(profile_root: Path) -> list[tuple[Any, ...]]:
    """The stored calls, straight from seri.db: (session, kind, input, cached, output,
    reasoning, cost, message id)."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return conn.execute(
            "SELECT session_id, kind, input_tokens, cached_input_tokens, output_tokens,"
            " reasoning_tokens, cost, message_id FROM model_calls ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


async def test_each_call_stores_its_usage_and_the_session_adds_them_up(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "a.txt").write_text("A\n")
    provider.script(
        Calls(
            [("c1", "read_file", {"path": "a.txt"})],
            usage=usage(1000, 50, cached=800, reasoning=20, cost=0.002),
        ),
        Text("read it", usage=usage(1200, 30, cached=1000, reasoning=0, cost=0.003)),
    )
    client = await agent()
    await prompt(client, "read a.txt")
    session_id = (await command(client, "seri.session.get", {}))["session"]["id"]
    assistants = [m["id"] for m in await messages(client) if m["role"] == "assistant"]

    stored = calls(profile_root)
    assert stored == [
        (session_id, "turn", 1000, 800, 50, 20, 0.002, assistants[0]),
        (session_id, "turn", 1200, 1000, 30, 0, 0.003, assistants[1]),
    ]
    result = await spend(client)
    totals = {
        "inputTokens": 2200,
        "cachedInputTokens": 1800,
        "outputTokens": 80,
        "reasoningTokens": 20,
        "cost": pytest.approx(0.005),
        "calls": 2,
    }
    assert result["sessionId"] == session_id
    assert result["totals"] == totals and result["calls"] == 2
    assert result["byKind"] == {"turn": totals, "compaction": ZERO, "subagent": ZERO}
    assert result["cacheHitRate"] == pytest.approx(1800 / 2200)
    [listed] = (await command(client, "seri.session.list", {}))["sessions"]
    assert listed["spend"] == totals


async def test_cost_is_null_until_a_call_reports_one(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    assert (await spend(client))["totals"]["cost"] is None  # a new session: nothing yet
    provider.script(Text("no cost", usage=usage(100, 10)), Text("no usage at all"))
    await prompt(client, "one")
    await prompt(client, "two")

    result = await spend(client)
    assert result["totals"] == {**ZERO, "inputTokens": 100, "outputTokens": 10, "calls": 2}
    assert result["cacheHitRate"] == 0

    provider.script(Text("priced", usage=usage(100, 10, cost=0.25)))
    await prompt(client, "three")
    assert (await spend(client))["totals"]["cost"] == 0.25


async def test_the_totals_only_grow_across_compaction_rewind_a_restart_and_a_fork(
    agent, provider: ScriptedProvider
) -> None:
    settings = {"contextWindow": 4000, "keepTokens": 150}
    client = await agent(provider_extra=settings)
    for index in range(3):
        provider.script(Text(f"reply {index} {FILLER}", usage=usage(100, 10, cost=0.01)))
        await prompt(client, f"prompt {index}")
    provider.script(Text(SUMMARY, usage=usage(500, 100, cost=0.05)))
    assert (await prompt(client, "/compact"))["compacted"] is True
    compacted = await spend(client)
    assert compacted["byKind"]["compaction"] == {
        **ZERO,
        "inputTokens": 500,
        "outputTokens": 100,
        "cost": 0.05,
        "calls": 1,
    }
    assert compacted["totals"]["inputTokens"] == 800
    assert compacted["totals"]["cost"] == pytest.approx(0.08)

    await command(client, "seri.rewind", {})
    assert (await spend(client))["totals"] == compacted["totals"]

    await stop_server(client)
    client = await agent(provider_extra=settings)
    assert (await spend(client))["totals"] == compacted["totals"]
    source = (await command(client, "seri.session.get", {}))["session"]["id"]

    forked = await command(client, "seri.session.fork", {})
    assert forked["session"]["parentId"] == source
    assert forked["session"]["spend"] == ZERO
    provider.script(Text("in the fork", usage=usage(40, 4, cost=0.001)))
    await prompt(client, "go on")
    assert (await spend(client))["totals"] == {
        **ZERO,
        "inputTokens": 40,
        "outputTokens": 4,
        "cost": 0.001,
        "calls": 1,
    }
    assert (await spend(client, source))["totals"] == compacted["totals"]


async def test_a_subagent_spend_counts_in_its_parent_labelled_subagent(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(
        Calls([("t", "task", {"prompt": "Find the port"})], usage=usage(100, 10, cost=0.01)),
        Text("8080", usage=usage(300, 30, cached=200, cost=0.02)),
        Text("The port is 8080.", usage=usage(150, 15, cost=0.03)),
    )
    client = await agent()
    await prompt(client, "Which port?")
    session_id = (await command(client, "seri.session.get", {}))["session"]["id"]

    result = await spend(client)
    assert result["byKind"]["turn"]["inputTokens"] == 250
    assert result["byKind"]["subagent"] == {
        **ZERO,
        "inputTokens": 300,
        "cachedInputTokens": 200,
        "outputTokens": 30,
        "cost": 0.02,
        "calls": 1,
    }
    assert result["totals"]["inputTokens"] == 550 and result["calls"] == 3
    assert result["totals"]["cost"] == pytest.approx(0.06)
    # The subagent's call is stored with its own session, whose totals are its own.
    stored = calls(profile_root)
    assert [(row[0] == session_id, row[1]) for row in stored] == [
        (True, "turn"),
        (False, "subagent"),
        (True, "turn"),
    ]
    child = await spend(client, stored[1][0])
    assert child["totals"]["inputTokens"] == 300 and child["calls"] == 1


async def test_a_reply_and_its_spend_are_stored_together_or_not_at_all(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    doomed = await agent(env={"SERI_CRASH_AT": "reply.in_transaction"})
    provider.script(Text("never stored", usage=usage(100, 10, cost=0.5)))
    pending = asyncio.ensure_future(prompt(doomed, "hello"))
    await asyncio.wait_for(doomed._server.wait(), timeout=20)
    pending.cancel()
    assert doomed._server.returncode == CRASH_EXIT_CODE

    survivor = await agent()
    assert [m["role"] for m in await messages(survivor)] == ["user"]
    assert calls(profile_root) == []
    assert (await spend(survivor))["totals"] == ZERO


async def test_cost_prints_the_spend(agent, provider: ScriptedProvider) -> None:
    provider.script(Text("ok", usage=usage(1000, 100, cached=250, reasoning=40, cost=0.0123)))
    client = await agent()
    await prompt(client, "hello")

    result = await prompt(client, "/cost")

    assert result["command"] == "cost" and result["totals"]["cost"] == 0.0123
    text = result["text"]
    assert text.startswith("Spend: $0.0123 over 1 model call.")
    assert "Input 1,000 tokens (250 cached, 25%); output 100 (reasoning 40)." in text
    assert shown_messages(client, types.MessageType.Info, "Spend: $0.0123") == [text]


async def test_the_sessions_command_shows_cost_or_tokens(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    client = await agent()
    provider.script(Text("priced", usage=usage(100, 10, cost=0.0123)))
    await prompt(client, "priced prompt")
    await command(client, "seri.session.new", {})
    provider.script(Text("unpriced", usage=usage(1000, 234)))
    await prompt(client, "unpriced prompt")
    await stop_server(client)

    listed = await seri_async("sessions", "--profile-root", str(profile_root), cwd=workspace)

    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[-2]: line for line in listed.stdout.splitlines()}
    assert "$0.0123" in lines["priced"]
    assert "1,234 tok" in lines["unpriced"]
