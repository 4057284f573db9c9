"""`seri-lsp acp` as the clients people use drive it: every way a client goes away,
prompts sent while one runs, and the session list a client's picker shows.

Each test drives the real agent process, against the scripted provider on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acp_client import start_acp, until, within, write_config
from tests.harness import provider_config, server_env
from tests.scripted_provider import Hang, ScriptedProvider, Text


@pytest.fixture
def configured(profile_root: Path, provider: ScriptedProvider) -> Path:
    write_config(
        profile_root, {"provider": provider_config(provider), "permissions": {"write": "allow"}}
    )
    return profile_root


# --- a client going away ----------------------------------------------------------------------


class RawClient:
    """`seri-lsp acp` on pipes, spoken to line by line (so either pipe can be closed)."""

    def __init__(self, profile_root: Path, workspace: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "seri_lsp", "acp", "--profile-root", str(profile_root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workspace,
            env=server_env(),
        )
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any]) -> int:
        assert self.process.stdin is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return self.next_id

    def answer(self, request_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while line := self.process.stdout.readline():
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message
        raise AssertionError("the agent's output ended before its answer")

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.answer(self.send(method, params))

    def exit_status(self) -> tuple[int, str]:
        try:
            self.process.wait(timeout=20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        assert self.process.stderr is not None
        return self.process.returncode, self.process.stderr.read().decode()


def go_away(client: RawClient, how: str) -> None:
    process = client.process
    assert process.stdin is not None and process.stdout is not None
    if how in ("stdin", "both"):
        process.stdin.close()
    if how in ("stdout", "both"):
        process.stdout.close()
    if how == "stdout":
        # The agent learns its output has gone when it next writes: ask it something.
        time.sleep(0.1)
        with_reply = {"jsonrpc": "2.0", "id": 99, "method": "session/list", "params": {}}
        with contextlib.suppress(BrokenPipeError):  # it may have gone already
            process.stdin.write(json.dumps(with_reply).encode() + b"\n")
            process.stdin.flush()
    if how == "SIGTERM":
        process.send_signal(signal.SIGTERM)
    if how == "SIGHUP":
        process.send_signal(signal.SIGHUP)


@pytest.mark.parametrize("how", ["stdin", "stdout", "both", "SIGTERM", "SIGHUP"])
async def test_however_the_client_goes_the_agent_exits_0_and_keeps_the_session(
    configured: Path, workspace: Path, provider: ScriptedProvider, how: str
) -> None:
    provider.script(Text("Kept."))
    client = RawClient(configured, workspace)
    client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session_id = client.call("session/new", {"cwd": str(workspace), "mcpServers": []})["result"][
        "sessionId"
    ]
    answer = client.call(
        "session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": "keep this"}]},
    )
    assert answer["result"]["stopReason"] == "end_turn"
    go_away(client, how)
    code, errors = await asyncio.to_thread(client.exit_status)
    assert code == 0, errors
    assert "Traceback" not in errors
    async with start_acp(configured, workspace) as again:
        await again.load(session_id)  # its lock was let go
        assert again.client.prompts(session_id) == ["keep this"]
        assert again.client.text(session_id) == "Kept."


# --- prompts sent while one runs -------------------------------------------------------------


async def test_a_prompt_sent_while_one_runs_is_queued_and_runs_after_it_in_order(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    first = Hang(then=Text("first answer"))
    provider.script(first, Text("second answer"), Text("third answer"))
    try:
        async with start_acp(configured, workspace) as agent:
            session_id = await agent.new()
            running = asyncio.ensure_future(agent.prompt(session_id, "first"))
            await until(lambda: provider.requests)
            second = asyncio.ensure_future(agent.prompt(session_id, "second"))
            await asyncio.sleep(0.2)
            third = asyncio.ensure_future(agent.prompt(session_id, "third"))
            await asyncio.sleep(0.2)
            assert not second.done() and not third.done()
            first.release.set()
            responses = [await within(t) for t in (running, second, third)]
    finally:
        first.release.set()
    users = [str(r["messages"][-1]["content"]) for r in provider.chat_requests()]
    assert [r.stop_reason for r in responses] == ["end_turn"] * 3
    assert [u[-6:].strip() for u in users] == ["first", "second", "third"]


async def test_cancel_ends_the_running_prompt_and_every_queued_one(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    stalled = Hang()
    provider.script(stalled, Text("never asked for"))
    try:
        async with start_acp(configured, workspace) as agent:
            session_id = await agent.new()
            running = asyncio.ensure_future(agent.prompt(session_id, "first"))
            await until(lambda: provider.requests)
            queued = [asyncio.ensure_future(agent.prompt(session_id, text)) for text in ("b", "c")]
            await asyncio.sleep(0.3)
            await agent.conn.cancel(session_id=session_id)
            responses = [await within(t) for t in (running, *queued)]
            # The session goes on: the next prompt runs.
            provider.script(Text("after"))
            after = await agent.prompt(session_id, "after the cancel")
    finally:
        stalled.release.set()
    assert [r.stop_reason for r in responses] == ["cancelled"] * 3
    assert after.stop_reason == "end_turn"
    assert len(provider.requests) == 2  # the queued prompts never reached the model


# --- the session list ----------------------------------------------------------------------------


async def test_the_session_list_leaves_out_empty_sessions_and_titles_every_one(
    configured: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(Text("ok"))
    async with start_acp(configured, workspace) as agent:
        await agent.new()  # never gets a message
        used = await agent.new()
        await agent.prompt(used, "rename the parser\nand its tests")
        listed = await within(agent.conn.list_sessions(cwd=str(workspace)))
    assert [s.session_id for s in listed.sessions] == [used]
    [info] = listed.sessions
    assert info.title and info.title.startswith("rename the parser")
