"""The engine's richer events for the ACP face (thinking as it streams, a tool call
starting, a file a tool changed) leave the language server and the terminal as they were.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from tests.acp_client import write_config
from tests.agent_helpers import prompt
from tests.harness import SERI_NOTIFICATIONS, provider_config, server_env, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text

# What the LSP contract lets the server send (besides answers and progress requests).
CONTRACT = {*SERI_NOTIFICATIONS, "window/logMessage", "window/showMessage", "$/progress"}


def busy_script(provider: ScriptedProvider) -> None:
    """A task that thinks, writes a file, edits it and answers."""
    provider.script(
        Calls([("w1", "write_file", {"path": "a.py", "content": "x = 1\n"})]),
        Calls([("e1", "edit", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"})]),
        Text("Done.", thinking="Let me think about it."),
    )


async def test_the_language_server_sends_only_what_its_contract_names(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await agent()
    seen: list[str] = []
    handle = client.protocol._handle_notification

    def spy(method: str, params: Any) -> Any:
        seen.append(method)
        return handle(method, params)

    client.protocol._handle_notification = spy
    busy_script(provider)
    result = await prompt(client, "write and edit a.py")
    await wait_until(lambda: client.seri["seri/turnEnded"])  # the task's last notification
    assert result["status"] == "done", result
    assert (workspace / "a.py").read_text() == "x = 2\n"
    assert set(seen) <= CONTRACT, set(seen) - CONTRACT
    deltas = "".join(d["text"] for d in client.seri["seri/delta"])
    assert deltas == "Done."  # the thinking is not streamed as reply text


async def test_the_terminal_prints_the_same_conversation(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    write_config(
        profile_root, {"provider": provider_config(provider), "permissions": {"write": "allow"}}
    )
    busy_script(provider)
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "seri_lsp", "run", "write and edit a.py"),
        "--profile-root",
        str(profile_root),
        cwd=workspace,
        env=server_env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    printed = out.decode()
    assert "-> write_file" in printed and "-> edit" in printed and "[seri] Done." in printed
    assert "Let me think" not in printed
    assert (workspace / "a.py").read_text() == "x = 2\n"
