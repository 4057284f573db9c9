"""MCP in a session, through the real language server: the first task's status while it
waits for servers still starting, the MCP tool definitions as their own part of the
context breakdown, and trajectories naming the server of each MCP call."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from seri_lsp.context.reports import context_text
from tests.agent_helpers import prompt
from tests.harness import command
from tests.scripted_provider import Calls, ScriptedProvider, Text
from tests.trajectory_helpers import of_kind, recording

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py")


async def test_the_first_task_says_which_servers_it_waits_for(
    agent: Any, provider: ScriptedProvider
) -> None:
    provider.script(Text("fine"))
    options = {
        "mcpServers": {"hang": {"command": sys.executable, "args": [SERVER, "--hang-at-start"]}},
        "mcp": {"startupTimeout": 4},
    }
    client = await agent(init_options=options)
    await prompt(client, "hello")
    states = [(s["state"], s.get("detail")) for s in client.seri["seri/status"]]
    assert ("mcp", "hang") in states
    assert states.index(("mcp", "hang")) < [s for s, _ in states].index("model")


async def test_the_context_breakdown_shows_each_servers_tool_definitions(
    agent: Any, provider: ScriptedProvider
) -> None:
    provider.script(Text("fine"))
    options = {"mcpServers": {"test": {"command": sys.executable, "args": [SERVER]}}}
    client = await agent(init_options=options)
    await prompt(client, "hello")
    context = await command(client, "seri.session.context", {})
    parts = context["parts"]
    mcp = [part for part in parts if part["kind"] == "mcpTools"]
    sent = [t for t in provider.requests[0]["tools"] if t["function"]["name"].startswith("mcp__")]
    chars = sum(len(json.dumps(tool, ensure_ascii=False)) for tool in sent)
    assert mcp == [{"kind": "mcpTools", "name": "test", "tokens": -(-chars // 4)}]
    assert parts[-1] == mcp[0]  # (after the others, which add up to the local count)
    assert sum(p["tokens"] for p in parts[:-1]) == context["localTokens"]
    assert "MCP tools of test (each request)" in context_text(context)  # (`/context`)


async def test_trajectories_record_mcp_calls_with_the_server_name(
    agent: Any, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("m1", "mcp__test__echo", {"text": "hi"}), ("r1", "read_file", {"path": "x"})]),
        Text("done"),
    )
    options = {
        "mcpServers": {"test": {"command": sys.executable, "args": [SERVER]}},
        "permissions": {"write": "allow", "mcp": "allow"},
    }
    client = await agent(init_options=options)
    await prompt(client, "use it")
    rec = await recording(client)
    calls = {call["id"]: call for call in of_kind(rec, "tool_call")}
    assert calls["m1"]["name"] == "mcp__test__echo" and calls["m1"]["server"] == "test"
    assert "server" not in calls["r1"]
    results = {result["id"]: result for result in of_kind(rec, "tool_result")}
    assert results["m1"]["server"] == "test" and results["m1"]["content"] == "hi"
    assert "server" not in results["r1"]
