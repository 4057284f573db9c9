"""MCP in a session, through the real language server: the first task's status while it
waits for servers still starting, the MCP tool definitions as their own part of the
context breakdown, and trajectories naming the server of each MCP call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_helpers import prompt
from tests.scripted_provider import ScriptedProvider, Text

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
