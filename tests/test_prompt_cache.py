"""Prompt-cache breakpoints, the session named to OpenRouter, and the refusal fallback,
read from the exact request bodies the provider receives."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from seri_lsp.agent.provider.cache import MAX_BREAKPOINTS, needs_breakpoints
from seri_lsp.agent.provider.request import BodyEncoder
from seri_lsp.settings import ProviderSettings, load_settings
from tests.agent_helpers import project_rules, prompt
from tests.harness import command, stop_server
from tests.scripted_provider import Calls, Error, ScriptedProvider, Text

CLAUDE = "anthropic/claude-sonnet-4.5"
MARK = {"type": "ephemeral", "ttl": "5m"}
TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": {}}},
    {"type": "function", "function": {"name": "edit", "parameters": {}}},
]
SYSTEM = {"role": "system", "content": "You are seri."}


def markers(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """Where a request carries `cache_control`: ("tool", index) or ("message", index),
    each with its marker."""
    found: list[tuple[str, Any]] = []
    for index, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            found.append((f"tool {index}", tool["cache_control"]))
    for index, message in enumerate(body["messages"]):
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if "cache_control" in part:
                    found.append((f"message {index}", part["cache_control"]))
    return found


def unmarked(message: dict[str, Any]) -> dict[str, Any]:
    """A message as it reads without its breakpoint (one text part is a string)."""
    content = message.get("content")
    if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
        return {**message, "content": content[0]["text"]}
    return message


def encode(settings: ProviderSettings, messages: list[Any], **options: Any) -> dict[str, Any]:
    return json.loads(BodyEncoder(settings).encode(messages, TOOLS, **options))


def messages_end(raw: bytes) -> int:
    """Where a raw body's messages array ends (the tools follow it)."""
    return raw.index(b'],"tools":[')


@pytest.mark.parametrize(
    ("model", "wanted"),
    [
        ("anthropic/claude-sonnet-4.5", True),
        ("claude-3-5-haiku-latest", True),
        ("bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", True),
        ("bedrock/anthropic.claude-3-haiku-20240307-v1:0", True),
        ("vertex_ai/claude-3-5-sonnet@20240620", True),
        ("openrouter/anthropic/claude-opus-4", True),
        ("openai/gpt-4.1", False),
        ("deepseek/deepseek-chat", False),
        ("google/gemini-2.5-pro", False),
        ("test/model", False),
    ],
)
def test_claude_models_under_any_gateway_name_need_breakpoints_and_others_do_not(
    model: str, wanted: bool
) -> None:
    assert needs_breakpoints(model) is wanted


def test_the_tools_the_system_message_and_the_newest_message_carry_the_breakpoints() -> None:
    settings = ProviderSettings(model=CLAUDE, cache_ttl="1h")
    history = [SYSTEM, {"role": "user", "content": "one"}, {"role": "assistant", "content": "a"}]
    history.append({"role": "user", "content": "two"})
    body = encode(settings, [json.dumps(history[0]).encode(), *history[1:]], mark=True)
    ttl = {"type": "ephemeral", "ttl": "1h"}
    assert markers(body) == [("tool 1", ttl), ("message 0", ttl), ("message 3", ttl)]
    assert body["messages"][3] == {
        "role": "user",
        "content": [{"type": "text", "text": "two", "cache_control": ttl}],
    }
    assert body["messages"][1:3] == history[1:3]  # earlier messages as they were
    assert list(body["tools"][1]) == ["type", "function", "cache_control"]


def test_an_assistant_message_that_only_calls_tools_leaves_the_marker_on_an_earlier_one() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "x", "arguments": "{}"}}
    history = [SYSTEM, {"role": "user", "content": "go"}]
    history.append({"role": "assistant", "content": None, "tool_calls": [call]})
    body = encode(ProviderSettings(model=CLAUDE), history, mark=True)
    assert [where for where, _ in markers(body)] == ["tool 1", "message 0", "message 1"]
    assert body["messages"][2] == history[2]


def test_without_marking_the_body_is_the_plain_one() -> None:
    history = [SYSTEM, {"role": "user", "content": "go"}]
    body = encode(ProviderSettings(model=CLAUDE), history)
    assert markers(body) == [] and body["messages"] == history and body["tools"] == TOOLS


@pytest.mark.parametrize(
    ("base_url", "named"),
    [("https://openrouter.ai/api/v1", True), ("http://127.0.0.1:4000/v1", False)],
)
def test_openrouter_requests_name_the_session_and_others_do_not(base_url: str, named: bool) -> None:
    body = encode(ProviderSettings(base_url=base_url), [SYSTEM], session="s-1")
    assert ("session_id" in body) is named
    if named:
        assert body["session_id"] == "s-1"
    assert "session_id" not in encode(ProviderSettings(base_url=base_url), [SYSTEM])


def test_prompt_cache_and_cache_ttl_are_read_and_a_wrong_value_is_named(tmp_path: Path) -> None:
    settings, problems = load_settings(
        tmp_path, {"provider": {"promptCache": "on", "cacheTtl": "1h"}}, env={}
    )
    assert (settings.provider.prompt_cache, settings.provider.cache_ttl) == ("on", "1h")
    assert problems == []
    settings, problems = load_settings(
        tmp_path, {"provider": {"promptCache": "always", "cacheTtl": "2h"}}, env={}
    )
    assert (settings.provider.prompt_cache, settings.provider.cache_ttl) == ("auto", "5m")
    assert any("provider.promptCache" in p and "auto, on, off" in p for p in problems)
    assert any("provider.cacheTtl" in p and "5m, 1h" in p for p in problems)


def long_task(provider: ScriptedProvider, workspace: Path) -> None:
    """A task that reads, fires a glob rule, edits and calls a subagent, then answers."""
    project_rules(workspace, python='---\nglobs: "*.py"\n---\nUse type hints.\n')
    (workspace / "AGENTS.md").write_text("Keep functions short.\n" * 40)
    (workspace / "notes.txt").write_text("notes\n")
    (workspace / "a.py").write_text("a = 1\n")
    provider.script(
        Calls([("n", "read_file", {"path": "notes.txt"})]),
        Calls([("a", "read_file", {"path": "a.py"})]),  # fires the rule
        Calls([("e", "edit", {"path": "a.py", "old_text": "a = 1", "new_text": "a = 2"})]),
        Calls([("t", "task", {"prompt": "look at notes.txt"})]),
        Calls([("sn", "read_file", {"path": "notes.txt"})]),  # the subagent's calls
        Text("notes read"),
        Text("done"),
    )


def turns_of(provider: ScriptedProvider, session_prompt: str) -> list[int]:
    """The indexes of the requests of the session whose first prompt is `session_prompt`."""
    return [
        index
        for index, body in enumerate(provider.requests)
        if unmarked(body["messages"][1])["content"] == session_prompt
    ]


async def test_a_claude_task_marks_three_breakpoints_and_moves_only_the_newest(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    long_task(provider, workspace)
    client = await agent(provider_extra={"model": CLAUDE})
    await prompt(client, "work")
    await stop_server(client)
    provider.script(Calls([("n2", "read_file", {"path": "notes.txt"})]), Text("again"))
    resumed = await agent(provider_extra={"model": CLAUDE})
    await prompt(resumed, "more")

    for body in provider.requests:
        found = markers(body)
        assert len(found) == 3 <= MAX_BREAKPOINTS
        assert all(mark == MARK for _, mark in found)
        last = len(body["messages"]) - 1
        tools = len(body["tools"])
        assert [where for where, _ in found] == [
            f"tool {tools - 1}",
            "message 0",
            f"message {last}",
        ]
    turns = turns_of(provider, "work")
    assert len(turns) == 7  # five turns before the resume, two after
    for before, after in itertools.pairwise(turns):
        earlier = provider.requests[before]["messages"]
        later = provider.requests[after]["messages"]
        # Everything the earlier call sent is the later one's prefix, only the newest
        # message's marker moved; earlier messages are sent as they were.
        assert [unmarked(m) for m in later[: len(earlier)]] == [unmarked(m) for m in earlier]
        assert later[1 : len(earlier) - 1] == earlier[1:-1]
        assert later[0] == earlier[0]


async def test_a_self_caching_model_gets_no_markers_and_each_body_extends_the_one_before(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    long_task(provider, workspace)
    client = await agent()
    await prompt(client, "work")
    await stop_server(client)
    provider.script(Calls([("n2", "read_file", {"path": "notes.txt"})]), Text("again"))
    resumed = await agent()
    await prompt(resumed, "more")

    assert not any(b"cache_control" in raw or b"session_id" in raw for raw in provider.raw_requests)
    turns = turns_of(provider, "work")
    assert len(turns) == 7
    for before, after in itertools.pairwise(turns):
        earlier, later = provider.raw_requests[before], provider.raw_requests[after]
        # Byte for byte: the whole of the earlier call's messages starts the later body.
        assert later.startswith(earlier[: messages_end(earlier)])
        assert later[messages_end(later) :] == earlier[messages_end(earlier) :]


async def test_prompt_cache_off_sends_no_markers_and_on_marks_any_model(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Text("a"), Text("b"))
    client = await agent(provider_extra={"model": CLAUDE, "promptCache": "off"})
    await prompt(client, "one")
    await stop_server(client)
    on = await agent(provider_extra={"promptCache": "on", "cacheTtl": "1h"})
    await prompt(on, "two")
    assert markers(provider.requests[0]) == []
    ttl = {"type": "ephemeral", "ttl": "1h"}
    assert [mark for _, mark in markers(provider.requests[1])] == [ttl] * 3


async def test_a_refusal_of_cache_control_is_sent_again_without_markers_and_none_follow(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("notes\n")
    refusal = {
        "error": {
            "message": "messages.0.content.0.cache_control: Extra inputs are not permitted",
            "type": "invalid_request_error",
        }
    }
    provider.script(
        Error(400, refusal),
        Calls([("n", "read_file", {"path": "notes.txt"})]),
        Text("done"),
    )
    client = await agent(provider_extra={"model": CLAUDE})
    result = await prompt(client, "work")
    assert result["status"] == "done"
    first, *rest = provider.requests
    assert len(markers(first)) == 3
    assert len(rest) == 2 and all(markers(body) == [] for body in rest)
    said = [m.message for m in client.log_messages if "cache_control" in m.message]
    assert len(said) == 1 and "provider.promptCache" in said[0]


async def test_another_400_is_not_sent_again(agent, provider: ScriptedProvider) -> None:
    provider.script(Error(400, {"error": {"message": "bad request: temperature"}}), Text("x"))
    client = await agent(provider_extra={"model": CLAUDE})
    result = await prompt(client, "work")
    assert result["status"] == "failed"
    assert len(provider.requests) == 1


async def test_on_openrouter_each_request_names_its_session_and_a_subagent_its_own(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("notes\n")
    provider.script(
        Calls([("t", "task", {"prompt": "look at notes.txt"})]),
        Text("notes read"),
        Text("done"),
    )
    host, port = provider.base_url.split("//")[1].split("/")[0].split(":")
    client = await agent(
        provider_extra={"baseUrl": "http://openrouter.ai/api/v1", "model": CLAUDE},
        env={"HTTP_PROXY": f"http://{host}:{port}", "NO_PROXY": "", "no_proxy": ""},
    )
    await prompt(client, "work")
    session = (await command(client, "seri.session.get", {}))["session"]["id"]
    named = [body.get("session_id") for body in provider.requests]
    assert named[0] == named[2] == session
    assert named[1] not in (None, session)  # the subagent's own session
    assert len(markers(provider.requests[1])) == 3
