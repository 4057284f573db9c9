"""The `run` tool: one shell command line, run in the workspace for the model.

The cwd is a folder of the workspace (default its root; one outside is refused and
nothing runs), every command line passes the session's `CommandGate`, and the command
runs as a process group of its own (`process`): stdin empty, a non-interactive
environment (`NON_INTERACTIVE`), ended as a whole on its time limit, a cancel, or the
user's stop. The model gets how it ended and the output bounded to its head and tail;
the trajectory gets the whole output (elided there with its size when huge) in a
`command` event.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seri_lsp.agent import process
from seri_lsp.agent.command_gate import CommandGate
from seri_lsp.agent.disk import Stop, ToolThreads
from seri_lsp.agent.snapshots import Snapshot, Snapshots, describe, record_command
from seri_lsp.agent.tools import (
    RUN_DEFAULT_TIMEOUT as DEFAULT_TIMEOUT,
)
from seri_lsp.agent.tools import (
    RUN_MAX_TIMEOUT as MAX_TIMEOUT,
)
from seri_lsp.agent.tools import (
    Denied,
    ToolError,
    ToolOutcome,
)
from seri_lsp.agent.workspace import FileChanges, PathDenied, Workspace
from seri_lsp.errors import InvalidArgument
from seri_lsp.events import Event, ToolOutput

# What the model is given of the output: its first and last bytes, half each, about
# 30,000 in all; less in a small context window (an eighth of it, at 4 characters a
# token, but at least 4,000), so that one command's output never fills the half of the
# window that compaction leaves free (`seq 1 3000` took 43% of a 16k window).
MODEL_OUTPUT = 30_000
MIN_MODEL_OUTPUT = 4_000


def model_output_bound(window_tokens: int) -> int:
    """How much of a command's output the model is given in a window of that size."""
    return max(MIN_MODEL_OUTPUT, min(MODEL_OUTPUT, window_tokens * 4 // 8))


# What the trajectory keeps whole; past it, only the size (as a recording elides).
RECORD_LIMIT = 4 * 1024 * 1024

NON_INTERACTIVE = {
    "CI": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "NO_COLOR": "1",
    "TERM": "dumb",
}


def command_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment with the non-interactive settings over it."""
    env = dict(os.environ if base is None else base)
    env.update(NON_INTERACTIVE)
    return env


def omitted_line(size: int, lines: int) -> str:
    """`[... 287,412 lines (1.9 MB) omitted ...]`"""
    return f"[... {lines:,} lines ({_size(size)}) omitted ...]"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


@dataclass(frozen=True)
class CommandArgs:
    """The checked arguments of one `run` call."""

    command: str
    cwd: str  # as given (or '.')
    timeout: float
    clamped: bool


def parse_args(args: dict[str, Any]) -> CommandArgs:
    """Check the model's arguments; ToolError on a bad one."""
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("the argument 'command' must be a non-empty string.")
    cwd = args.get("cwd")
    if cwd is None or cwd == "":
        cwd = "."
    if not isinstance(cwd, str):
        raise ToolError("the argument 'cwd' must be a string.")
    timeout = args.get("timeout", DEFAULT_TIMEOUT)
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ToolError("the argument 'timeout' must be a positive number of seconds.")
    clamped = timeout > MAX_TIMEOUT
    return CommandArgs(command, cwd, float(min(timeout, MAX_TIMEOUT)), clamped)


def _resolve_folder(workspace: Workspace, raw: str, *, stop: Stop) -> tuple[Path, str]:
    """On a tool thread: the real folder `raw` names and how to show it."""
    target = workspace.resolve(raw)
    if not target.real.is_dir():
        raise ToolError(f"the cwd {target.display!r} is not a folder of the workspace.")
    return target.real, target.display


# The streamed output: at most one `seri/toolOutput` per call this often (seconds).
STREAM_INTERVAL = 0.1
# The most characters one `seri/toolOutput` carries: of a command that prints faster,
# the newest, after a line saying how much was left out (the editor is not flooded;
# the model's and the record's output are bounded apart).
STREAM_BATCH_CHARS = 64_000


def skipped_line(chars: int) -> str:
    return f"[... {chars:,} characters not shown live ...]\n"


class OutputStream:
    """Batches a running command's output into `ToolOutput` events, at most one each
    `STREAM_INTERVAL` seconds and `STREAM_BATCH_CHARS` characters; `close` sends what
    is left."""

    def __init__(self, emit: Callable[[Event], None], session_id: str, call_id: str) -> None:
        self._emit = emit
        self._session_id = session_id
        self._call_id = call_id
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending: list[str] = []
        self._size = 0  # characters pending
        self._skipped = 0  # characters left out of the batch being gathered
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def add(self, chunk: bytes) -> None:
        text = self._decoder.decode(chunk)
        if text:
            self._pending.append(text)
            self._size += len(text)
            if self._size > 2 * STREAM_BATCH_CHARS:  # (memory stays bounded too)
                self._trim()
        if self._timer is None and self._pending:
            delay = max(0.0, self._last + STREAM_INTERVAL - time.monotonic())
            self._timer = asyncio.get_running_loop().call_later(delay, self._flush)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._pending.append(tail)
        self._flush()

    def _trim(self) -> None:
        """Keep the newest `STREAM_BATCH_CHARS` characters pending."""
        text = "".join(self._pending)
        self._skipped += len(text) - STREAM_BATCH_CHARS
        self._pending = [text[-STREAM_BATCH_CHARS:]]
        self._size = STREAM_BATCH_CHARS

    def _flush(self) -> None:
        self._timer = None
        if not self._pending:
            return
        if self._size > STREAM_BATCH_CHARS:
            self._trim()
        text = "".join(self._pending)
        if self._skipped:
            text = skipped_line(self._skipped) + text
        self._pending.clear()
        self._size = self._skipped = 0
        self._last = time.monotonic()
        self._emit(ToolOutput(self._session_id, self._call_id, text))


class RunningCommands:
    """The `run` calls running now, by session and tool call id, for `seri.tool.stop`."""

    def __init__(self) -> None:
        self._stops: dict[tuple[str, str], asyncio.Event] = {}

    @contextmanager
    def running(self, session_id: str, call_id: str) -> Iterator[asyncio.Event]:
        stop = asyncio.Event()
        self._stops[(session_id, call_id)] = stop
        try:
            yield stop
        finally:
            self._stops.pop((session_id, call_id), None)

    def stop(self, session_id: str, call_id: str) -> bool:
        """Stop one running command (the task goes on); False when it was stopped
        already. InvalidArgument when no command runs under these ids."""
        stop = self._stops.get((session_id, call_id))
        if stop is None:
            raise InvalidArgument(
                "toolCallId",
                f"No command is running as tool call {call_id!r} of session {session_id!r}.",
            )
        if stop.is_set():
            return False
        stop.set()
        return True


class CommandRunner:
    """Runs the `run` tool's calls for one session's task tree."""

    def __init__(
        self,
        workspace: Workspace,
        gate: CommandGate,
        threads: ToolThreads,
        *,
        session_id: str,
        emit: Callable[[Event], None],
        running: RunningCommands,
        env: dict[str, str] | None = None,
        shell: str = "cmd",
        snapshots: Snapshots | None = None,
        window: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self.snapshots = snapshots  # what each command changed, for the result and rewind
        self.window = window  # the session's context window (tokens), for the bound
        self.workspace = workspace
        self.gate = gate
        self.threads = threads
        self.session_id = session_id  # where the calls are (a subagent's own session)
        self.emit = emit
        self.running = running
        self.env = env
        self.shell = shell  # run.shell: the Windows shell (POSIX: /bin/sh)

    async def run(self, args: dict[str, Any], call_id: str, changes: FileChanges) -> ToolOutcome:
        """Run one call; `changes` (the task's checkpoint) gets what the command changed."""
        parsed = parse_args(args)
        record: dict[str, Any] = {
            "command": parsed.command,
            "cwd": parsed.cwd,
            "timeout": parsed.timeout,
        }
        try:
            folder, display = await self.threads.run(_resolve_folder, self.workspace, parsed.cwd)
        except PathDenied as exc:
            reason = f"the cwd is refused: {exc}"
            return _not_run(record, "refused", reason)
        record["cwd"] = display
        try:
            await self.gate.check(parsed.command, display)
        except Denied as exc:
            outcome = _not_run(record, "denied", str(exc))
            return ToolOutcome(
                outcome.content, is_error=True, denial=str(exc), command=outcome.command
            )
        return await self._execute(parsed, folder, record, call_id, changes)

    async def _execute(
        self,
        parsed: CommandArgs,
        folder: Path,
        record: dict[str, Any],
        call_id: str,
        changes: FileChanges,
    ) -> ToolOutcome:
        bound = model_output_bound(await self.window()) if self.window else MODEL_OUTPUT
        snapshot = None
        if self.snapshots is not None:
            root = self.workspace.real_root_of(folder) or folder
            snapshot = await self.snapshots.before(root)
        try:
            argv = process.shell_argv(parsed.command, self.shell)
            started = await process.start(argv, folder, command_env(self.env))
        except OSError as exc:
            raise ToolError(f"the command could not be started: {exc.strerror or exc}") from exc
        model = process.BoundedOutput(bound // 2, bound - bound // 2)
        whole = process.BoundedOutput(RECORD_LIMIT, 0)
        stream = OutputStream(self.emit, self.session_id, call_id)
        try:
            with self.running.running(self.session_id, call_id) as stop:
                listeners = [model.add, whole.add, stream.add]
                ended = await process.run(started, parsed.timeout, listeners, stop)
        except BaseException:
            # Cancelled: what the command changed until then is still kept for rewind.
            await self._changed(snapshot, changes)
            raise
        finally:
            stream.close()
        changed, note = await self._changed(snapshot, changes)
        if ended.stopped:
            first = "stopped by the user"
            how = "stopped"
        elif ended.timed_out:
            first = f"timed out after {parsed.timeout:g} s"
            how = "timed out"
        else:
            first = f"exit code {ended.exit_code}"
            how = "exited"
        if parsed.clamped:
            first += f" (the timeout was clamped to {MAX_TIMEOUT} s)"
        output = model.text(omitted_line)
        content = f"{first}\n{output}" if output else f"{first}\n(no output)"
        if note:  # after a blank line
            content += ("\n" if content.endswith("\n") else "\n\n") + note
        record.update(
            {
                "ended": how,
                "exitCode": ended.exit_code,
                "durationMs": round(ended.duration * 1000),
                "clamped": parsed.clamped,
                "outputBytes": whole.total,
                "output": whole.text() if whole.whole else _elided(whole.total),
                # The paths the command created, changed or deleted.
                "changed": list(changed),
            }
        )
        failed = ended.timed_out or ended.exit_code != 0
        return ToolOutcome(content, is_error=failed, modified=changed, command=record)

    async def _changed(
        self, snapshot: Snapshot | None, changes: FileChanges
    ) -> tuple[tuple[str, ...], str | None]:
        """What the command changed since `snapshot` (recorded in the task's checkpoint,
        so `/rewind` restores it), and the lines the result ends with."""
        if self.snapshots is None or snapshot is None:
            return (), None
        result = await self.snapshots.after(snapshot, self.workspace)
        return await record_command(changes, result), describe(result)


def _elided(size: int) -> dict[str, Any]:
    return {"elided": True, "originalBytes": size}


def _not_run(record: dict[str, Any], how: str, reason: str) -> ToolOutcome:
    record.update({"ended": how, "reason": reason, "exitCode": None, "changed": []})
    return ToolOutcome(f"not run ({how}): {reason}", is_error=True, command=record)
