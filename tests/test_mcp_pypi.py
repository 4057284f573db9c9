"""A real MCP server nobody here wrote: `mcp-server-git` from PyPI (the reference git
server of the MCP project), configured in the workspace's `.mcp.json` as its users write
it, agreed to, and called by the scripted model through the real language server: its
tools offered as `mcp__git__*`, sorted after the built-in ones; a call that reads the
repository's status, one whose arguments the server refuses (an error result, the task
goes on), and the approval card naming the server's tool and arguments."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent_helpers import messages, prompt, tool_results
from tests.harness import approval_capabilities, command, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text

pytestmark = pytest.mark.slow


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repository(workspace: Path) -> Path:
    """The workspace as a git repository with one commit, a changed file and a new one,
    and a `.mcp.json` that runs mcp-server-git on it."""
    git(workspace, "init", "-q", "-b", "main")
    (workspace / "app.py").write_text("print('one')\n")
    git(workspace, "add", "app.py")
    git(workspace, "commit", "-q", "-m", "First version of the app")
    (workspace / "app.py").write_text("print('two')\n")
    (workspace / "notes.txt").write_text("new\n")
    config = {
        "mcpServers": {
            "git": {
                "command": sys.executable,
                "args": ["-m", "mcp_server_git", "--repository", str(workspace)],
            }
        }
    }
    (workspace / ".mcp.json").write_text(json.dumps(config))
    return workspace


async def _settled(client: Any, timeout: float = 60) -> dict[str, Any]:
    """The git server's `seri.info` row once it is ready or failed."""
    deadline = time.monotonic() + timeout
    while True:
        info = await command(client, "seri.info")
        row: dict[str, Any] = {r["name"]: r for r in info["mcpServers"]}["git"]
        if row["status"] in ("ready", "failed") or time.monotonic() > deadline:
            return row
        await asyncio.sleep(0.1)


async def test_mcp_server_git_from_pypi_answers_the_model_after_consent(
    agent: Any,
    provider: ScriptedProvider,
    repository: Path,
) -> None:
    provider.script(
        Calls([("s1", "mcp__git__git_status", {"repo_path": str(repository)})]),
        Calls([("l1", "mcp__git__git_log", {"repo_path": str(repository), "max_count": 5})]),
        Calls([("d1", "mcp__git__git_diff_unstaged", {"repo_path": str(repository)})]),
        Calls([("b1", "mcp__git__git_show", {"repo_path": str(repository)})]),
        Text("The app prints two now; notes.txt is new."),
    )
    client = await agent(
        capabilities=approval_capabilities(), init_options={"permissions": {"write": "allow"}}
    )
    # The workspace's servers wait for the user: the question names the command line.
    client.approvals.append({"choice": "Allow"})
    await wait_until(lambda: client.approve_requests, timeout=30)
    consent = client.approve_requests[0]
    assert consent["kind"] == "mcpServers"
    assert consent["servers"][0]["command"] == (
        f"{sys.executable} -m mcp_server_git --repository {repository}"
    )
    row = await _settled(client)
    assert row["status"] == "ready", row
    assert row["origin"] == "workspace" and row["tools"] >= 5

    # Each call is asked about (permissions.mcp defaults to ask) and allowed.
    client.approvals.extend([{"choice": "Allow"}] * 4)
    await prompt(client, "what changed in this repository?")
    asked = [q for q in client.approve_requests if q["kind"] == "mcp"]
    assert [(q["server"], q["tool"]) for q in asked] == [
        ("git", "git_status"),
        ("git", "git_log"),
        ("git", "git_diff_unstaged"),
        ("git", "git_show"),
    ]
    assert asked[0]["arguments"] == {"repo_path": str(repository)}

    results = tool_results(await messages(client))
    status = results["s1"]["content"]
    assert "app.py" in status and "notes.txt" in status, status
    assert "First version of the app" in results["l1"]["content"]
    assert "-print('one')" in results["d1"]["content"]
    assert "+print('two')" in results["d1"]["content"]
    # git_show without its required `revision`: the server's refusal is an error result
    # and the task went on to its answer.
    assert results["b1"]["isError"] and "revision" in results["b1"]["content"]

    names = [tool["function"]["name"] for tool in provider.requests[0]["tools"]]
    git_tools = [name for name in names if name.startswith("mcp__git__")]
    assert git_tools == sorted(git_tools) and names[-len(git_tools) :] == git_tools
    assert {"mcp__git__git_status", "mcp__git__git_log", "mcp__git__git_commit"} <= set(git_tools)
    assert all(request["tools"] == provider.requests[0]["tools"] for request in provider.requests)
