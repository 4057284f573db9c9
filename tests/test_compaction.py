"""Compaction end to end: the real server, the scripted provider, a real seri.db."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from seri_lsp.faults import CRASH_EXIT_CODE
from tests.agent_helpers import events, messages, project_rules, prompt
from tests.harness import command, stop_server, wait_until
from tests.scripted_provider import Calls, Error, ScriptedProvider, Text, usage

SUMMARY = (
    "Goal: rename foo to bar across the project\n"
    "Progress: renamed foo to bar in src/app.py; 3 tests pass\n"
    "Blockers: none\n"
    "Next steps: update README.md"
)
WINDOW = 4000  # half is 2000 tokens
FILLER = "x" * 400
COMPACT_SETTINGS = {"contextWindow": WINDOW, "keepTokens": 150}


def summary_requests(provider: ScriptedProvider) -> list[dict[str, Any]]:
    """Summariser calls: the only requests whose tools may not be called."""
    return provider.chat_requests(with_tools=False)


def turn_requests(provider: ScriptedProvider) -> list[dict[str, Any]]:
    return provider.chat_requests(with_tools=True)


async def build_history(client, provider: ScriptedProvider, prompts: int, last_usage: int) -> None:
    """`prompts` exchanges of a short prompt and a 400-character reply."""
    for index in range(prompts):
        billed = last_usage if index == prompts - 1 else 100
        provider.script(Text(f"reply {index} {FILLER}", usage=usage(billed)))
        assert (await prompt(client, f"prompt {index}"))["status"] == "done"


async def start(agent, env: dict[str, str] | None = None, **extra: Any):
    """A server with a small window (4000) and keep budget (150 tokens)."""
    return await agent(provider_extra={**COMPACT_SETTINGS, **extra}, env=env)


@pytest.mark.parametrize("billed, compacts", [(2000, True), (1999, False)])
async def test_automatic_compaction_triggers_at_exactly_half_the_window(
    agent, provider: ScriptedProvider, billed: int, compacts: bool
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=billed)
    if compacts:
        provider.script(Text(SUMMARY))
    provider.script(Text("answered"))
    assert (await prompt(client, "prompt 3"))["status"] == "done"

    assert bool(summary_requests(provider)) is compacts
    last_turn = turn_requests(provider)[-1]["messages"]
    if not compacts:
        assert len(last_turn) == 1 + 7
        return
    summary = summary_requests(provider)[0]
    assert summary["tools"] == turn_requests(provider)[-1]["tools"]
    assert summary["tool_choice"] == "none"
    assert summary["model"] == "test/model"
    # recap, then the kept suffix: prompt 1 and its reply, prompt 2... the cut fits 150 tokens.
    assert [m["role"] for m in last_turn] == ["system", "user", "user", "assistant", "user"]
    recap = last_turn[1]["content"]
    assert recap.startswith("This is a recap")
    assert "Progress:\nrenamed foo to bar in src/app.py; 3 tests pass" in recap
    assert [m["content"] for m in last_turn[2:]] == ["prompt 2", f"reply 2 {FILLER}", "prompt 3"]
    compacted = await wait_until(lambda: client.seri["seri/compacted"])
    assert compacted[0]["trigger"] == "auto" and compacted[0]["evicted"] == 4


async def test_the_first_call_after_resume_compacts_on_the_stored_billed_count(
    agent, provider: ScriptedProvider
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=3000)
    await stop_server(client)

    resumed = await start(agent)
    provider.script(Text(SUMMARY), Text("after resume"))
    assert (await prompt(resumed, "prompt 3"))["status"] == "done"
    assert len(summary_requests(provider)) == 1
    assert provider.requests[-2] is summary_requests(provider)[0]


async def test_manual_compact_with_focus_words(agent, provider: ScriptedProvider) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    provider.script(Text(SUMMARY))
    result = await prompt(client, "/compact keep the parser decisions")
    assert result["status"] == "done" and result["command"] == "compact"
    assert (result["compacted"], result["evicted"], result["trigger"]) == (True, 4, "manual")
    request = summary_requests(provider)[0]["messages"][-1]["content"]
    assert "Focus instructions from the user for this recap: keep the parser decisions" in request
    compacted = await wait_until(lambda: client.seri["seri/compacted"])
    assert compacted[-1]["trigger"] == "manual"
    progress = [
        values
        for values in client.progress_reports.values()
        if values and getattr(values[0], "title", "") == "seri: compacting the conversation"
    ]
    assert progress and progress[0][-1].kind == "end"

    provider.script(Text(SUMMARY))
    by_command = await command(client, "seri.compact", {"focus": "tests"})
    assert by_command == {
        "compacted": False,
        "evicted": 0,
        "message": "Not enough history to compact",
    }


async def test_not_enough_history_to_compact(agent, provider: ScriptedProvider) -> None:
    client = await start(agent)
    await build_history(client, provider, 1, last_usage=100)
    result = await command(client, "seri.compact", {})
    assert result == {"compacted": False, "evicted": 0, "message": "Not enough history to compact"}
    shown = await wait_until(
        lambda: [m.message for m in client.messages if m.message == "Not enough history to compact"]
    )
    assert shown
    assert summary_requests(provider) == []
    assert len(await messages(client)) == 2


async def test_oversized_payloads_are_elided_in_the_summarizer_request(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    big = "é" * 6000  # 12000 UTF-8 bytes
    (workspace / "big.txt").write_text(big)
    provider.script(
        Calls([("r", "read_file", {"path": "big.txt"})], usage=usage(100)),
        Calls([("w", "write_file", {"path": "copy.txt", "content": big})], usage=usage(100)),
        Text(f"copied {FILLER}", usage=usage(100)),
    )
    client = await start(agent)
    await prompt(client, "copy big.txt")
    provider.script(Text(f"ok {FILLER}", usage=usage(100)))
    await prompt(client, "thanks")
    provider.script(Text(SUMMARY))
    assert (await command(client, "seri.compact", {}))["compacted"] is True

    request = summary_requests(provider)[0]["messages"]
    assert big not in json.dumps(request, ensure_ascii=False)
    results = [m for m in request if m["role"] == "tool"]
    assert json.loads(results[0]["content"]) == {"elided": True, "originalBytes": 12000}
    write = next(
        m
        for m in request
        if (m.get("tool_calls") or [{}])[0].get("function", {}).get("name") == "write_file"
    )
    assert json.loads(write["tool_calls"][0]["function"]["arguments"]) == {
        "path": "copy.txt",
        "content": {"elided": True, "originalBytes": 12000},
    }
    instructions = request[-1]["content"]
    assert "Do not guess or invent" in instructions and "Quote literal values" in instructions

    # Paths come from the evicted tool calls, not from the model.
    recap = (await messages(client))[0]
    assert recap["kind"] == "recap"
    assert "Read: big.txt" in recap["content"] and "Modified: copy.txt" in recap["content"]
    assert recap["recap"]["read"] == ["big.txt"] and recap["recap"]["modified"] == ["copy.txt"]


async def test_a_second_compaction_updates_the_earlier_recap(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.py").write_text("a\n")
    client = await start(agent)
    provider.script(
        Calls([("r", "read_file", {"path": "a.py"})], usage=usage(100)),
        Text(f"read {FILLER}", usage=usage(100)),
    )
    await prompt(client, "read a.py")
    await build_history(client, provider, 1, last_usage=100)
    provider.script(Text(SUMMARY))
    assert (await command(client, "seri.compact", {}))["compacted"] is True

    provider.script(
        Calls(
            [("e", "edit", {"path": "a.py", "old_text": "a", "new_text": "b"})], usage=usage(100)
        ),
        Text(f"edited {FILLER}", usage=usage(100)),
    )
    await prompt(client, "edit a.py")
    await build_history(client, provider, 1, last_usage=100)
    updated = SUMMARY.replace("update README.md", "release 1.2.0")
    provider.script(Text(updated))
    assert (await command(client, "seri.compact", {"focus": "the release"}))["compacted"] is True

    second = summary_requests(provider)[1]["messages"]
    assert "Update that recap with the messages after it" in second[-1]["content"]
    assert second[1]["content"].startswith("This is a recap")  # the earlier recap, in place
    assert "renamed foo to bar in src/app.py; 3 tests pass" in second[1]["content"]
    history = await messages(client)
    recaps = [m for m in history if m.get("kind") == "recap"]
    assert len(recaps) == 1 and history[0] == recaps[0]
    assert "release 1.2.0" in recaps[0]["content"]
    # a.py was read in the first recap and modified since: listed as modified only.
    assert recaps[0]["recap"]["read"] == [] and recaps[0]["recap"]["modified"] == ["a.py"]
    assert "Read:" not in recaps[0]["content"]


async def test_a_too_long_rejection_compacts_once_and_retries(
    agent, provider: ScriptedProvider
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    too_long = Error(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 4000 tokens.",
                "code": "context_length_exceeded",
            }
        },
    )
    provider.script(too_long, Text(SUMMARY), Text("fits now"))
    result = await prompt(client, "prompt 3")
    assert result["status"] == "done"
    assert len(summary_requests(provider)) == 1
    assert turn_requests(provider)[-1]["messages"][1]["content"].startswith("This is a recap")
    compacted = await wait_until(lambda: client.seri["seri/compacted"])
    assert compacted[-1]["trigger"] == "overflow"


@pytest.mark.parametrize(
    "rejection",
    [
        Error(400, {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        Error(413, "Request Entity Too Large"),
    ],
)
async def test_a_second_overflow_fails_the_turn(
    agent, provider: ScriptedProvider, rejection: Error
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    provider.script(rejection, Text(SUMMARY), rejection)
    result = await prompt(client, "prompt 3")
    assert result["status"] == "failed"
    assert "still too long for the model after compacting" in result["error"]


async def test_an_overflow_without_enough_history_fails_clearly(
    agent, provider: ScriptedProvider
) -> None:
    client = await start(agent)
    provider.script(Error(413, "too large"))
    result = await prompt(client, "huge paste")
    assert result["status"] == "failed"
    assert "rejected the request as too long" in result["error"]
    assert "not enough history to compact" in result["error"]


async def test_an_overflow_whose_compaction_fails_fails_the_turn(
    agent, provider: ScriptedProvider
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    provider.script(Error(413, "too large"), Text("I refuse to use your sections."))
    result = await prompt(client, "prompt 3")
    assert result["status"] == "failed"
    assert "Compacting to make room failed" in result["error"]
    assert "Goal:" in result["error"]  # names what the summary lacked


@pytest.mark.parametrize(
    "bad_summary",
    [Text("Here is a summary without any sections."), Error(500, {"error": {"message": "down"}})],
)
async def test_a_failed_automatic_compaction_is_fail_soft(
    agent, provider: ScriptedProvider, profile_root: Path, bad_summary: Any
) -> None:
    client = await start(agent, maxRetries=0)
    await build_history(client, provider, 3, last_usage=2500)
    provider.script(bad_summary, Text("answered anyway"))
    result = await prompt(client, "prompt 3")
    assert result["status"] == "done"
    # The call went on with the whole, uncompacted history.
    assert len(turn_requests(provider)[-1]["messages"]) == 1 + 7
    failures = events(profile_root, "compaction_failed")
    assert failures and failures[0]["trigger"] == "auto"
    logged = [m.message for m in client.log_messages if "Automatic compaction failed" in m.message]
    assert logged
    assert all(m.get("kind") != "recap" for m in await messages(client))


async def test_a_recap_that_would_not_shrink_the_history_is_skipped(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    bloated = SUMMARY.replace("none", "none " + "padding " * 500)
    provider.script(Text(bloated))
    result = await command(client, "seri.compact", {})
    assert result["compacted"] is False
    assert "would not make the history smaller" in result["message"]
    assert len(await messages(client)) == 6


async def test_a_failing_automatic_compaction_is_tried_at_most_once_per_turn(
    agent, provider: ScriptedProvider
) -> None:
    client = await start(agent, maxRetries=0)
    await build_history(client, provider, 3, last_usage=100)
    before = len(provider.requests)
    # Every reply bills far over half the window, and every summary is unusable.
    replies = []
    for index in range(6):
        replies += [
            Text("no sections"),
            Calls([(f"c{index}", "list_dir", {"path": "."})], usage=usage(3900)),
        ]
    provider.script(
        Calls([("c", "list_dir", {"path": "."})], usage=usage(3900)),
        *replies,
        Text("no sections"),
        Text("finished", usage=usage(3900)),
    )
    result = await prompt(client, "loop with huge bills")
    assert result["status"] == "done" and result["turns"] == 8
    # No cap, and no loop: one summariser attempt before each turn after the first,
    # never two in a row on an unchanged history.
    kinds = [
        "summary" if r.get("tool_choice") == "none" else "turn" for r in provider.requests[before:]
    ]
    assert kinds == ["turn"] + ["summary", "turn"] * 7


async def test_resume_after_compaction_shows_the_recap_and_kept_messages_only(
    agent, provider: ScriptedProvider
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    provider.script(Text(SUMMARY))
    await command(client, "seri.compact", {})
    await stop_server(client)
    again = await start(agent)
    history = await messages(again)
    assert history[0]["kind"] == "recap"
    assert [m["content"] for m in history[1:]] == ["prompt 2", f"reply 2 {FILLER}"]
    assert all("prompt 0" not in m["content"] for m in history)


async def test_an_unanswered_call_in_the_history_is_repaired_before_sending(
    agent, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    folder = profile_root / "sessions"
    folder.mkdir(parents=True)
    lines = [
        {
            "type": "session",
            "id": "crashed",
            "cwd": str(workspace),
            "created": "2025-01-01T00:00:00Z",
        },
        {"type": "message", "role": "user", "content": "start"},
        {
            "type": "message",
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "k1", "name": "read_file", "arguments": {"path": "a"}},
                {"id": "k2", "name": "read_file", "arguments": {"path": "b"}},
            ],
        },
        {"type": "message", "role": "tool", "tool_call_id": "k1", "content": "a"},
        {"type": "message", "role": "tool", "tool_call_id": "zz", "content": "stray"},
    ]
    (folder / "crashed.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    provider.script(Text("recovered"))
    client = await agent()
    await command(client, "seri.session.resume", {"sessionId": "crashed"})
    assert (await prompt(client, "go on"))["status"] == "done"
    sent = provider.requests[0]["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in sent[1:]] == [
        ("user", None),
        ("assistant", None),
        ("tool", "k1"),
        ("tool", "k2"),
        ("user", None),
    ]
    assert sent[4]["content"] == "no result: interrupted"
    assert events(profile_root, "repair")
    assert any("Repaired" in m.message for m in client.log_messages)


@pytest.mark.parametrize("crash_point", ["compaction.before_commit", "compaction.in_transaction"])
async def test_a_kill_during_compaction_leaves_the_session_untouched_or_compacted(
    agent, provider: ScriptedProvider, crash_point: str
) -> None:
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    before = await messages(client)
    await stop_server(client)

    doomed = await start(agent, env={"SERI_CRASH_AT": crash_point})
    provider.script(Text(SUMMARY))
    pending = asyncio.ensure_future(command(doomed, "seri.compact", {}))
    await asyncio.wait_for(doomed._server.wait(), timeout=20)
    pending.cancel()
    assert doomed._server.returncode == CRASH_EXIT_CODE
    assert len(summary_requests(provider)) == 1  # it died after the summariser answered

    survivor = await start(agent)
    assert await messages(survivor) == before  # untouched, to the last byte
    provider.script(Text(SUMMARY))
    assert (await command(survivor, "seri.compact", {}))["compacted"] is True
    after = await messages(survivor)
    assert after[0]["kind"] == "recap" and after[1:] == before[4:]  # fully compacted
    assert not [m for m in survivor.messages if m.type == types.MessageType.Error]


async def test_a_glob_rule_evicted_by_a_compaction_fires_again(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    project_rules(workspace, python='---\nglobs: "*.py"\n---\nUse type hints.\n')
    (workspace / "a.py").write_text("a = 1\n")
    client = await start(agent)

    async def read_a(text: str) -> list[dict[str, Any]]:
        provider.script(Calls([("r", "read_file", {"path": "a.py"})]), Text(f"read {FILLER}"))
        assert (await prompt(client, text))["status"] == "done"
        return [m for m in await messages(client) if m.get("kind") == "rule"]

    assert len(await read_a("read a.py")) == 1
    assert len(await read_a("read a.py again")) == 1  # delivered once while it stays
    await build_history(client, provider, 2, last_usage=100)
    provider.script(Text(SUMMARY))
    assert (await command(client, "seri.compact", {}))["compacted"]
    assert [m for m in await messages(client) if m.get("kind") == "rule"] == []

    fired = await read_a("and once more")
    assert len(fired) == 1 and "Use type hints." in fired[0]["content"]
    assert turn_requests(provider)[-1]["messages"][-1]["content"] == fired[0]["content"]
    # The new mark is stored: after a restart the rule does not fire a second time.
    await stop_server(client)
    client = await start(agent)
    assert len(await read_a("after a restart")) == 1


async def test_the_summariser_request_starts_with_the_turns_own_request(
    agent, provider: ScriptedProvider
) -> None:
    """The summariser's request begins byte for byte with the turn request before it
    (tools, system message, the conversation up to the cut), then one user message with
    the instructions; its tools are offered but may not be called."""
    client = await start(agent)
    await build_history(client, provider, 3, last_usage=100)
    provider.script(Text(SUMMARY))
    assert (await command(client, "seri.compact", {"focus": "the parser"}))["compacted"] is True

    index = next(i for i, r in enumerate(provider.requests) if r.get("tool_choice") == "none")
    summary, turn = provider.requests[index], provider.requests[index - 1]
    raw_summary, raw_turn = provider.raw_requests[index], provider.raw_requests[index - 1]
    assert summary["tool_choice"] == "none"
    assert summary["model"] == turn["model"]
    assert summary["tools"] == turn["tools"]
    prefix = summary["messages"][:-1]
    assert prefix == turn["messages"][: len(prefix)]
    assert prefix[0]["role"] == "system" and len(prefix) == 1 + 4  # the 4 evicted messages
    # Byte for byte: the body up to the end of the shared messages is the turn's own.
    shared = b",".join(
        json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode() for m in prefix
    )
    start_of = b'{"model":"test/model","messages":[' + shared + b","
    assert raw_summary.startswith(start_of) and raw_turn.startswith(start_of)
    tools = json.dumps(turn["tools"], ensure_ascii=False, separators=(",", ":")).encode()
    assert b'"tools":' + tools in raw_summary and b'"tools":' + tools in raw_turn
    last = summary["messages"][-1]
    assert last["role"] == "user"
    assert "Goal:" in last["content"] and "Quote literal values" in last["content"]
    assert "Do not guess or invent" in last["content"]
    assert "Focus instructions from the user for this recap: the parser" in last["content"]
