"""Spend end to end: every model call's usage stored (input, cached input, cache writes,
output, reasoning tokens, cost when the provider reports it), labelled by what it was for, with
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
from tests.session_helpers import older_database
from tests.trajectory_helpers import of_kind, recording

ZERO = {
    "inputTokens": 0,
    "cachedInputTokens": 0,
    "cacheWriteTokens": 0,
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
        "cacheWriteTokens": 0,
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


def cache_figures(profile_root: Path) -> list[tuple[Any, ...]]:
    """Each stored call's (kind, cache reads, cache writes), straight from seri.db."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return conn.execute(
            "SELECT kind, cached_input_tokens, cache_write_tokens FROM model_calls ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def anthropic_usage(input_tokens: int, output_tokens: int, *, read: int, write: int) -> dict:
    """A usage object with the prompt cache's figures under Anthropic's names, at its top
    level, as LiteLLM passes them on."""
    return {
        **usage(input_tokens, output_tokens),
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }


async def test_the_cache_reads_and_writes_are_stored_in_either_naming(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "a.txt").write_text("A\n")
    provider.script(
        # OpenRouter: both figures in prompt_tokens_details.
        Calls(
            [("c1", "read_file", {"path": "a.txt"})],
            usage=usage(1000, 50, cached=0, cache_write=900),
        ),
        # Anthropic's names at the usage's top level (LiteLLM).
        Text("read it", usage=anthropic_usage(2000, 40, read=1500, write=400)),
        # A provider that says nothing of a cache.
        Text("plain", usage=usage(100, 10)),
    )
    client = await agent()
    await prompt(client, "read a.txt")
    await prompt(client, "again")

    assert cache_figures(profile_root) == [
        ("turn", 0, 900),
        ("turn", 1500, 400),
        ("turn", None, None),
    ]
    result = await spend(client)
    totals = {
        **ZERO,
        "inputTokens": 3100,
        "cachedInputTokens": 1500,
        "cacheWriteTokens": 1300,
        "outputTokens": 100,
        "calls": 3,
    }
    assert result["totals"] == totals and result["byKind"]["turn"] == totals
    assert result["cacheHitRate"] == pytest.approx(1500 / 3100)
    [listed] = (await command(client, "seri.session.list", {}))["sessions"]
    assert listed["spend"] == totals
    # The recording's usage records carry the two figures where the provider gave them.
    assert of_kind(await recording(client), "usage") == [
        {
            "purpose": "turn",
            "inputTokens": 1000,
            "outputTokens": 50,
            "cachedInputTokens": 0,
            "cacheWriteTokens": 900,
        },
        {
            "purpose": "turn",
            "inputTokens": 2000,
            "outputTokens": 40,
            "cachedInputTokens": 1500,
            "cacheWriteTokens": 400,
        },
        {"purpose": "turn", "inputTokens": 100, "outputTokens": 10},
    ]


async def test_the_cache_figures_add_up_across_compaction_a_restart_a_fork_and_a_subagent(
    agent, provider: ScriptedProvider
) -> None:
    settings = {"contextWindow": 4000, "keepTokens": 150}
    client = await agent(provider_extra=settings)
    for index in range(3):
        provider.script(
            Text(f"reply {index} {FILLER}", usage=usage(100, 10, cached=60, cache_write=30))
        )
        await prompt(client, f"prompt {index}")
    provider.script(Text(SUMMARY, usage=anthropic_usage(500, 100, read=300, write=50)))
    assert (await prompt(client, "/compact"))["compacted"] is True
    compacted = await spend(client)
    assert compacted["byKind"]["compaction"] == {
        **ZERO,
        "inputTokens": 500,
        "cachedInputTokens": 300,
        "cacheWriteTokens": 50,
        "outputTokens": 100,
        "calls": 1,
    }
    assert compacted["totals"]["cachedInputTokens"] == 3 * 60 + 300
    assert compacted["totals"]["cacheWriteTokens"] == 3 * 30 + 50

    await stop_server(client)
    client = await agent(provider_extra=settings)
    assert (await spend(client))["totals"] == compacted["totals"]
    source = (await command(client, "seri.session.get", {}))["session"]["id"]

    forked = await command(client, "seri.session.fork", {})
    assert forked["session"]["spend"] == ZERO
    provider.script(
        Calls([("t", "task", {"prompt": "Find the port"})], usage=usage(40, 4, cached=20)),
        Text("8080", usage=anthropic_usage(300, 30, read=200, write=100)),
        Text("The port is 8080.", usage=usage(50, 5, cached=40, cache_write=10)),
    )
    await prompt(client, "Which port?")
    in_fork = await spend(client)
    assert in_fork["byKind"]["subagent"] == {
        **ZERO,
        "inputTokens": 300,
        "cachedInputTokens": 200,
        "cacheWriteTokens": 100,
        "outputTokens": 30,
        "calls": 1,
    }
    assert (in_fork["totals"]["cachedInputTokens"], in_fork["totals"]["cacheWriteTokens"]) == (
        260,
        110,
    )
    assert (await spend(client, source))["totals"] == compacted["totals"]


async def test_a_database_of_the_previous_release_keeps_its_totals_with_no_cache_writes(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    """Migration 11: the calls stored before it wrote nothing to the cache (NULL on their
    row, 0 in the totals); the calls after it add theirs."""
    session_id = "3f2a9c1e-0000-4000-8000-000000000001"
    conn = older_database(profile_root, 10)
    conn.execute(
        "INSERT INTO sessions (id, project, created_at, updated_at, spent_input_tokens,"
        " spent_cached_input_tokens, model_calls) VALUES (?, ?, '', '', 1000, 700, 1)",
        (session_id, str(workspace)),
    )
    conn.execute(
        "INSERT INTO model_calls (session_id, kind, input_tokens, cached_input_tokens,"
        " created_at) VALUES (?, 'turn', 1000, 700, '')",
        (session_id,),
    )
    conn.commit()
    conn.close()

    client = await agent()
    old = {**ZERO, "inputTokens": 1000, "cachedInputTokens": 700, "calls": 1}
    assert (await spend(client, session_id))["totals"] == old
    assert cache_figures(profile_root) == [("turn", 700, None)]


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


async def test_cost_says_what_was_written_to_the_cache(agent, provider: ScriptedProvider) -> None:
    provider.script(Text("ok", usage=usage(1000, 100, cached=830, cache_write=120)))
    client = await agent()
    await prompt(client, "hello")

    text = (await prompt(client, "/cost"))["text"]

    assert "Input 1,000 tokens (830 cached, 83%; 120 written to the cache); output 100" in text


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
