"""Running a command as a process group of its own: the one place that starts, reads and
ends the processes of the user's checks and of the `run` tool.

A command runs off the event loop (asyncio subprocess) with stdin empty, stdout and
stderr in one pipe (interleaved as they came), in a new session (its own process group),
so that on a time limit or a cancel the whole group is ended: SIGTERM, a short grace,
SIGKILL; background children included. On Windows, where there are no process groups to
signal, the process tree is ended with `taskkill /T /F`. What the command printed until
it ended is kept, bounded (`BoundedOutput`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# After SIGTERM, how long a process group has before SIGKILL.
KILL_GRACE = 2.0
# After the command's own process ended, how long to wait for the rest of its output
# (a background child it left may hold the pipe open forever).
DRAIN_SECONDS = 1.0
_POLL = 0.05
_READ_SIZE = 65536

OutputListener = Callable[[bytes], None]


def is_windows() -> bool:
    """Whether this host is Windows (a function, so tests can pretend it is)."""
    return sys.platform == "win32"


class BoundedOutput:
    """Keeps the first `head` and the last `tail` bytes of a stream, and counts it all
    (bytes and lines)."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.lines = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.lines += chunk.count(b"\n")
        room = self._head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self._tail_limit:
                del self.tail[: len(self.tail) - self._tail_limit]

    @property
    def whole(self) -> bool:
        """Whether nothing was dropped between the head and the tail."""
        return self.total <= len(self.head) + len(self.tail)

    def text(self, marker: Callable[[int, int], str] | None = None) -> str:
        """The output kept; `marker(bytes, lines)` makes the line that stands for what was
        dropped (default: `[... N bytes of output omitted ...]`)."""
        if self.whole:
            return (self.head + self.tail).decode("utf-8", "replace")
        omitted = self.total - len(self.head) - len(self.tail)
        lines = max(0, self.lines - self.head.count(b"\n") - self.tail.count(b"\n"))
        line = marker(omitted, lines) if marker else f"[... {omitted} bytes of output omitted ...]"
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        return f"{head}\n{line}\n{tail}"


@dataclass(frozen=True)
class Ended:
    """How a process ended: its exit code (None when it was killed for running over its
    time limit), and how long it ran."""

    exit_code: int | None
    duration: float
    timed_out: bool
    stopped: bool = False  # by `stop` (the user stopped this command)


async def start(
    command: str | Sequence[str], cwd: Path, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start `command` (a string: through `shell_argv`; a list: run directly) in a
    process group of its own, stdin empty, stdout and stderr in one pipe. OSError when
    it cannot be started."""
    argv = shell_argv(command) if isinstance(command, str) else list(command)
    kwargs: dict[str, Any] = {
        "cwd": cwd,
        "env": env,
        "stdin": asyncio.subprocess.DEVNULL,
        "stdout": asyncio.subprocess.PIPE,
        "stderr": asyncio.subprocess.STDOUT,
    }
    if is_windows():
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    else:
        kwargs["start_new_session"] = True  # its own process group, ended as a whole
    creating = asyncio.ensure_future(asyncio.create_subprocess_exec(*argv, **kwargs))
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        # Cancelled while it was being started: it may be running already; end it.
        with contextlib.suppress(BaseException):
            started = await creating
            waiter = asyncio.ensure_future(started.wait())
            try:
                await kill_group(started, waiter)
            finally:
                waiter.cancel()
        raise


def shell_argv(command: str, shell: str = "cmd") -> list[str]:
    """The argument list that runs one command line by the user's shell: `/bin/sh -c`
    on POSIX; on Windows `cmd /c`, or PowerShell when `shell` (`run.shell`) is
    `powershell`."""
    if not is_windows():
        return ["/bin/sh", "-c", command]
    if shell == "powershell":
        return ["powershell.exe", "-NoProfile", "-NonInteractive", "-Command", command]
    return [os.environ.get("COMSPEC", "cmd.exe"), "/d", "/s", "/c", command]


def kill_tree_argv(pid: int) -> list[str]:
    """Windows: the command that ends a process and every process it started."""
    return ["taskkill", "/T", "/F", "/PID", str(pid)]


async def stop_group(process: asyncio.subprocess.Process, *, force: bool) -> None:
    """SIGTERM the process group (SIGKILL with `force`); on Windows, end the tree (with
    `taskkill`, off the event loop)."""
    if is_windows():
        if process.returncode is None or force:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                await asyncio.to_thread(
                    subprocess.run,
                    kill_tree_argv(process.pid),
                    capture_output=True,
                    timeout=10,
                    check=False,
                )
        return
    killpg = getattr(os, "killpg", None)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if killpg is None:  # (a platform without process groups: the process itself)
            process.kill() if force else process.terminate()
        else:
            killpg(process.pid, signal.SIGKILL if force else signal.SIGTERM)


async def kill_group(process: asyncio.subprocess.Process, waiter: asyncio.Future[Any]) -> None:
    """SIGTERM the process group, then SIGKILL what is left after a grace."""
    await stop_group(process, force=False)
    deadline = time.monotonic() + KILL_GRACE
    while process.returncode is None and time.monotonic() < deadline:
        await asyncio.wait({waiter}, timeout=_POLL)
    await stop_group(process, force=True)
    deadline = time.monotonic() + KILL_GRACE
    while process.returncode is None and time.monotonic() < deadline:
        await asyncio.wait({waiter}, timeout=_POLL)


async def run(
    process: asyncio.subprocess.Process,
    timeout: float,
    listeners: Sequence[OutputListener],
    stop: asyncio.Event | None = None,
) -> Ended:
    """Read a started process's output into `listeners` until it ends, its time runs
    out, or `stop` is set (then the group is ended); a cancel ends the group too and is
    raised. Background children left when it ended are killed."""
    started = time.monotonic()
    assert process.stdout is not None
    reader = asyncio.ensure_future(_pump(process.stdout, listeners))
    waiter = asyncio.ensure_future(process.wait())
    stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
    timed_out = stopped = False
    try:
        deadline = started + timeout
        # Poll the return code too: before Python 3.12, wait() also waits for every pipe
        # to close, which a background child may never do.
        while process.returncode is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            if stop is not None and stop.is_set():
                stopped = True
                break
            wanted: set[asyncio.Future[Any]] = {waiter}
            if stopper is not None:
                wanted.add(stopper)
            await asyncio.wait(wanted, timeout=min(remaining, _POLL * 20))
        if process.returncode is None:
            await kill_group(process, waiter)
        else:
            await stop_group(process, force=True)  # what it left running in the background
        await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
    except BaseException:
        # Cancelled (seri.cancel): the command and everything it started go too.
        with contextlib.suppress(BaseException):
            await asyncio.shield(kill_group(process, waiter))
        raise
    finally:
        reader.cancel()
        waiter.cancel()
        if stopper is not None:
            stopper.cancel()
    exit_code = None if timed_out or stopped else process.returncode
    return Ended(exit_code, time.monotonic() - started, timed_out, stopped)


async def _pump(stream: asyncio.StreamReader, listeners: Sequence[OutputListener]) -> None:
    while True:
        chunk = await stream.read(_READ_SIZE)
        if not chunk:
            return
        for listener in listeners:
            listener(chunk)
