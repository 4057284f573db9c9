"""MCP tools as the agent's tools: names fit for providers and stable, clashes told
apart in a fixed order, offered after the built-in tools sorted by name, results cut
head and tail; and through a real Toolbox against our own SDK-built test server."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from seri_lsp.agent.disk import ToolThreads
from seri_lsp.agent.tools import Toolbox, WriteGate
from seri_lsp.agent.workspace import Workspace
from seri_lsp.host import Host
from seri_lsp.mcp.config import Origin, ServerConfig, StdioServer
from seri_lsp.mcp.manager import McpManager, McpTool
from seri_lsp.mcp.tools import agent_tools, cut_middle, tool_names
from seri_lsp.store.messages import ToolCall

SERVER = str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py")
ALLOWED = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def tool(server: str, name: str) -> McpTool:
    return McpTool(server, name, "", {"type": "object"})


def test_names_are_fit_for_providers_sorted_and_clashes_resolved_in_a_fixed_order() -> None:
    tools = [
        tool("git", "status"),
        tool("my server", "do.it"),
        tool("my_server", "do_it"),
        tool("a", "x" * 100),
        tool("a", "x" * 100 + "y"),
    ]
    named = tool_names(tools)
    assert list(named) == sorted(named)
    assert all(ALLOWED.match(name) for name in named)
    assert named["mcp__git__status"].name == "status"
    # "my server"/"do.it" and "my_server"/"do_it" both become mcp__my_server__do_it:
    # the first by (server, name) keeps it, the other gets _2, whatever the input order.
    assert named["mcp__my_server__do_it"].server == "my server"
    assert named["mcp__my_server__do_it_2"].server == "my_server"
    assert tool_names(list(reversed(tools))) == named
    long_names = [name for name in named if name.startswith("mcp__a__")]
    assert len(long_names) == 2 and all(len(name) == 64 for name in long_names)


def test_a_large_result_is_cut_head_and_tail_with_its_size_said() -> None:
    text = "".join(f"{i:06d}\n" for i in range(100_000))
    cut = cut_middle(text, 1000)
    assert cut.startswith("000000\n") and cut.endswith("099999\n")
    assert f"the result was {len(text):,} characters" in cut
    assert cut_middle("short", 1000) == "short"


class _Host(Host):
    pass


@pytest.mark.slow
async def test_a_toolbox_offers_mcp_tools_after_its_own_and_runs_them(tmp_path: Path) -> None:
    spec = StdioServer(sys.executable, (SERVER,))
    manager = McpManager([ServerConfig("test srv", Origin.SETTINGS, "test", spec)])
    manager.start_all()
    await manager.wait_started()
    try:
        host = _Host()
        toolbox = Toolbox(
            Workspace([tmp_path]),
            host,
            WriteGate("allow", host),
            ToolThreads(),
            external=agent_tools(manager),
        )
        builtin = ["read_file", "write_file", "edit", "list_dir", "grep"]
        assert toolbox.names[:5] == builtin
        mcp_names = toolbox.names[5:]
        assert mcp_names == sorted(mcp_names)
        assert "mcp__test_srv__echo" in mcp_names
        schema = next(
            s for s in toolbox.schemas() if s["function"]["name"] == "mcp__test_srv__echo"
        )
        assert schema["function"]["description"].endswith("Say the text back, count times.")
        assert schema["function"]["parameters"]["required"] == ["text"]

        def call(name: str, args: object) -> ToolCall:
            return ToolCall("c1", name, json.dumps(args))

        echoed = await toolbox.run(call("mcp__test_srv__echo", {"text": "yo", "count": 3}))
        assert (echoed.content, echoed.is_error) == ("yo yo yo", False)
        failed = await toolbox.run(call("mcp__test_srv__fail", {}))
        assert failed.is_error
        big = await toolbox.run(call("mcp__test_srv__big", {"n": 100_000}))
        assert "characters cut from the middle" in big.content
        assert big.content.startswith("line 0\n") and big.content.endswith("line 99999")
        await manager.stop_all()
        down = await toolbox.run(call("mcp__test_srv__echo", {"text": "x"}))
        assert down.is_error and "is not available" in down.content
    finally:
        await manager.stop_all()
