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
from tests.warm_server import warm_servers

# Imports what the warm process imports with `os.environ` replaced by a mapping that
# records the names read, and prints those of seri's own variables.
RECORD_READS = """
import os, sys
sys.path.insert(0, {root!r})
read = set()

class Recording(type(os.environ)):
    def __getitem__(self, key):
        read.add(key)
        return super().__getitem__(key)

os.environ = Recording(os.environ._data, os.environ.encodekey, os.environ.decodekey,
                       os.environ.encodevalue, os.environ.decodevalue)
from tests.warm_server import preload
preload()
print(sorted(name for name in read if name.startswith("SERI_")))
"""


def test_nothing_the_warm_process_imports_reads_seri_s_environment() -> None:
    """A module that read a variable of seri's when imported would keep, in every
    server forked from the warm process, the warm process's value."""
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", RECORD_READS.format(root=root)],
        env={**os.environ, "SERI_TEST_WAITS": "MODELS_SECONDS=1", "SERI_CRASH_AT": "x"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]", done.stdout


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
