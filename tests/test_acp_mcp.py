"""The MCP servers an ACP client passes in `session/new` / `session/load`: started for
that session (no consent asked), their tools called by the scripted model through the
client's permission question, a server that fails to start told once in the session,
and none of them outliving the agent."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from acp.schema import EnvVariable, McpServerStdio, SseMcpServer

from tests.acp_client import start_acp, until, within, write_config
from tests.harness import alive, provider_config
from tests.scripted_provider import Calls, ScriptedProvider, Text

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py")


@pytest.fixture
def configured(profile_root: Path, provider: ScriptedProvider) -> Path:
    write_config(
        profile_root,
        {"provider": provider_config(provider), "mcp": {"startupTimeout": 10}},
    )
    return profile_root


def stdio(name: str, *args: str, command: str = sys.executable) -> McpServerStdio:
    return McpServerStdio(
        name=name,
        command=command,
        args=list(args),
        env=[EnvVariable(name="SERI_TEST_MCP", value="1")],
    )


def tool_result(request: dict[str, Any], call_id: str) -> str:
    found = [m for m in request["messages"] if m.get("tool_call_id") == call_id]
    assert found, f"no tool result {call_id} in the request"
    content = found[0]["content"]
    return content if isinstance(content, str) else str(content)


def notes(agent: Any, session_id: str) -> list[str]:
    return [
        u.content.text
        for u in agent.client.of(session_id, "agent_message_chunk")
        if (u.field_meta or {}).get("seri", {}).get("kind") == "warning"
    ]


async def test_a_client_passed_server_s_tool_is_called_and_its_result_reaches_the_model(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("c1", "mcp__client__echo", {"text": "hi", "count": 2})]),
        Text("done"),
    )
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new(mcp_servers=[stdio("client", SERVER)])
        agent.client.answers.append("allow_once")  # permissions.mcp: ask (the default)
        response = await agent.prompt(session_id, "echo twice")
        questions = list(agent.client.questions)
    assert response.stop_reason == "end_turn"
    names = [tool["function"]["name"] for tool in provider.requests[0]["tools"]]
    mcp = [name for name in names if name.startswith("mcp__")]
    assert mcp == sorted(mcp) and {"mcp__client__echo", "mcp__client__fail"} <= set(mcp)
    assert names[-len(mcp) :] == mcp  # after the built-in tools
    assert len(questions) == 1  # the approval, asked of the client
    assert tool_result(provider.requests[1], "c1") == "hi hi"


async def test_a_client_passed_server_that_fails_is_told_once_and_the_session_goes_on(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("still here"))
    servers = [
        stdio("broken", command="/nonexistent/seri-no-such-mcp-server"),
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
    ]
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new(mcp_servers=servers)
        said = await until(
            lambda: [n for n in notes(agent, session_id) if "'broken'" in n], timeout=30
        )
        response = await agent.prompt(session_id, "hello")
        text = agent.client.text(session_id)
        told = notes(agent, session_id)
    assert response.stop_reason == "end_turn" and "still here" in text
    assert len(said) == 1 and "did not start" in said[0]
    assert len([n for n in told if "'broken'" in n]) == 1  # once, not again at the turn
    assert any("'old'" in n and "sse" in n for n in told)
    assert not any(name.startswith("mcp__") for name in _tool_names(provider))


def _tool_names(provider: ScriptedProvider) -> list[str]:
    return [tool["function"]["name"] for tool in provider.requests[0]["tools"]]


def _descendants(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    children = [int(child) for child in found.stdout.split()]
    return children + [d for child in children for d in _descendants(child)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and pgrep")
async def test_a_loaded_session_s_client_server_runs_and_dies_with_the_agent(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("ok"))
    async with start_acp(configured, workspace) as agent:
        session_id = await agent.new()
    # Loaded in another connection, with the client's server this time.
    async with start_acp(configured, workspace) as agent:
        await within(
            agent.conn.load_session(
                cwd=str(workspace), session_id=session_id, mcp_servers=[stdio("client", SERVER)]
            )
        )
        await agent.prompt(session_id, "hello")  # (the first turn waits for the server)
        servers = await until(lambda: _descendants(agent.pid))
    assert any(name.startswith("mcp__client__") for name in _tool_names(provider))
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in servers if alive(pid)]


def test_the_client_s_entries_become_server_configurations() -> None:
    from acp.schema import HttpHeader, HttpMcpServer

    from seri_lsp.acp.mcp import client_servers
    from seri_lsp.mcp.config import HttpServer, Origin, StdioServer

    servers, problems = client_servers(
        [
            HttpMcpServer(
                type="http",
                name="tracker",
                url="https://mcp.example.com/mcp",
                headers=[HttpHeader(name="Authorization", value="Bearer x")],
            ),
            stdio("git", "serve"),
            McpServerStdio(name="empty", command=" ", args=[], env=[]),
            HttpMcpServer(type="http", name="ftp", url="ftp://example.com", headers=[]),
            SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
        ]
    )
    assert [s.name for s in servers] == ["git", "tracker"]
    assert all(s.origin is Origin.CLIENT for s in servers)
    assert servers[0].spec == StdioServer(sys.executable, ("serve",), {"SERI_TEST_MCP": "1"})
    assert servers[1].spec == HttpServer(
        "https://mcp.example.com/mcp", {"Authorization": "Bearer x"}
    )
    assert len(problems) == 3
    assert "'empty'" in problems[0] and "'ftp'" in problems[1] and "sse" in problems[2]
