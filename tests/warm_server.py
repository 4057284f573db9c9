"""Language servers for the tests, forked from a process that has already imported them.

Starting `python -m seri_lsp` costs about 0.4 CPU-seconds, most of it importing
lsprotocol's types, and the suite starts several hundred servers: on 2 cores that was
half of what the whole suite cost. So each test worker starts one *warm* process
(`python -m tests.warm_server SOCKET`), which imports the server once and then, for each
server a test asks for, forks: the fork is the real server (`seri_lsp.cli.main` with the
test's arguments, environment and working folder, on the pipes the test made), started
in a few milliseconds. The warm process imports every module of seri_lsp (but
`__main__`), the ACP SDK (`seri-lsp acp`'s pydantic schema, most of an ACP agent's 0.8
CPU-seconds of start), and the libraries a server imports once a session needs them
(`LIBRARIES`: httpx and its kin, about 0.2 CPU-seconds, in four servers of five; the MCP
SDK, 0.5, in one of five), and builds the LSP converter with every type's hooks (about
0.06). None of seri's modules reads the environment when it is imported (the waits of
`seri_lsp.waits` are read when they start; tests/test_warm_server.py checks it), so
what a server reads from its environment (a crash point, a wait, the provider, the
trajectory setting) it reads as it would.

The test holds a `ForkedServer`, which acts as the `asyncio.subprocess.Process` pygls
would have made: its pid is the server's, `kill()` and `terminate()` signal it, `wait()`
returns its exit status (a negative signal number when a signal ended it). Between the
warm process and each server sits a small reaper (a second fork) that waits for the
server and writes its exit status back to the test.

`SERI_TEST_FORK=0` starts every server as a process of its own instead.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_MAX_REQUEST = 1 << 20
# What the warm process imports before it forks: seri_lsp's modules (`seri_modules()`),
# the ACP SDK's, and these libraries, none of seri's own, that servers import once a
# session needs them: the provider's HTTP client (httpx, truststore, certifi), the file
# filters (pathspec, regex), the session lock (filelock), the command parser (bashlex) and
# the MCP client.
LIBRARIES = (
    "httpx",
    "truststore",
    "certifi",
    "pathspec",
    "regex",
    "filelock",
    "bashlex",
    "zoneinfo",
    "mcp",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
)


def seri_modules() -> list[str]:
    """Every module of seri_lsp but `__main__` (which would run the server)."""
    import pkgutil

    import seri_lsp

    walked = pkgutil.walk_packages(seri_lsp.__path__, "seri_lsp.")
    return [module.name for module in walked if module.name != "seri_lsp.__main__"]


def preload() -> None:
    """Import what the warm process imports before it forks."""
    import importlib

    for name in (*seri_modules(), "acp.stdio", *LIBRARIES):
        importlib.import_module(name)


# --- the warm process ------------------------------------------------------------------


def _serve(path: str) -> None:
    """Accept requests for servers on the Unix socket `path`, for as long as the test
    worker that started this process lives (its end of stdin closing ends it)."""
    import gc

    preload()
    _warm_converter()
    gc.freeze()
    # Reapers are never waited for here: they go as soon as they end.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    stdin = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([listener, stdin], [], [])
        if stdin in ready and not os.read(stdin, 1024):
            return  # the test worker has gone
        if listener in ready:
            connection, _ = listener.accept()
            fds: list[int] = []
            try:
                message, fds, _, _ = socket.recv_fds(connection, _MAX_REQUEST, 3)
                request = json.loads(message)
                if os.fork() == 0:
                    listener.close()
                    _reap(connection, fds, request)
            finally:
                connection.close()
                for fd in fds:
                    os.close(fd)


def _warm_converter() -> None:
    """Build the servers' LSP converter and write its hooks for every LSP type now, once,
    rather than in each server as its messages come (about 0.1 CPU-seconds a server)."""
    import attrs
    import cattrs
    from lsprotocol import types

    from seri_lsp.lsp.server import lsp_converter

    converter = lsp_converter()
    for name in dir(types):
        kind = getattr(types, name)
        if isinstance(kind, type) and attrs.has(kind):
            # (two registration types have no structure hook: nothing sends them)
            with contextlib.suppress(cattrs.errors.StructureHandlerNotFoundError):
                converter.get_structure_hook(kind)
            converter.get_unstructure_hook(kind)


def _reap(connection: socket.socket, fds: list[int], request: dict[str, Any]) -> None:
    """In the reaper: fork the server, say its pid, wait for it, say how it ended."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        pid = os.fork()
        if pid == 0:
            connection.close()
            _run_server(fds, request)
        for fd in fds:
            os.close(fd)
        connection.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        code = 0
    finally:
        os._exit(code)


def _run_server(fds: list[int], request: dict[str, Any]) -> None:
    """In the server: its pipes as stdin, stdout and stderr, its environment and folder,
    then what `python -m seri_lsp ARGS` runs. Never returns."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = ["seri_lsp", *request["args"]]
        from seri_lsp.cli import main

        try:
            code = main(request["args"])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # a bug: shown as the process would show it
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# --- the test's side -------------------------------------------------------------------


class ForkedServer:
    """A server forked by the warm process, as an `asyncio.subprocess.Process`."""

    def __init__(
        self,
        pid: int,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader | None,
        status: asyncio.StreamReader,
    ) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self.status_writer: asyncio.StreamWriter | None = None
        self._ended = asyncio.ensure_future(self._read_status(status))

    async def _read_status(self, status: asyncio.StreamReader) -> int:
        line = await status.readline()
        self.returncode = int(line) if line.strip() else -signal.SIGKILL
        if self.status_writer is not None:
            self.status_writer.close()
        return self.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._ended)

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkedProcess:
    """A server forked by the warm process, as a `subprocess.Popen` with pipes would be:
    its pid is the server's; `poll`, `wait`, `send_signal`, `terminate` and `kill` act
    on it, and `returncode` is its exit status (a negative signal number when a signal
    ended it)."""

    def __init__(self, args: list[str], status: socket.socket, fds: tuple[int, int, int]) -> None:
        self.args = args
        self.stdin = os.fdopen(fds[0], "wb")
        self.stdout = os.fdopen(fds[1], "rb")
        self.stderr = os.fdopen(fds[2], "rb")
        self.returncode: int | None = None
        self._status = status
        self._said = b""
        # (no pid, the reaper gone: an error here, as ForkedServer's, never a pid of 0,
        # which `os.kill` would read as this whole process group)
        self.pid = int(self._line(None) or b"")

    def _line(self, timeout: float | None) -> bytes | None:
        """The reaper's next line; None when none came within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._said:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._status], [], [], left)[0]:
                return None
            chunk = self._status.recv(256)
            if not chunk:  # the reaper is gone (killed with the test's process group)
                self._said += b"\n"
            self._said += chunk
        line, self._said = self._said.split(b"\n", 1)
        return line

    def poll(self) -> int | None:
        if self.returncode is None and (line := self._line(0)) is not None:
            self._ended(line)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            line = self._line(timeout)
            if line is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._ended(line)
        assert self.returncode is not None
        return self.returncode

    def _ended(self, line: bytes) -> None:
        self.returncode = int(line) if line.strip() else -signal.SIGKILL
        self._status.close()

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class WarmServers:
    """This worker's warm process, started at the first server a test asks for."""

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="seri-warm-")
        self.socket_path = str(Path(self._folder) / "warm.sock")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.warm_server", self.socket_path],
            stdin=subprocess.PIPE,
            cwd=Path(__file__).resolve().parent.parent,
        )
        atexit.register(self.close)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.socket_path):
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the warm server process did not start")
            time.sleep(0.01)

    async def spawn(
        self,
        args: list[str],
        env: dict[str, str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        stderr: bool = True,
    ) -> ForkedServer:
        """A server run as `python -m seri_lsp ARGS` would be, with `env`, in `cwd` (this
        process's folder by default); its stderr is a pipe, or this process's own (as a
        subprocess's `stderr=None`) when `stderr` is false."""
        loop = asyncio.get_running_loop()
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe() if stderr else (-1, os.dup(2))
        folder = os.fspath(cwd) if cwd is not None else os.getcwd()
        connection = self._ask(args, env, folder, (stdin_r, stdout_w, stderr_w))
        connection.setblocking(False)
        # The writer is kept: dropping it would close the connection.
        status, status_writer = await asyncio.open_connection(sock=connection)
        pid = int(await status.readline())

        async def reader(fd: int) -> asyncio.StreamReader:
            stream = asyncio.StreamReader(limit=2**16)
            protocol = asyncio.StreamReaderProtocol(stream)
            await loop.connect_read_pipe(lambda: protocol, os.fdopen(fd, "rb", 0))
            return stream

        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(stdin_w, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        errors = await reader(stderr_r) if stderr else None
        server = ForkedServer(pid, writer, await reader(stdout_r), errors, status)
        server.status_writer = status_writer
        return server

    def _ask(
        self, args: list[str], env: dict[str, str], cwd: str, fds: tuple[int, int, int]
    ) -> socket.socket:
        """Ask the warm process for a server on `fds` (its stdin, stdout and stderr,
        closed here once sent); its pid, then its exit status, come on the connection."""
        request = json.dumps({"args": args, "env": env, "cwd": cwd}).encode()
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(self.socket_path)
            socket.send_fds(connection, [request], list(fds))
        finally:
            for fd in fds:
                os.close(fd)
        return connection

    def popen(
        self, args: list[str], env: dict[str, str], *, cwd: str | os.PathLike[str]
    ) -> ForkedProcess:
        """`python -m seri_lsp ARGS` started as `subprocess.Popen` would start it with
        stdin, stdout and stderr as pipes."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        connection = self._ask(args, env, os.fspath(cwd), (stdin_r, stdout_w, stderr_w))
        return ForkedProcess(["seri_lsp", *args], connection, (stdin_w, stdout_r, stderr_r))

    def run(
        self, args: list[str], env: dict[str, str], *, cwd: str | os.PathLike[str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """`python -m seri_lsp ARGS` run to its end, as `subprocess.run` would run it with
        no input and its output captured as text (`TimeoutExpired`, the server killed,
        when it runs longer than `timeout` seconds)."""
        process = self.popen(args, env, cwd=cwd)
        process.stdin.close()
        deadline = time.monotonic() + timeout
        output = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        reading = list(output)
        try:
            while reading:
                left = max(deadline - time.monotonic(), 0)
                ready = select.select(reading, [], [], left)[0]
                if not ready:
                    process.kill()
                    process.wait(5)  # (its reaper says so at once; the connection closes)
                    raise subprocess.TimeoutExpired(process.args, timeout)
                for fd in ready:
                    chunk = os.read(fd, 1 << 16)
                    if chunk:
                        output[fd] += chunk
                    else:
                        reading.remove(fd)
            code = process.wait()
        finally:
            process.stdout.close()
            process.stderr.close()

        def text(data: bytearray) -> str:  # as `text=True` reads it: universal newlines
            return data.decode().replace("\r\n", "\n").replace("\r", "\n")

        stdout, stderr = output.values()
        return subprocess.CompletedProcess(process.args, code, text(stdout), text(stderr))

    def command(self) -> list[str]:
        """A command line that runs as `python -m seri_lsp` and forks the server from
        this warm process (tests/warm_client.py), for an editor under test to start."""
        client = Path(__file__).with_name("warm_client.py")
        return [sys.executable, "-I", "-S", str(client), self.socket_path]

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()  # type: ignore[union-attr]
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
        for name in os.listdir(self._folder):
            os.unlink(os.path.join(self._folder, name))
        os.rmdir(self._folder)


_warm: WarmServers | None = None


def warm_servers() -> WarmServers | None:
    """This worker's warm process (started now if need be), or None with
    `SERI_TEST_FORK=0`."""
    global _warm
    if os.environ.get("SERI_TEST_FORK", "1") == "0":
        return None
    if _warm is None:
        _warm = WarmServers()
    return _warm


def server_command() -> list[str]:
    """`python -m seri_lsp` for an editor under test to start: forked from this worker's
    warm process, or started cold with `SERI_TEST_FORK=0`."""
    warm = warm_servers()
    return warm.command() if warm is not None else [sys.executable, "-m", "seri_lsp"]


if __name__ == "__main__":
    _serve(sys.argv[1])
