"""Compaction beside other work, and compaction when the store fails.

- a manual compaction holds the "one task at a time" slot from its first step (loading
  the history of a resumed session), so a prompt sent meanwhile is refused as busy and
  `seri.cancel` reaches whichever of the two runs;
- a store error while a compaction writes its recap is fail-soft: an automatic
  compaction lets the turn go on uncompacted, a manual one answers `compacted: false`;
  an error recording a compaction that was committed does not undo its success;
- the recap's Read and Modified lists pair each tool result with the call of the
  assistant message just before it, so repeated call ids (a provider that sends none)
  cannot mix them up, and the ids seri makes up for such calls are unique anyway.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from seri_lsp.context.compaction import evicted_paths
from seri_lsp.store.messages import Message, ToolCall
from tests.agent_helpers import FILLER, SUMMARY, add_trigger, events, messages, prompt
from tests.harness import command, stop_server, wait_until
from tests.scripted_provider import Calls, Hang, Respond, ScriptedProvider, Text, usage

BUSY = "A task is running"


def is_summary(body: dict[str, Any]) -> bool:
    """Summariser requests offer the turns' tools with `tool_choice: "none"`."""
    return body.get("tool_choice") == "none"


async def build_history(client, provider: ScriptedProvider, prompts: int, last_usage: int) -> None:
    """`prompts` exchanges of a short prompt and a 400-character reply."""
    for index in range(prompts):
        billed = last_usage if index == prompts - 1 else 100
        provider.script(Text(f"reply {index} {FILLER}", usage=usage(billed)))
        assert (await prompt(client, f"prompt {index}"))["status"] == "done"


async def resumed_with_history(agent, provider: ScriptedProvider, **extra: Any):
    """A server whose open session has history not read yet: built, then restarted."""
    settings = {"contextWindow": 1_000_000, "keepTokens": 150, **extra}
    client = await agent(provider_extra=settings)
    await build_history(client, provider, 6, last_usage=100)
    await stop_server(client)
    return await agent(provider_extra=settings)


def outcomes(results: list[Any]) -> tuple[list[Any], list[BaseException]]:
    ran = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    return ran, refused


# --- a manual compaction and a prompt at once -----------------------------------------


async def test_a_prompt_sent_while_a_compaction_loads_the_history_is_refused_as_busy(
    agent, provider: ScriptedProvider
) -> None:
    client = await resumed_with_history(agent, provider)
    provider.script(
        *(
            Respond(lambda body: Text(SUMMARY) if is_summary(body) else Text("answered"))
            for _ in range(4)
        )
    )
    compacted, prompted = await asyncio.gather(
        command(client, "seri.compact", {}),
        prompt(client, "a prompt sent with the compaction"),
        return_exceptions=True,
    )
    ran, refused = outcomes([compacted, prompted])
    assert len(ran) == 1 and len(refused) == 1, (compacted, prompted)
    assert isinstance(refused[0], JsonRpcException) and BUSY in str(refused[0])
    if ran[0] is compacted:
        assert compacted["compacted"] is True and compacted["evicted"] >= 4
    else:
        assert prompted["status"] == "done"
    # Nothing failed and the history is whole: at most one of the two touched it.
    history = await messages(client)
    assert len({m["id"] for m in history}) == len(history)
    assert history[-1]["role"] == "assistant"
    assert (await prompt(client, "and after"))["status"] == "done"


async def test_cancel_stops_whichever_of_a_concurrent_compaction_and_prompt_runs(
    agent, provider: ScriptedProvider
) -> None:
    client = await resumed_with_history(agent, provider)
    hangs: list[Hang] = []

    def hang(body: dict[str, Any]) -> Hang:
        hangs.append(Hang())
        return hangs[-1]

    provider.script(*(Respond(hang) for _ in range(4)))
    try:
        both = asyncio.gather(
            command(client, "seri.compact", {}),
            prompt(client, "a prompt sent with the compaction"),
            return_exceptions=True,
        )
        await asyncio.to_thread(provider.wait_for_requests, len(provider.requests) + 1)
        assert await command(client, "seri.cancel", {}) == {"cancelled": True}
        compacted, prompted = await asyncio.wait_for(both, timeout=5)
    finally:
        for each in hangs:
            each.release.set()
    ran, refused = outcomes([compacted, prompted])
    assert len(ran) == 1 and len(refused) == 1, (compacted, prompted)
    assert BUSY in str(refused[0])
    if ran[0] is compacted:
        assert compacted["compacted"] is False and "cancelled" in compacted["message"]
    else:
        assert prompted["status"] == "cancelled"
    assert await command(client, "seri.cancel", {}) == {"cancelled": False}


# --- the store fails while a compaction writes ----------------------------------------


async def small_window(agent, provider: ScriptedProvider, **env: str):
    """A server whose next prompt compacts first (the history is at 2500 of 4000)."""
    client = await agent(
        provider_extra={"contextWindow": 4000, "keepTokens": 150, "maxRetries": 0},
        env=env or None,
    )
    await build_history(client, provider, 3, last_usage=2500)
    return client


def failure_notes(client) -> list[str]:
    return [
        m.message
        for m in [*client.messages, *client.log_messages]
        if "Automatic compaction failed" in m.message
    ]


async def test_an_automatic_compaction_that_finds_seri_db_locked_goes_on_uncompacted(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    # Another process takes the write lock while the summary is written, and lets go
    # only when the turn's model call arrives: the recap's write gives up (StoreBusy).
    client = await small_window(agent, provider, SERI_BUSY_TIMEOUT_MS="200")
    holder = sqlite3.connect(profile_root / "seri.db", check_same_thread=False, timeout=5)
    holder.isolation_level = None
    lock = threading.Lock()

    def decide(body: dict[str, Any]) -> Text:
        with lock:
            if is_summary(body):
                holder.execute("BEGIN IMMEDIATE")
                return Text(SUMMARY)
            if holder.in_transaction:
                holder.execute("ROLLBACK")
            return Text("answered anyway")

    provider.script(Respond(decide), Respond(decide))
    try:
        result = await prompt(client, "prompt 3")
    finally:
        with lock:
            if holder.in_transaction:
                holder.execute("ROLLBACK")
        holder.close()
    assert result["status"] == "done", result
    assert len(provider.chat_requests(with_tools=False)) == 1
    # The call went on with the whole, uncompacted history.
    assert len(provider.chat_requests(with_tools=True)[-1]["messages"]) == 1 + 7
    notes = await wait_until(lambda: failure_notes(client))
    assert "seri.db is busy" in notes[0] and "goes on uncompacted" in notes[0]
    history = await messages(client)
    assert all(m.get("kind") != "recap" for m in history)
    assert [m["content"] for m in history[-2:]] == ["prompt 3", "answered anyway"]


async def test_a_store_error_writing_the_recap_is_fail_soft(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await small_window(agent, provider)
    add_trigger(profile_root, "messages", "recap")
    provider.script(Text(SUMMARY), Text("answered anyway"))
    result = await prompt(client, "prompt 3")
    assert result["status"] == "done", result
    assert len(provider.chat_requests(with_tools=True)[-1]["messages"]) == 1 + 7
    notes = await wait_until(lambda: failure_notes(client))
    assert "database or disk is full" in notes[0]
    failures = events(profile_root, "compaction_failed")
    assert [f["trigger"] for f in failures] == ["auto"]
    assert "database or disk is full" in failures[0]["error"]

    # A manual compaction answers its result, not an RPC error.
    provider.script(Text(SUMMARY))
    compacted = await command(client, "seri.compact", {})
    assert compacted["compacted"] is False
    assert "database or disk is full" in compacted["message"]
    provider.script(Text(SUMMARY))
    by_slash = await prompt(client, "/compact")
    assert by_slash["compacted"] is False and by_slash["status"] == "done"
    assert all(m.get("kind") != "recap" for m in await messages(client))


async def test_a_failure_recording_a_committed_compaction_keeps_it_done(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await small_window(agent, provider)
    add_trigger(profile_root, "trajectory_events", "compaction")
    provider.script(Text(SUMMARY), Text("answered"))
    result = await prompt(client, "prompt 3")
    assert result["status"] == "done", result
    assert len(provider.chat_requests(with_tools=True)[-1]["messages"]) < 1 + 7
    compacted = await wait_until(lambda: client.seri["seri/compacted"])
    assert compacted[0]["trigger"] == "auto"
    history = await messages(client)
    assert history[0].get("kind") == "recap"
    logged = await wait_until(
        lambda: [m.message for m in client.log_messages if "recording the compaction" in m.message]
    )
    assert "database or disk is full" in logged[0]

    # The same for a manual compaction: done, and said so.
    build = [Text(f"more {index} {FILLER}", usage=usage(100)) for index in range(3)]
    for index, reply in enumerate(build):
        provider.script(reply)
        assert (await prompt(client, f"more {index}"))["status"] == "done"
    provider.script(Text(SUMMARY))
    manual = await command(client, "seri.compact", {})
    assert manual["compacted"] is True and manual["evicted"] >= 4
    await wait_until(lambda: len(client.seri["seri/compacted"]) == 2)
    assert not events(profile_root, "compaction")


# --- repeated tool-call ids -----------------------------------------------------------


def call(name: str, path: str, call_id: str = "call_0") -> Message:
    arguments = json.dumps({"path": path})
    return Message(role="assistant", content="", tool_calls=(ToolCall(call_id, name, arguments),))


def result(content: str, is_error: bool = False, call_id: str = "call_0") -> Message:
    return Message(role="tool", content=content, tool_call_id=call_id, is_error=is_error)


@pytest.mark.parametrize("read_first", [True, False])
def test_evicted_paths_pairs_each_result_with_the_call_just_before_it(read_first: bool) -> None:
    read = [call("read_file", "a.py"), result("contents of a.py")]
    denied = [call("write_file", "b.py"), result("denied by the user", is_error=True)]
    turns = read + denied if read_first else denied + read
    assert evicted_paths([Message(role="user", content="go"), *turns]) == (("a.py",), ())


def test_evicted_paths_with_repeated_ids_across_and_within_turns() -> None:
    two = Message(
        role="assistant",
        content="",
        tool_calls=(
            ToolCall("call_0", "write_file", json.dumps({"path": "c.py"})),
            ToolCall("call_0", "read_file", json.dumps({"path": "d.py"})),
        ),
    )
    evicted = [
        Message(role="user", content="go"),
        call("write_file", "a.py"),
        result("written"),
        call("write_file", "b.py"),
        result("denied", is_error=True),
        two,
        result("denied", is_error=True),
        result("contents of d.py"),
        # A stray result with no call before it counts for nothing.
        Message(role="user", content="next"),
        result("orphan"),
    ]
    assert evicted_paths(evicted) == (("d.py",), ("a.py",))


async def test_tool_calls_the_provider_sent_without_an_id_get_unique_ids(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    provider.script(
        Calls([("", "read_file", {"path": "a.txt"}), ("", "list_dir", {"path": "."})]),
        Calls([("", "read_file", {"path": "a.txt"})]),
        Text("done"),
    )
    client = await agent()
    assert (await prompt(client, "read it twice"))["status"] == "done"
    history = await messages(client)
    ids = [c["id"] for m in history for c in m.get("tool_calls") or []]
    assert len(ids) == 3 and len(set(ids)) == 3
    assert all(i.startswith("call_") for i in ids)
    answered = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert answered == ids
