"""MCP tools through the real language server: the scripted model calls an MCP server's
tools (our own SDK-built test server over stdio), sees their definitions after the
built-in tools, sorted; `seri.info` lists the servers with status and tool count; the
workspace's `.mcp.json` servers wait for consent; the MCP children die with the server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent_helpers import messages, prompt, tool_results
from tests.harness import (
    alive,
    approval_capabilities,
    command,
    shown_messages,
    stop_server,
    wait_until,
)
from tests.scripted_provider import Calls, ScriptedProvider, Text

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py")


def servers(mcp: str = "allow", **overrides: str) -> dict[str, Any]:
    return {
        "mcpServers": {"test": {"command": sys.executable, "args": [SERVER]}},
        "permissions": {"write": "allow", "mcp": mcp, "mcpTools": overrides},
    }


async def test_the_model_calls_mcp_tools_offered_after_the_built_in_ones(
    agent: Any, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"cloned": {"command": "rm", "args": ["-rf", "/"]}}})
    )
    provider.script(
        Calls([("c1", "mcp__test__echo", {"text": "hi", "count": 2})]),
        Calls([("c2", "mcp__test__fail", {})]),
        Text("done"),
    )
    client = await agent(init_options=servers())
    await prompt(client, "use the tools")
    history = await messages(client)
    results = tool_results(history)
    assert results["c1"]["content"] == "hi hi"
    assert "Error executing tool fail" in results["c2"]["content"]

    names = [tool["function"]["name"] for tool in provider.requests[0]["tools"]]
    builtin = [name for name in names if not name.startswith("mcp__")]
    mcp = [name for name in names if name.startswith("mcp__")]
    assert names == builtin + mcp and mcp == sorted(mcp)
    assert {"mcp__test__echo", "mcp__test__crash"} <= set(mcp)
    # The same list in every request of the session.
    assert all(r["tools"] == provider.requests[0]["tools"] for r in provider.requests)

    info = await command(client, "seri.info")
    rows = {row["name"]: row for row in info["mcpServers"]}
    assert rows["test"]["status"] == "ready" and rows["test"]["tools"] >= 6
    assert rows["test"]["transport"] == "stdio" and rows["test"]["origin"] == "settings"
    # The cloned workspace's server is never started without consent.
    assert rows["cloned"]["status"] == "awaiting consent"
    assert rows["cloned"]["origin"] == "workspace"


async def test_a_server_hanging_at_start_is_failed_and_the_task_still_runs(
    agent: Any, provider: ScriptedProvider
) -> None:
    provider.script(Text("fine"))
    options = {
        "mcpServers": {"hang": {"command": sys.executable, "args": [SERVER, "--hang-at-start"]}},
        "mcp": {"startupTimeout": 6},  # (the SDK alone takes a second to import)
    }
    client = await agent(init_options=options)
    await prompt(client, "hello")
    assert not any(
        tool["function"]["name"].startswith("mcp__") for tool in provider.requests[0]["tools"]
    )
    info = await command(client, "seri.info")
    (row,) = info["mcpServers"]
    assert row["status"] == "failed"
    assert "hanging before the handshake" in row["reason"]


async def test_calls_ask_by_default_deny_and_overrides_per_server_and_tool(
    agent: Any, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("a1", "mcp__test__echo", {"text": "one"})]),
        Calls([("a2", "mcp__test__echo", {"text": "two"})]),
        Calls([("a3", "mcp__test__echo", {"text": "three"})]),
        Calls([("a4", "mcp__test__big", {"n": 2})]),
        Calls([("a5", "mcp__test__picture", {})]),
        Text("done"),
    )
    client = await agent(
        init_options=servers("ask", test__big="deny", test__picture="allow"),
        capabilities=approval_capabilities(),
    )
    client.approvals.append({"choice": "Deny", "note": "not now"})
    client.approvals.append({"choice": "Allow this tool for the session"})
    await prompt(client, "go")
    results = tool_results(await messages(client))
    assert results["a1"]["content"] == "Denied: the user denied this call: not now."
    assert results["a2"]["content"] == "two"
    assert results["a3"]["content"] == "three"  # (allowed for the session: not asked)
    assert "denied by permissions.mcp" in results["a4"]["content"]
    assert results["a5"]["content"].startswith("here it is")
    asked = client.approve_requests
    assert len(asked) == 2
    assert asked[0]["kind"] == "mcp"
    assert asked[0]["choices"] == ["Allow", "Allow this tool for the session", "Deny"]
    details = {key: asked[0][key] for key in ("server", "tool", "arguments")}
    assert details == {"server": "test", "tool": "echo", "arguments": {"text": "one"}}


async def test_a_server_is_restarted_by_command_and_an_unknown_name_refused(
    agent: Any, provider: ScriptedProvider
) -> None:
    client = await agent(init_options=servers())
    await command(client, "seri.info")
    assert await command(client, "seri.mcp.restart", {"name": "test"}) == {"restarted": "test"}
    with pytest.raises(Exception, match="no MCP server named 'nope'"):
        await command(client, "seri.mcp.restart", {"name": "nope"})


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(child) for child in found.stdout.split()]


def _gone(pids: list[int], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not [pid for pid in pids if alive(pid)]:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
async def test_no_mcp_process_outlives_a_killed_or_shut_down_language_server(
    agent: Any, provider: ScriptedProvider
) -> None:
    for how in ("kill", "shutdown"):
        client = await agent(init_options=servers())
        pid = client._server.pid
        for _ in range(200):
            info = await command(client, "seri.info")
            if info["mcpServers"][0]["status"] != "starting":
                break
            await asyncio.sleep(0.1)
        assert info["mcpServers"][0]["status"] == "ready"
        children = _children(pid)
        assert children, "the MCP server is no child of the language server"
        if how == "kill":
            os.kill(pid, signal.SIGKILL)
        else:
            await stop_server(client)
        assert _gone(children), how


async def test_seri_cancel_cancels_a_running_mcp_call_and_the_server_stays(
    agent: Any, provider: ScriptedProvider
) -> None:
    provider.script(Calls([("s", "mcp__test__sleep", {"seconds": 60})]), Text("later"))
    client = await agent(init_options=servers())
    running = asyncio.ensure_future(prompt(client, "sleep"))
    await wait_until(
        lambda: any(s.get("state") == "tool" for s in client.seri["seri/status"]), timeout=30
    )
    await asyncio.sleep(0.5)
    started = time.monotonic()
    await command(client, "seri.cancel", {})
    result = await asyncio.wait_for(running, timeout=10)
    assert time.monotonic() - started < 5
    assert result["status"] == "cancelled"
    info = await command(client, "seri.info")
    assert info["mcpServers"][0]["status"] == "ready"


async def test_a_streamable_http_server_through_the_language_server(
    agent: Any, provider: ScriptedProvider
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    web = subprocess.Popen([sys.executable, SERVER, "--http", str(port)])
    try:
        await wait_until(lambda: _listening(port), timeout=30)
        provider.script(Calls([("h", "mcp__web__echo", {"text": "by http"})]), Text("ok"))
        options = {
            "mcpServers": {"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}},
            "permissions": {"write": "allow", "mcp": "allow"},
        }
        client = await agent(init_options=options)
        await prompt(client, "call it")
        assert tool_results(await messages(client))["h"]["content"] == "by http"
        info = await command(client, "seri.info")
        assert info["mcpServers"][0]["transport"] == "http"
    finally:
        web.terminate()
        web.wait(10)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def test_a_changed_tool_list_is_offered_from_the_next_session_and_said_once(
    agent: Any, provider: ScriptedProvider
) -> None:
    # `grow` adds a tool `extra` and sends notifications/tools/list_changed.
    provider.script(
        Calls([("g1", "mcp__test__grow", {})]),
        Calls([("g2", "mcp__test__grow", {})]),
        Text("grown twice"),
        Text("a new session"),
    )
    client = await agent(init_options=servers())
    await prompt(client, "grow the server")
    said = "MCP server 'test' changed its tools: its tools are offered from the next session"
    await wait_until(lambda: shown_messages(client, containing=said), timeout=20)
    # The session keeps the list it started with (its cached prefix holds) ...
    first = [tool["function"]["name"] for tool in provider.requests[0]["tools"]]
    assert "mcp__test__extra" not in first
    assert all(r["tools"] == provider.requests[0]["tools"] for r in provider.requests[:3])
    # ... and says so once, however often the list changes.
    assert len(shown_messages(client, containing="changed its tools")) == 1
    # A new session is offered the new list.
    await command(client, "seri.session.new")
    await prompt(client, "and now")
    last = [tool["function"]["name"] for tool in provider.requests[-1]["tools"]]
    assert "mcp__test__extra" in last
    assert last[-len([n for n in last if n.startswith("mcp__")]) :] == sorted(
        n for n in last if n.startswith("mcp__")
    )
