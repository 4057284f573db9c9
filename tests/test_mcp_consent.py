"""Consent for the workspace's `.mcp.json` servers, through the real language server:
asked once at start-up in the background (`seri/approve`, kind `mcpServers`) naming each
server and its command line; "Allow" is kept per project and starts them, "Not now"
holds until the next start, "Never for this project" is kept and never asks again;
`seri.mcp.consent` revokes what was kept."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_helpers import prompt
from tests.harness import HOLD, approval_capabilities, command, stop_server, wait_until
from tests.scripted_provider import ScriptedProvider, Text

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py")


@pytest.fixture
def cloned(workspace: Path) -> Path:
    """A workspace whose `.mcp.json` configures our test server."""
    config = {"mcpServers": {"repo": {"command": sys.executable, "args": [SERVER]}}}
    (workspace / ".mcp.json").write_text(json.dumps(config))
    return workspace


async def _status(client: Any, timeout: float = 30) -> str:
    async def row() -> dict[str, Any]:
        info = await command(client, "seri.info")
        return {r["name"]: r for r in info["mcpServers"]}["repo"]

    for _ in range(int(timeout * 10)):
        status = (await row())["status"]
        if status != "starting":
            return str(status)
        await asyncio.sleep(0.1)
    return "starting"


async def test_allow_is_kept_per_project_and_starts_the_servers_then_revoked(
    agent: Any, cloned: Path, profile_root: Path
) -> None:
    client = await agent(capabilities=approval_capabilities())
    client.approvals.append({"choice": "Allow"})
    await wait_until(lambda: client.approve_requests, timeout=20)
    asked = client.approve_requests[0]
    assert asked["kind"] == "mcpServers" and asked["sessionId"] is None
    assert asked["choices"] == ["Allow", "Not now", "Never for this project"]
    assert asked["servers"] == [
        {"name": "repo", "transport": "stdio", "command": f"{sys.executable} {SERVER}"}
    ]
    assert SERVER in asked["message"]
    assert await _status(client) == "ready"
    kept = json.loads((profile_root / "mcp-consent.json").read_text())
    assert list(kept) == [str(cloned)]
    await stop_server(client)

    # The next start does not ask: the agreement is kept.
    client = await agent(capabilities=approval_capabilities())
    assert await _status(client) == "ready"
    assert client.approve_requests == []

    # Revoked: stopped, and the next start asks again.
    answer = await command(client, "seri.mcp.consent", {"revoke": True})
    assert answer["revoked"] is True
    assert {r["name"]: r for r in answer["servers"]}["repo"]["status"] == "awaiting consent"
    await stop_server(client)
    client = await agent(capabilities=approval_capabilities())
    await wait_until(lambda: client.approve_requests, timeout=20)
    assert await _status(client) == "awaiting consent"


async def test_not_now_holds_until_the_next_start_and_never_is_kept(
    agent: Any, cloned: Path
) -> None:
    client = await agent(capabilities=approval_capabilities())
    client.approvals.append({"choice": "Not now"})
    await wait_until(lambda: client.approve_requests, timeout=20)
    await asyncio.sleep(0.5)
    assert await _status(client) == "awaiting consent"
    # (not started by a restart either)
    await command(client, "seri.mcp.restart", {"name": "repo"})
    assert await _status(client) == "awaiting consent"
    await stop_server(client)

    client = await agent(capabilities=approval_capabilities())
    client.approvals.append({"choice": "Never for this project"})
    await wait_until(lambda: client.approve_requests, timeout=20)
    await asyncio.sleep(0.5)
    assert await _status(client) == "awaiting consent"
    await stop_server(client)

    client = await agent(capabilities=approval_capabilities())
    await asyncio.sleep(2)
    assert client.approve_requests == []
    assert await _status(client) == "awaiting consent"
    # Asked again on demand, "Allow" starts them at once.
    client.approvals.append({"choice": "Allow"})
    answer = await command(client, "seri.mcp.consent", {})
    assert answer["answer"] == "Allow"
    assert await _status(client) == "ready"


async def test_an_unanswered_question_never_blocks_a_task(
    agent: Any, provider: ScriptedProvider, cloned: Path
) -> None:
    provider.script(Text("hi"))
    client = await agent(capabilities=approval_capabilities())
    client.approvals.append(HOLD)
    await wait_until(lambda: client.approve_requests, timeout=20)
    result = await asyncio.wait_for(prompt(client, "hello"), timeout=30)
    assert result["status"] != "cancelled"
    assert await _status(client) == "awaiting consent"


async def test_servers_from_the_workspaces_own_editor_settings_wait_for_consent_too(
    agent: Any, workspace: Path
) -> None:
    # VS Code sends the servers of .vscode/settings.json (which come with a cloned
    # project, as .mcp.json does) as `workspaceMcpServers`, apart from the user's.
    entry = {"command": sys.executable, "args": [SERVER]}
    client = await agent(
        capabilities=approval_capabilities(),
        init_options={"workspaceMcpServers": {"repo": entry}, "mcpServers": {"mine": entry}},
    )
    client.approvals.append({"choice": "Not now"})
    await wait_until(lambda: client.approve_requests, timeout=20)
    asked = client.approve_requests[0]
    assert asked["kind"] == "mcpServers"
    assert [server["name"] for server in asked["servers"]] == ["repo"]
    assert "MCP servers configured in this workspace's editor settings: repo" in asked["message"]
    assert await _status(client) == "awaiting consent"
    rows = {r["name"]: r for r in (await command(client, "seri.info"))["mcpServers"]}
    assert rows["repo"]["origin"] == "workspace"
    assert rows["repo"]["configuredIn"] == "the workspace's mcpServers setting"
    assert rows["mine"]["origin"] == "settings"
