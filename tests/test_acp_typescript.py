"""`seri-lsp acp` driven by the official ACP TypeScript SDK's client (npm
`@agentclientprotocol/sdk`, pinned below), a client this project did not write.

One Node process (tests/acp_ts/client.mjs) does every step, so the test stays quick:
initialize, a new session, a prompt whose tool call reads through the client's fs, a
cancelled prompt, the session list, a load that replays the conversation, and the SDK's
disconnect (both pipes closed) after which the agent exits 0; between them, a new
session with a client-passed MCP server (our stdio test server) whose tool the model
calls. The SDK is installed once
with npm into the test cache the VS Code tests use (~/.cache/seri-vscode-test, or
$SERI_TEST_CACHE), as `acp-sdk-<version>/node_modules`; without Node.js and npm the test
is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acp_client import write_config
from tests.harness import provider_config, server_env
from tests.scripted_provider import Calls, Hang, ScriptedProvider, Text

SDK_VERSION = "2.4.0"
CLIENT = Path(__file__).parent / "acp_ts" / "client.mjs"


def cache_dir() -> Path:
    base = os.environ.get("SERI_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "seri-vscode-test"
    )
    return Path(base)


def sdk_dir() -> Path:
    """A folder whose node_modules holds the pinned SDK (installed there when missing)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the TypeScript SDK test needs Node.js and npm on PATH")
    folder = cache_dir() / f"acp-sdk-{SDK_VERSION}"
    if not (folder / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(folder),
                f"@agentclientprotocol/sdk@{SDK_VERSION}",
            ],
            check=True,
            timeout=300,
        )
    return folder


def test_the_typescript_sdk_client_drives_a_whole_session_and_disconnects(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    write_config(
        profile_root, {"provider": provider_config(provider), "permissions": {"write": "allow"}}
    )
    (workspace / "notes.txt").write_text("the notes on disk\n")
    stalled = Hang()
    provider.script(
        Calls([("r1", "read_file", {"path": "notes.txt"})]),
        Text("Read them."),
        stalled,
        Calls([("m1", "mcp__tsmcp__echo", {"text": "ts-echo-ok"})]),
        Text("The server echoed."),
    )
    mcp_server = [
        sys.executable,
        str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py"),
    ]
    agent = [sys.executable, "-m", "seri_lsp", "acp", "--profile-root", str(profile_root)]
    try:
        run = subprocess.run(
            ["node", str(CLIENT), str(sdk_dir()), str(workspace), "--", *agent],
            capture_output=True,
            text=True,
            timeout=120,
            env={**server_env(), "SERI_TEST_MCP_SERVER": json.dumps(mcp_server)},
        )
    finally:
        stalled.release.set()
    assert run.returncode == 0, run.stderr
    steps = {s["step"]: s for s in map(json.loads, run.stdout.splitlines())}
    assert steps["initialize"]["name"] == "seri-lsp" and steps["initialize"]["loadSession"]
    session_id = steps["new"]["sessionId"]
    prompt = steps["prompt"]
    assert prompt["stopReason"] == "end_turn"
    assert prompt["reads"] == [str(workspace / "notes.txt")]  # through the client's fs
    assert prompt["toolCalls"] == 1 and prompt["reply"] == "Read them."
    # The model read the editor's buffer, not the disk.
    assert "unsaved notes in the editor" in json.dumps(provider.chat_requests()[1]["messages"])
    assert steps["cancel"]["stopReason"] == "cancelled"
    assert steps["list"]["sessions"] == [{"sessionId": session_id, "title": "read notes.txt"}]
    assert steps["load"]["user"] == "read notes.txttake your time"
    assert "Read them." in steps["load"]["agent"]
    mcp = steps["mcp"]
    assert mcp["stopReason"] == "end_turn" and mcp["reply"] == "The server echoed."
    assert len(mcp["toolCalls"]) == 1
    # The MCP tool's result reached the model.
    last = provider.chat_requests()[-1]["messages"]
    assert any(m.get("tool_call_id") == "m1" and "ts-echo-ok" in str(m["content"]) for m in last)
    assert steps["exit"] == {"step": "exit", "code": 0, "signal": None}
    assert "Traceback" not in run.stderr
