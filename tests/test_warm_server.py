"""The tests' language servers, forked from a warm process (tests/warm_server.py), behave
as processes of their own would: their environment and arguments are the test's, a
signal reaches them, their exit status comes back, and nothing the server reads from its
environment was read before the fork."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import command, start_server, stop_server
from tests.warm_server import LIBRARIES, PRELOADED, warm_servers

# Modules that read the environment when imported (`seri_lsp.waits.wait_seconds` at
# module level): the warm process must not import them, or every fork would keep the
# warm process's values.
READ_AT_IMPORT = ("seri_lsp.agent.provider", "seri_lsp.agent.search", "seri_lsp.agent.rewind")


def test_the_warm_process_imports_nothing_that_reads_the_environment_at_import() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, {', '.join((*PRELOADED, *LIBRARIES))}; "
            f"print([m for m in {READ_AT_IMPORT!r} if m in sys.modules])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"


async def test_a_forked_server_is_the_test_s_own_process(tmp_path: Path) -> None:
    if warm_servers() is None:
        pytest.skip("SERI_TEST_FORK=0: servers are processes of their own")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    client = await start_server(tmp_path / "profile", workspace, env={"SERI_MODEL": "its/own"})
    try:
        info = await command(client, "seri.info", {})
        assert info["profileRoot"] == str((tmp_path / "profile").resolve())
        assert info["provider"]["model"] == "its/own"
        server = client._server
        assert server.pid != os.getpid() and server.returncode is None
        server.send_signal(signal.SIGKILL)
        assert await server.wait() == -signal.SIGKILL
        with pytest.raises(ProcessLookupError):
            server.kill()
    finally:
        await stop_server(client)


async def test_a_forked_server_s_exit_status_and_output_are_its_own(tmp_path: Path) -> None:
    if warm_servers() is None:
        pytest.skip("SERI_TEST_FORK=0: servers are processes of their own")
    # A bad flag: the server says so on stderr and exits 2 before it opens anything.
    client = await start_server(None, tmp_path, args=("--max-turns", "0"), initialize=False)
    try:
        assert await client._server.wait() == 2
        said = (await client._server.stderr.read()).decode()
        assert "--max-turns" in said
    finally:
        await stop_server(client)
