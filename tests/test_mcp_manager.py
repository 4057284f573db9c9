"""The MCP manager against real server processes: our own SDK-built test server over
stdio and streamable HTTP (tools with schemas, a failing one, a picture, a crash, a
sleep), one that hangs at start, one that exits at once; the guard that keeps them from
outliving the language server."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seri_lsp.mcp.config import HttpServer, Origin, ServerConfig, StdioServer
from seri_lsp.mcp.manager import MAX_RESTARTS, McpManager
from tests.harness import alive

pytestmark = pytest.mark.slow

SERVER = str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py")


def stdio(name: str, *extra: str) -> ServerConfig:
    return ServerConfig(
        name, Origin.SETTINGS, "test", StdioServer(sys.executable, (SERVER, *extra))
    )


async def started(*servers: ServerConfig, **kwargs: float) -> McpManager:
    manager = McpManager(servers, **kwargs)
    manager.start_all()
    await manager.wait_started()
    return manager


async def test_a_stdio_server_lists_its_tools_with_schemas_and_answers_calls() -> None:
    manager = await started(stdio("t"))
    try:
        state = manager.states["t"]
        assert state.status == "ready", state.reason
        tools = {tool.name: tool for tool in state.tools}
        assert [tool.name for tool in state.tools] == sorted(tools)
        assert {"echo", "fail", "picture", "big", "sleep", "crash"} <= set(tools)
        assert tools["echo"].description == "Say the text back, count times."
        assert tools["echo"].input_schema["required"] == ["text"]
        echoed = await manager.call("t", "echo", {"text": "hi", "count": 2})
        assert (echoed.text, echoed.is_error) == ("hi hi", False)
        failed = await manager.call("t", "fail", {})
        assert failed.is_error and "fail" in failed.text
        picture = await manager.call("t", "picture", {})
        assert picture.text == "here it is\n[image content: image/png, 100 bytes, not shown]"
    finally:
        await manager.stop_all()


async def test_a_server_hanging_at_start_is_failed_with_its_stderr_and_others_start() -> None:
    t0 = time.monotonic()
    # (8 s: the other server, a Python process importing the SDK, must start within it
    # on a loaded machine too)
    manager = await started(stdio("hang", "--hang-at-start"), stdio("ok"), startup_timeout=8)
    try:
        assert time.monotonic() - t0 < 15
        hang = manager.states["hang"]
        assert hang.status == "failed"
        assert "did not finish its handshake within 8 s" in (hang.reason or "")
        assert "hanging before the handshake" in (hang.reason or "")
        assert manager.states["ok"].status == "ready", manager.states["ok"].reason
        answer = await manager.call("hang", "echo", {"text": "x"})
        assert answer.is_error and "'hang' is not available: it is failed" in answer.text
    finally:
        await manager.stop_all()


async def test_a_server_that_cannot_run_is_failed_with_the_reason() -> None:
    missing = ServerConfig("gone", Origin.SETTINGS, "test", StdioServer("no-such-mcp-cmd-x"))
    manager = await started(missing, startup_timeout=10)
    state = manager.states["gone"]
    assert state.status == "failed"
    assert "cannot run no-such-mcp-cmd-x" in (state.reason or "")
    await manager.stop_all()


async def test_a_slow_call_is_cancelled_at_the_tool_timeout() -> None:
    manager = await started(stdio("t"), tool_timeout=1)
    try:
        answer = await manager.call("t", "sleep", {"seconds": 30})
        assert answer.is_error and "did not answer within 1 s" in answer.text
        # The server is still usable afterwards.
        assert (await manager.call("t", "echo", {"text": "after"})).text == "after"
    finally:
        await manager.stop_all()


async def test_a_crash_mid_call_is_an_error_the_server_restarts_then_is_failed() -> None:
    manager = await started(stdio("t"))
    try:
        for attempt in range(MAX_RESTARTS):
            answer = await manager.call("t", "crash", {})
            assert answer.is_error and "failed during the call to crash" in answer.text
            assert "being started again" in answer.text
            await manager.wait_started()
            assert manager.states["t"].status == "ready", attempt
            assert (await manager.call("t", "echo", {"text": "back"})).text == "back"
        answer = await manager.call("t", "crash", {})
        assert manager.states["t"].status == "failed"
        assert "crashed 4 times" in (manager.states["t"].reason or "")
        assert "crashing on purpose" in (manager.states["t"].reason or "")
        await manager.restart("t")
        await manager.wait_started()
        assert status(manager, "t") == "ready"
    finally:
        await manager.stop_all()


def status(manager: McpManager, name: str) -> str:
    return manager.states[name].status


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_streamable_http_server_lists_and_answers() -> None:
    port = free_port()
    process = subprocess.Popen([sys.executable, SERVER, "--http", str(port)])
    try:
        for _ in range(100):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.1)
        config = ServerConfig(
            "web", Origin.SETTINGS, "test", HttpServer(f"http://127.0.0.1:{port}/mcp")
        )
        manager = await started(config)
        try:
            assert manager.states["web"].status == "ready", manager.states["web"].reason
            assert (await manager.call("web", "echo", {"text": "over http"})).text == "over http"
        finally:
            await manager.stop_all()
    finally:
        process.terminate()
        process.wait(10)


HOLDER = """
import asyncio, sys
sys.path.insert(0, {root!r})
from seri_lsp.mcp.config import Origin, ServerConfig, StdioServer
from seri_lsp.mcp.manager import McpManager
async def main():
    spec = StdioServer(sys.executable, ({server!r},))
    manager = McpManager([ServerConfig("t", Origin.SETTINGS, "test", spec)])
    manager.start_all()
    await manager.wait_started()
    print(manager.states["t"].status, flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""


def test_the_server_process_dies_when_its_parent_is_killed(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    root = str(Path(__file__).resolve().parent.parent)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(root=root, server=SERVER)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        children = subprocess.run(
            ["pgrep", "-P", str(holder.pid)], capture_output=True, text=True
        ).stdout.split()
        assert children, "no MCP child process found"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        deadline = time.monotonic() + 10
        living = [int(pid) for pid in children]
        while living and time.monotonic() < deadline:
            living = [pid for pid in living if alive(pid)]
            time.sleep(0.1)
        assert living == []
    finally:
        if holder.poll() is None:
            holder.kill()


async def test_a_server_stopped_while_it_hangs_at_start_is_ended_and_the_stop_returns() -> None:
    """The language server stopping (its editor gone) while a server still hangs before
    its handshake: the start ends at once and the SDK stops the process in its steps
    (stdin closed, TERM, KILL). A stop once cancelled those steps half-way, and then
    waited for the server's output forever: the language server never exited."""
    manager = McpManager([stdio("hang", "--hang-at-start")], startup_timeout=4)
    manager.start_all()
    state = manager.states["hang"]
    deadline = time.monotonic() + 30
    while not (said := re.search(r"seri-test pid (\d+)", state.stderr_tail())):
        assert time.monotonic() < deadline, "the server did not start"
        await asyncio.sleep(0.05)
    t0 = time.monotonic()
    await asyncio.wait_for(manager.stop_all(), 15)
    assert time.monotonic() - t0 < 8  # (not the 4 s start-up timeout, then the SDK's steps)
    assert state.status == "stopped" and state.reason is None
    assert not alive(int(said[1]))
